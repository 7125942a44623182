package lan_test

import (
	"errors"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/lansim"
)

type outcome struct {
	name string
	s    lan.Status
	err  error
}

func TestDispatcherCoalescesWhileASendIsInFlight(t *testing.T) {
	n := newNet(t, lan.Config{})
	n.found(t)
	q := lan.NewDispatcher(n.client)
	defer q.Close()
	inFlight := make(chan struct{}, 16)
	n.sim.OnReceive(func(id string, r lansim.Received) {
		if id == strip && r.Request.Cmd == lan.CmdBrightness {
			inFlight <- struct{}{}
		}
	})
	n.sim.SetDelay(strip, 50*time.Millisecond) // the first Send stays in flight a while
	out := make(chan outcome, 16)
	submit := func(name, instance string, v any) {
		t.Helper()
		if !q.Submit(strip, instance, v, func(s lan.Status, err error) { out <- outcome{name, s, err} }) {
			t.Fatalf("%s: not taken for the LAN", name)
		}
	}
	submit("first", capability.InstanceBrightness, int64(10))
	<-inFlight
	submit("second", capability.InstanceBrightness, int64(20))
	submit("colour", capability.InstanceColorRGB, int64(0x0000FF))
	submit("third", capability.InstanceBrightness, int64(30))
	submit("white", capability.InstanceColorTemperatureK, int64(4000)) // the newer of colour and white

	got := map[string]outcome{}
	for range 5 {
		select {
		case o := <-out:
			got[o.name] = o
		case <-time.After(10 * time.Second):
			t.Fatalf("reports so far: %v", got)
		}
	}
	for name, wantErr := range map[string]error{"first": nil, "second": capability.ErrSuperseded, "colour": capability.ErrSuperseded, "third": nil, "white": nil} {
		if !errors.Is(got[name].err, wantErr) {
			t.Errorf("%s: %v, want %v", name, got[name].err, wantErr)
		}
	}
	if s := got["third"].s; s.Brightness != 30 || s.Kelvin != 4000 {
		t.Errorf("third and white confirmed by %+v", s)
	}
	if c := n.sim.Counts(strip); c[lan.CmdBrightness] != 2 || c[lan.CmdColor] != 1 {
		t.Errorf("the strip took in %v: want brightness twice (10, then 30) and one colorwc", c)
	}
}

func TestDispatcherLeavesTheRestToTheCloud(t *testing.T) {
	n := newNet(t, lan.Config{ConfirmTimeout: 20 * time.Millisecond})
	n.found(t)
	q := lan.NewDispatcher(n.client)
	defer q.Close()
	never := func(lan.Status, error) { t.Error("report called for a command not taken") }
	if q.Submit(strip, capability.InstanceLightScene, int64(3), never) {
		t.Error("a scene was taken for the LAN")
	}
	if q.Submit(others, capability.InstancePower, int64(1), never) {
		t.Error("a command for a device not found was taken")
	}
	// A silent device: the command fails (to the cloud), the next is not taken.
	n.sim.SetOff(strip, true)
	done := make(chan error, 1)
	if !q.Submit(strip, capability.InstancePower, int64(0), func(_ lan.Status, err error) { done <- err }) {
		t.Fatal("not taken while reachable")
	}
	if err := <-done; !errors.Is(err, lan.ErrNoAnswer) {
		t.Errorf("report: %v, want ErrNoAnswer", err)
	}
	if q.Submit(strip, capability.InstancePower, int64(0), never) {
		t.Error("a command for a device marked unreachable was taken")
	}
}
