package bridge

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/topic"
)

type fakeOp struct {
	mu    sync.Mutex
	calls int
}

func (o *fakeOp) SetOptions(json.RawMessage) (any, error) {
	o.mu.Lock()
	o.calls++
	o.mu.Unlock()
	return nil, nil
}

func (o *fakeOp) SetDeviceOptions(string, capability.Key, json.RawMessage) (any, error) {
	return o.SetOptions(nil)
}

// TestRetainedCommandsAreNotActedOn: a command or request the broker sends
// because it was left retained changes nothing, is answered nowhere, and is
// logged once per topic with how to clear it; the same message sent live is
// carried out.
func TestRetainedCommandsAreNotActedOn(t *testing.T) {
	pub, cmd, rd, op := &fakePub{}, &fakeCmd{}, &fakeReader{}, &fakeOp{}
	var logs strings.Builder
	var logMu sync.Mutex
	l := topic.New("c2m")
	b := newTestBridgeWith(t, Options{Layout: l, Discovery: discovery.Config{Layout: l, Version: "test"},
		Log: zerolog.New(zerolog.SyncWriter(lockedWriter{&logMu, &logs}))}, pub, cmd, rd)
	b.op = op
	b.Devices([]capability.Device{lamp}, nil, nil)
	pub.take()

	msgs := map[string]string{
		"c2m/" + lampID + "/set":                 `{"brightness":10}`,
		"c2m/" + lampID + "/set/powerSwitch":     `0`,
		"c2m/" + lampID + "/light/set":           `{"state":"OFF"}`,
		"c2m/" + lampID + "/get":                 ``,
		"c2m/bridge/request/options":             `{"options":{"poll_interval":"10s"}}`,
		"c2m/bridge/request/device/options":      `{"device":"` + lampID + `","options":{"disabled":true}}`,
		"c2m/bridge/request/read_all":            ``,
		"c2m/" + lampID + "/set/it's/a/bad/path": `1`,
	}
	for range 3 { // every reconnect sends them again
		for tp, p := range msgs {
			b.Handle(tp, []byte(p), true)
		}
	}
	if len(cmd.reqs) != 0 || rd.reads != 0 || op.calls != 0 {
		t.Errorf("retained messages were acted on: %d commands, %d reads, %d option changes", len(cmd.reqs), rd.reads, op.calls)
	}
	if got := pub.take(); len(got) != 0 {
		t.Errorf("retained messages were answered: %+v", got)
	}
	logMu.Lock()
	out := logs.String()
	logMu.Unlock()
	for tp := range msgs {
		want := "mosquitto_pub -r -n -t '" + strings.ReplaceAll(tp, "'", `'\''`) + "'"
		var lines []map[string]string
		for _, line := range strings.Split(out, "\n") {
			var m map[string]string
			if json.Unmarshal([]byte(line), &m) == nil && m["topic"] == tp {
				lines = append(lines, m)
			}
		}
		if len(lines) != 1 || lines[0]["level"] != "warn" || lines[0]["clear_with"] != want {
			t.Errorf("%s: want one warning with the command that clears it (%s), got %q", tp, want, lines)
		}
	}

	b.Handle("c2m/"+lampID+"/set/brightness", []byte("30"), false)
	b.Handle("c2m/bridge/request/options", []byte(`{"options":{}}`), false)
	if len(cmd.reqs) != 1 || op.calls != 1 {
		t.Errorf("live messages: %d commands, %d option changes; want one each", len(cmd.reqs), op.calls)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
