package bridge

import (
	"errors"
	"strings"
	"testing"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/registry"
)

// fakeLocal takes the commands of its instances and reports them as told.
type fakeLocal struct {
	takes map[string]bool // instance → taken over the LAN
	err   error           // the report of every command taken
	got   []string
}

func (l *fakeLocal) Command(_ capability.Key, instance string, _ any, report func(error)) bool {
	if !l.takes[instance] {
		return false
	}
	l.got = append(l.got, instance)
	report(l.err)
	return true
}

// TestLocalCommands: a command the LAN takes and confirms is published
// optimistically with no cloud request and no confirming read; one it
// declines goes to the cloud; one it fails goes to the cloud too, and an
// error is published only when the cloud fails as well; a superseded one
// reports nothing.
func TestLocalCommands(t *testing.T) {
	b, pub, cmd, rd := newTestBridge(t, false)
	l := &fakeLocal{takes: map[string]bool{"brightness": true, "powerSwitch": true}}
	b.SetLocal(l)
	b.State(lamp, true, map[string]any{"brightness": int64(10), "powerSwitch": int64(0)})
	b.reg.SetLocation(lamp.Key(), registry.Location{Eligible: true, Addr: "192.168.1.23", Local: true})
	pub.take()

	b.Handle("c2m/"+lampID+"/set", []byte(`{"brightness":40,"lightScene":7}`), false)
	if len(cmd.reqs) != 1 || cmd.reqs[0].Instance != "lightScene" {
		t.Errorf("cloud requests %+v, want only the scene", cmd.reqs)
	}
	if rd.confirms != 1 {
		t.Errorf("%d confirming reads, want one (the scene's)", rd.confirms)
	}
	st := on(pub.take(), "c2m/"+lampID+"/state")
	if len(st) == 0 || !strings.Contains(st[len(st)-1].payload, `"brightness":40`) || !strings.Contains(st[len(st)-1].payload, `"connection":"local"`) {
		t.Errorf("state %+v", st)
	}

	// Not confirmed over the LAN: the cloud takes it, no error.
	l.err = lan.ErrNoAnswer
	cmd.reqs = nil
	b.Handle("c2m/"+lampID+"/set/powerSwitch", []byte(`1`), false)
	msgs := pub.take()
	if len(cmd.reqs) != 1 || cmd.reqs[0].Instance != "powerSwitch" || len(on(msgs, "c2m/"+lampID+"/error")) != 0 {
		t.Errorf("cloud requests %+v, messages %+v", cmd.reqs, msgs)
	}
	// When the cloud fails too, the error is published.
	cmd.err = errors.New("cloud: control: unreachable")
	b.Handle("c2m/"+lampID+"/set/powerSwitch", []byte(`0`), false)
	if errs := on(pub.take(), "c2m/"+lampID+"/error"); len(errs) != 1 {
		t.Errorf("errors %+v, want one", errs)
	}
	// Superseded over the LAN: nothing, the newer one reports.
	l.err, cmd.err, cmd.reqs = capability.ErrSuperseded, nil, nil
	b.Handle("c2m/"+lampID+"/set/brightness", []byte(`41`), false)
	if msgs := pub.take(); len(msgs) != 0 || len(cmd.reqs) != 0 {
		t.Errorf("a superseded LAN command published %+v, sent %+v", msgs, cmd.reqs)
	}
}

// TestDeviceListShowsLocalAddress: bridge/devices carries a light's LAN
// address once it is found, and goes out again when it changes.
func TestDeviceListShowsLocalAddress(t *testing.T) {
	b, pub, _, _ := newTestBridge(t, false)
	b.State(lamp, true, map[string]any{"brightness": int64(10)})
	b.PublishStats(discovery.BridgeStats{})
	pub.take()
	b.reg.SetLocation(lamp.Key(), registry.Location{Eligible: true, Addr: "192.168.1.23", Local: true})
	b.PublishStats(discovery.BridgeStats{})
	list := on(pub.take(), "c2m/bridge/devices")
	if len(list) != 1 || !strings.Contains(list[0].payload, `"local":{"address":"192.168.1.23","reachable":true}`) {
		t.Errorf("device list %+v", list)
	}
}
