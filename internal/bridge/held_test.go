package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/topic"
)

// unlisted is a bridge whose registry has no device list yet, with Run
// going until the test ends.
func unlisted(t *testing.T) (*testBridge, *fakePub, *fakeCmd) {
	t.Helper()
	pub, cmd := &fakePub{}, &fakeCmd{}
	l := topic.New("c2m")
	b := newTestBridgeWith(t, Options{Layout: l, Discovery: discovery.Config{Layout: l}, Log: zerolog.Nop()}, pub, cmd, &fakeReader{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return b, pub, cmd
}

func errorsOn(t *testing.T, msgs []published, id string) []errorJSON {
	t.Helper()
	var out []errorJSON
	for _, m := range on(msgs, "c2m/"+id+"/error") {
		var e errorJSON
		if err := json.Unmarshal([]byte(m.payload), &e); err != nil {
			t.Fatalf("error payload %s: %v", m.payload, err)
		}
		out = append(out, e)
	}
	return out
}

// unknownErrors are the answers on bridge/error to commands for id, which
// no device (the mirror knows) has.
func unknownErrors(t *testing.T, msgs []published, id string) []errorJSON {
	t.Helper()
	var out []errorJSON
	for _, e := range errorsOn(t, msgs, "bridge") {
		if e.Device == id {
			out = append(out, e)
		}
	}
	return out
}

// TestCommandsHeldUntilTheDeviceList: commands the broker delivers before
// the cloud's device list is in wait for it and are applied in order; one
// for a device the list does not have is answered with 404.
func TestCommandsHeldUntilTheDeviceList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, pub, cmd := unlisted(t)
		b.Handle("c2m/"+lampID+"/set/powerSwitch", []byte("on"), false)
		b.Handle("c2m/"+lampID+"/set", []byte(`{"brightness":30}`), false)
		b.Handle("c2m/h6072_nosuchdevice/set/powerSwitch", []byte("on"), false)
		synctest.Wait()
		if len(cmd.reqs) != 0 || len(pub.take()) != 0 {
			t.Fatalf("before the list: %d requests sent, want the commands held", len(cmd.reqs))
		}
		time.Sleep(30 * time.Second)
		b.Devices([]capability.Device{lamp}, nil, nil)
		synctest.Wait()
		if len(cmd.reqs) != 2 || cmd.reqs[0].Instance != "powerSwitch" || cmd.reqs[1].Instance != "brightness" {
			t.Fatalf("after the list: requests %+v, want powerSwitch then brightness", cmd.reqs)
		}
		msgs := pub.take()
		if e := unknownErrors(t, msgs, "h6072_nosuchdevice"); len(e) != 1 || e[0].Code != 404 || !strings.Contains(e[0].Error, "unknown device") {
			t.Errorf("the command for a device not listed: %+v, want one 404 unknown device", e)
		}
		if e := errorsOn(t, msgs, lampID); len(e) != 0 {
			t.Errorf("errors for the listed lamp: %+v", e)
		}
		// Once released, commands go straight through.
		b.Handle("c2m/"+lampID+"/set/powerSwitch", []byte("off"), false)
		if len(cmd.reqs) != 3 {
			t.Errorf("a command after the release was not sent at once: %+v", cmd.reqs)
		}
	})
}

// TestHeldCommandsExpire: without a device list for HoldFor, a held
// command is answered with 503 instead of waiting for ever.
func TestHeldCommandsExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, pub, cmd := unlisted(t)
		b.Handle("c2m/"+lampID+"/set/powerSwitch", []byte("on"), false)
		time.Sleep(time.Minute)
		b.Handle("c2m/"+lampID+"/set/brightness", []byte("20"), false)
		time.Sleep(HoldFor - time.Minute + time.Second)
		synctest.Wait()
		// Before the list the lamp is no device the bridge knows: answered
		// on bridge/error.
		e := unknownErrors(t, pub.take(), lampID)
		if len(e) != 1 || e[0].Code != 503 || !strings.Contains(e[0].Error, "device list") {
			t.Fatalf("after %v: errors %+v, want the first command answered with 503", HoldFor, e)
		}
		b.Devices([]capability.Device{lamp}, nil, nil)
		synctest.Wait()
		if len(cmd.reqs) != 1 || cmd.reqs[0].Instance != "brightness" {
			t.Errorf("requests %+v, want only the command still held", cmd.reqs)
		}
	})
}

func TestUnknownDeviceAfterTheListIs404(t *testing.T) {
	b, pub, cmd, _ := newTestBridge(t, false)
	pub.take()
	b.Handle("c2m/h6072_nosuchdevice/set/powerSwitch", []byte("on"), false)
	e := unknownErrors(t, pub.take(), "h6072_nosuchdevice")
	if len(e) != 1 || e[0].Code != 404 || !strings.Contains(e[0].Error, "bridge/devices") {
		t.Errorf("errors %+v, want a 404 naming where the ids are", e)
	}
	if len(cmd.reqs) != 0 {
		t.Errorf("requests %+v", cmd.reqs)
	}
}
