package app

import (
	"testing"

	"cloud2mqtt/internal/poller"
)

// TestStartMemoryReleasedOnceAfterTheStart: the start's memory goes back
// to the system once, at the check after every device was read once and
// the device list with the scenes went out; not before the first list,
// not while the list is still held, never again.
func TestStartMemoryReleasedOnceAfterTheStart(t *testing.T) {
	var s startMemory
	pending := true
	listPending := func() bool { return pending }
	steps := []struct {
		name   string
		listed bool
		ps     poller.Stats
		want   bool
	}{
		{"no list yet", false, poller.Stats{Devices: 0}, false},
		{"listed, reads under way", true, poller.Stats{Devices: 3, Reads: 2}, false},
		{"every device read once", true, poller.Stats{Devices: 3, Reads: 3}, false},
		{"the list still held", true, poller.Stats{Devices: 3, Reads: 4}, false},
	}
	for _, st := range steps {
		if got := s.step(st.listed, st.ps, listPending); got != st.want {
			t.Fatalf("%s: release %v, want %v", st.name, got, st.want)
		}
	}
	pending = false
	done := poller.Stats{Devices: 3, Reads: 5}
	if s.step(true, done, listPending) {
		t.Fatal("released in the check that saw the list handed over; want one check later")
	}
	if !s.step(true, done, listPending) {
		t.Fatal("not released after the list went out")
	}
	for range 3 {
		if s.step(true, done, listPending) {
			t.Fatal("released again")
		}
	}
}
