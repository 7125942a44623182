package cloudsim

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestRaiseEventsEvery: one event per interval from a device with event
// capabilities, none after the context ends (fake time).
func TestRaiseEventsEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := New(Options{})
		var mu sync.Mutex
		var got []Event
		remove := sim.OnEvent(func(e Event) { mu.Lock(); got = append(got, e); mu.Unlock() })
		defer remove()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); sim.RaiseEventsEvery(ctx, time.Second, nil) }()
		time.Sleep(3500 * time.Millisecond)
		synctest.Wait()
		cancel()
		<-done
		time.Sleep(5 * time.Second)
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 3 {
			t.Fatalf("%d events in 3.5 intervals, want 3", len(got))
		}
		for _, e := range got {
			if e.Device == "" || e.Instance == "" || len(e.Payload) == 0 {
				t.Errorf("event %+v is incomplete", e)
			}
		}
	})
}
