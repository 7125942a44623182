package poller

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock/clocktest"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
)

// listScheduler answers at once, on the caller's goroutine, with one
// device in the list, and tells each state read on reads.
type listScheduler struct {
	instantScheduler
	list  []capability.Device
	reads chan time.Time
	clk   *clocktest.Clock
}

func (s *listScheduler) ListDevices(report func([]capability.Device, error)) error {
	report(s.list, nil)
	return nil
}

func (s *listScheduler) State(sku, device string, p scheduler.Priority, report func(cloud.DeviceState, error)) error {
	s.reads <- s.clk.Now()
	return s.instantScheduler.State(sku, device, p, report)
}

// appliedStore is the registry, telling each state read applied.
type appliedStore struct {
	*registry.Registry
	applied chan struct{}
}

func (s appliedStore) ApplyState(k capability.Key, st registry.State, sentSeq uint64) {
	s.Registry.ApplyState(k, st, sentSeq)
	s.applied <- struct{}{}
}

// TestIntervalJumpedOnTheClock: the poller's due times and its loop's
// timer are on Config.Clock: a test of the whole bridge, on real sockets,
// jumps a clocktest clock over the poll interval instead of shortening it.
// Each jump past a device's next read, once the read before it is
// answered, makes that read at once.
func TestIntervalJumpedOnTheClock(t *testing.T) {
	clk := clocktest.New()
	s := &listScheduler{list: devs(1), reads: make(chan time.Time, 16), clk: clk}
	s.state = mkState("H6072", "D00", true, map[string]any{capability.InstancePower: 1})
	store := appliedStore{registry.New(zerolog.Nop()), make(chan struct{}, 16)}
	p := New(s, store, Config{Interval: time.Minute, ListInterval: 24 * time.Hour, Clock: clk}, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	// read waits for a read and for its answer to be applied: a jump
	// while a read is out would only put the next one MinInterval after
	// its answer.
	read := func(what string) time.Time {
		t.Helper()
		var at time.Time
		select {
		case at = <-s.reads:
		case <-time.After(10 * time.Second):
			t.Fatalf("no read %s", what)
		}
		select {
		case <-store.applied:
		case <-time.After(10 * time.Second):
			t.Fatalf("the read %s was not applied", what)
		}
		return at
	}
	last := read("when the list arrived")
	for i := range 3 {
		clk.Advance(2 * time.Minute)
		at := read("after a jump of two intervals")
		if g := at.Sub(last); g < time.Minute {
			t.Errorf("read %d only %v after the one before, within the interval", i+2, g)
		}
		last = at
	}
	select {
	case at := <-s.reads:
		t.Errorf("a read at %v without a jump past the next one", at)
	default:
	}
}
