package registry

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock/clocktest"
)

// TestValuesSavedApart: a new value marks only the values unsaved (the
// small file), a list change the whole; values saved after the whole win
// at a restore, older ones do not.
func TestValuesSavedApart(t *testing.T) {
	clk := clocktest.NewFrozen(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	r, _ := newRegistryOn(clk)
	a := light("A")
	r.SetDevices([]capability.Device{a})
	if !r.ListUnsaved() || !r.Unsaved() {
		t.Fatal("a first list is not unsaved")
	}
	r.ApplyState(a.Key(), state(true, map[string]any{capability.InstanceBrightness: 10}), 0)
	full := r.Save()
	if r.ListUnsaved() || r.Unsaved() || r.ValuesUnsaved() {
		t.Fatal("unsaved after Save")
	}
	// WriteSaved streams what Save returns.
	var whole bytes.Buffer
	if err := r.WriteSaved(&whole); err != nil {
		t.Fatal(err)
	}
	var streamed Saved
	if err := json.Unmarshal(whole.Bytes(), &streamed); err != nil || len(streamed.Devices) != 1 || !streamed.At.Equal(full.At) ||
		string(streamed.Devices[0].Values[capability.InstanceBrightness]) != "10" {
		t.Fatalf("WriteSaved: %s (%v)", whole.Bytes(), err)
	}
	clk.Advance(time.Second)
	r.SetOptimistic(a.Key(), capability.InstanceBrightness, 55)
	if r.ListUnsaved() || !r.ValuesUnsaved() || !r.Unsaved() {
		t.Errorf("a value: list unsaved %v, values unsaved %v; want values only", r.ListUnsaved(), r.ValuesUnsaved())
	}
	values := func() []byte {
		var buf bytes.Buffer
		if err := r.WriteValues(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	b := values()
	if r.ValuesUnsaved() || !r.Unsaved() {
		t.Errorf("after WriteValues: values unsaved %v, whole unsaved %v; want false, true", r.ValuesUnsaved(), r.Unsaved())
	}
	// A device's entry is encoded again when it changed.
	r.SetOptimistic(a.Key(), capability.InstanceBrightness, 56)
	if b2 := values(); !json.Valid(b2) || string(b2) == string(b) {
		t.Fatalf("values after a change: %s", b2)
	}
	r.SetOptimistic(a.Key(), capability.InstanceBrightness, 55)
	b = values()
	var back SavedValues
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}

	restored := full
	restored.Overlay(back)
	r2, s2 := newRegistry()
	r2.Restore(restored)
	if v, _ := r2.Value(a.Key(), capability.InstanceBrightness); !capability.Equal(v, int64(55)) {
		t.Errorf("restored brightness %v, want 55 from the later values", v)
	}
	if len(s2.take()) == 0 {
		t.Error("the restore told the sink nothing")
	}

	// Values older than the whole do not win.
	older := back
	older.At = full.At.Add(-time.Second)
	again := r.Save()
	again.Devices[0].Values = map[string]json.RawMessage{capability.InstanceBrightness: json.RawMessage("77")}
	again.Overlay(older)
	if string(again.Devices[0].Values[capability.InstanceBrightness]) != "77" {
		t.Errorf("older values replaced newer ones: %s", again.Devices[0].Values[capability.InstanceBrightness])
	}
}

// TestStatelessShownOnline: a device the cloud keeps no state for is shown
// available once, takes commands' values as its state, and a read that
// works later makes it ordinary.
func TestStatelessShownOnline(t *testing.T) {
	clk := clocktest.New()
	r, s := newRegistryOn(clk)
	g := light("G")
	r.SetDevices([]capability.Device{g})
	s.take()
	r.MarkStateless(g.Key())
	r.MarkStateless(g.Key())
	calls := s.take()
	if len(calls) != 1 || calls[0].kind != "state" || !calls[0].online || !calls[0].reachable {
		t.Fatalf("calls %+v, want one state: online and reachable", calls)
	}
	r.SetOptimistic(g.Key(), capability.InstancePower, 1)
	if calls := s.take(); len(calls) != 1 || !capability.Equal(calls[0].changed[capability.InstancePower], int64(1)) {
		t.Errorf("a command's value: %+v, want it published", calls)
	}
	clk.Advance(time.Hour)
	if st := r.Stats(); st.OldestState != 0 || st.Online != 1 {
		t.Errorf("stats %+v: a device without state has no age and counts online", st)
	}
	r.ApplyState(g.Key(), state(false, nil), r.Seq())
	if st := r.Stats(); st.Offline != 1 {
		t.Errorf("after a read said offline: %+v", st)
	}
}
