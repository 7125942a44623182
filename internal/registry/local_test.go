package registry

import (
	"errors"
	"testing"

	"cloud2mqtt/internal/capability"
)

// TestApplyLocal: a LAN status lays its values over the cloud's, keeps
// newer optimistic values and makes the device available.
func TestApplyLocal(t *testing.T) {
	r, s := newRegistry()
	k := light("A").Key()
	r.SetDevices([]capability.Device{light("A")})
	r.ApplyState(k, state(true, map[string]any{"powerSwitch": 0, "brightness": 10, "lightScene": 1}), r.Seq())
	r.SetLocation(k, Location{Eligible: true, Addr: "192.168.1.23", Local: true})
	s.take()

	sent := r.Seq()
	r.SetOptimistic(k, capability.InstanceBrightness, 60)
	r.ApplyLocal(k, map[string]any{"powerSwitch": int64(1), "brightness": int64(20), "unknownInstance": int64(3)}, sent)
	v, _ := r.Snapshot(k)
	if v.Values["powerSwitch"] != int64(1) || v.Values["brightness"] != int64(60) || v.Values["lightScene"] != int64(1) {
		t.Errorf("values %v: want the LAN's power, the command's brightness, the cloud's scene", v.Values)
	}
	if _, ok := v.Values["unknownInstance"]; ok {
		t.Error("an instance the device lacks was stored")
	}
	if v.Location.Connection() != "local" {
		t.Errorf("connection %q", v.Location.Connection())
	}
	// A later status decides the brightness; a cloud read leaves the
	// LAN's instances alone while the device is local, and its
	// online:false does not make it unavailable.
	r.ApplyLocal(k, map[string]any{"brightness": int64(61)}, r.Seq())
	r.ApplyState(k, state(false, map[string]any{"brightness": 99, "lightScene": 2}), r.Seq())
	v, _ = r.Snapshot(k)
	if v.Values["brightness"] != int64(61) || v.Values["lightScene"] != int64(2) {
		t.Errorf("values %v: want the LAN's brightness 61 and the cloud's scene 2", v.Values)
	}
	if av, _ := v.Available(); !av {
		t.Error("a local device shown unavailable after the cloud said offline")
	}
	r.MarkUnreachable(k, errors.New("cloud down"))
	if v, _ = r.Snapshot(k); !v.Reachable {
		t.Error("cloud failures made a local device unreachable")
	}
	// No longer local: the cloud decides again.
	r.SetLocation(k, Location{Eligible: true, Addr: "192.168.1.23"})
	r.MarkUnreachable(k, errors.New("cloud down"))
	if v, _ = r.Snapshot(k); v.Reachable || v.Location.Connection() != "cloud" {
		t.Errorf("reachable %v, connection %q after the LAN lost it and the cloud failed", v.Reachable, v.Location.Connection())
	}
	r.ApplyLocal(k, map[string]any{"brightness": int64(5)}, r.Seq())
	if v, _ = r.Snapshot(k); !v.Reachable || !v.Online {
		t.Error("a LAN answer did not make the device available")
	}
}

// TestApplyLocalFirstRead: a device the cloud never read (the cloud down
// at start) is shown from the LAN's status alone.
func TestApplyLocalFirstRead(t *testing.T) {
	r, s := newRegistry()
	k := light("A").Key()
	r.SetDevices([]capability.Device{light("A")})
	s.take()
	r.ApplyLocal(k, map[string]any{"powerSwitch": int64(1)}, r.Seq())
	calls := s.take()
	if len(calls) != 1 || calls[0].kind != "state" || !calls[0].online || !calls[0].reachable || calls[0].changed["powerSwitch"] != int64(1) {
		t.Errorf("sink calls %+v", calls)
	}
}
