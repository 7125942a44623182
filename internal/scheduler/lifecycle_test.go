package scheduler_test

// Limits of the scheduler itself: overload, bad input, shutdown, settings
// and counters.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

// Queues are bounded: past the limit a submission fails with ErrOverloaded
// at once; a command coalescing with a queued one still goes through.
func TestOverload(t *testing.T) {
	f := newFake()
	s := newScheduler(f, scheduler.Config{MaxQueuedCommands: 3, MaxQueuedReads: 2})
	for i := range 3 {
		must(t, s.Control(ctl(fmt.Sprintf("d%d", i), "powerSwitch", 1), nil))
	}
	if err := s.Control(ctl("d9", "powerSwitch", 1), nil); !errors.Is(err, scheduler.ErrOverloaded) {
		t.Errorf("4th distinct command: %v, want ErrOverloaded", err)
	}
	must(t, s.Control(ctl("d0", "powerSwitch", 0), nil)) // replaces, no growth
	must(t, s.State("H1", "a", scheduler.PriorityPoll, nil))
	must(t, s.Scenes("H1", "a", nil))
	if err := s.State("H1", "a", scheduler.PriorityPoll, nil); !errors.Is(err, scheduler.ErrOverloaded) {
		t.Errorf("3rd read waiter: %v, want ErrOverloaded", err)
	}
	if st := s.Stats(); st.QueuedCommands != 3 || st.QueuedReads != 2 {
		t.Errorf("queued %d commands, %d reads; want 3 and 2", st.QueuedCommands, st.QueuedReads)
	}
}

// Bad submissions are refused with an error, never a panic.
func TestBadInput(t *testing.T) {
	s := newScheduler(newFake(), scheduler.Config{})
	for _, err := range []error{
		s.Control(cloud.ControlRequest{Device: "x", Instance: "powerSwitch"}, nil),
		s.Control(cloud.ControlRequest{SKU: "H1", Device: "x"}, nil),
		s.State("", "x", scheduler.PriorityPoll, nil),
		s.State("H1", "x", scheduler.Priority(9), nil),
		s.Scenes("H1", "", nil),
		s.DIYScenes("", "", nil),
	} {
		if err == nil {
			t.Errorf("bad submission accepted")
		}
	}
}

// On shutdown, intake stops, queued requests are reported not sent, the
// request on the wire finishes and is reported, and Run returns.
func TestShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.respond = func(call) time.Duration { return 2 * time.Second }
		s := newScheduler(f, scheduler.Config{ControlAccount: scheduler.PerSecond(1, 1)})
		rep := newReports(t)
		stop := run(t, s)
		onWire := rep.submit(s, ctl("a", "powerSwitch", 1))
		synctest.Wait()
		var queued []int
		for i := range 5 {
			queued = append(queued, rep.submit(s, ctl(fmt.Sprintf("q%d", i), "powerSwitch", 1)))
		}
		var readErr error
		must(t, s.ListDevices(func(_ []capability.Device, err error) { readErr = err }))
		var readDone bool
		must(t, s.DIYScenes("H1", "a", func(_ cloud.Scenes, err error) { readDone = true }))
		time.Sleep(time.Second)
		t0 := time.Now()
		stop()
		if d := time.Since(t0); d != time.Second {
			t.Errorf("Run returned %v after cancel, want once the request on the wire is answered (1 s)", d)
		}
		if err := s.Control(ctl("late", "powerSwitch", 1), nil); !errors.Is(err, scheduler.ErrClosed) {
			t.Errorf("submission after shutdown: %v, want ErrClosed", err)
		}
		if r := rep.result(onWire); r.Err != nil {
			t.Errorf("request on the wire: %v, want answered", r.Err)
		}
		for _, id := range queued {
			if r := rep.result(id); !errors.Is(r.Err, scheduler.ErrNotSent) {
				t.Errorf("queued command: %v, want ErrNotSent", r.Err)
			}
		}
		if readErr != nil || !readDone {
			// both reads went out at once (their buckets were full)
			t.Errorf("reads: list %v, diy done %v", readErr, readDone)
		}
		rep.checkOnce()
	})
}

// hungCloud answers no control request until its context is cancelled.
type hungCloud struct{ *fakeCloud }

func (h hungCloud) Control(ctx context.Context, req cloud.ControlRequest) (cloud.ControlResult, error) {
	<-ctx.Done()
	return cloud.ControlResult{}, ctx.Err()
}

// A request still on the wire ShutdownTimeout (10 s) after Run's context
// ended is cancelled and reported: a hung cloud does not hold up the
// bridge's shutdown.
func TestShutdownCancelsAHungRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := scheduler.New(hungCloud{newFake()}, scheduler.Config{}, zerolog.Nop())
		rep := newReports(t)
		stop := run(t, s)
		id := rep.submit(s, ctl("a", "powerSwitch", 1))
		synctest.Wait()
		t0 := time.Now()
		stop()
		if d := time.Since(t0); d != scheduler.ShutdownTimeout {
			t.Errorf("Run returned %v after cancel, want after ShutdownTimeout (%v)", d, scheduler.ShutdownTimeout)
		}
		if r := rep.result(id); !errors.Is(r.Err, context.Canceled) {
			t.Errorf("the hung request: %v, want cancelled", r.Err)
		}
		rep.checkOnce()
	})
}

// Reads queued at shutdown are reported not sent.
func TestShutdownReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := newScheduler(f, scheduler.Config{})
		var errs []error
		var mu sync.Mutex
		rec := func(_ cloud.DeviceState, err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
		must(t, s.State("H1", "a", scheduler.PriorityPoll, rec))
		must(t, s.State("H1", "a", scheduler.PriorityConfirm, rec))
		stop := run(t, s)
		stop() // may or may not have sent: either answered or not sent
		if len(errs) != 2 {
			t.Fatalf("%d reports, want 2", len(errs))
		}
		for _, err := range errs {
			if err != nil && !errors.Is(err, scheduler.ErrNotSent) {
				t.Errorf("read at shutdown: %v", err)
			}
		}
		if err := s.Run(t.Context()); err == nil {
			t.Errorf("second Run accepted")
		}
	})
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  scheduler.Config
		ok   bool
	}{
		{"zero is defaults", scheduler.Config{}, true},
		{"custom", scheduler.Config{ControlAccount: scheduler.PerSecond(6, 40), SafetyMargin: 0.1, MaxInFlight: 4, CommandSlots: 2}, true},
		{"zero rate", scheduler.Config{State: scheduler.Limit{Burst: 3}}, false},
		{"zero burst", scheduler.Config{State: scheduler.PerMinute(10, 0)}, false},
		{"margin too big", scheduler.Config{SafetyMargin: 0.9}, false},
		{"negative", scheduler.Config{MaxAttempts: -1}, false},
		{"no read slots", scheduler.Config{MaxInFlight: 2, CommandSlots: 2}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (err == nil) != tc.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// The safety margin holds back part of every budget.
func TestSafetyMargin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := newScheduler(f, scheduler.Config{SafetyMargin: 0.5})
		stop := run(t, s)
		for i := range 40 {
			must(t, s.Control(ctl(fmt.Sprintf("d%02d", i), "powerSwitch", 1), nil))
		}
		time.Sleep(10 * time.Second)
		stop()
		checkBucket(t, "account control with margin", instants(f.Calls(), cloud.EndpointControl), scheduler.PerSecond(6, 40))
		if n := len(f.Calls()); n != 40 {
			t.Errorf("%d sent, want 40", n)
		}
	})
}

// Stats report requests by endpoint, today's count, and tokens.
func TestStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := newScheduler(f, scheduler.Config{})
		stop := run(t, s)
		must(t, s.Control(ctl("a", "powerSwitch", 1), nil))
		must(t, s.State("H1", "a", scheduler.PriorityPoll, nil))
		must(t, s.Scenes("H1", "a", nil))
		must(t, s.DIYScenes("H1", "a", nil))
		must(t, s.ListDevices(nil))
		synctest.Wait()
		st := s.Stats()
		stop()
		for _, ep := range []string{"control", "state", "scenes", "diy-scenes", "devices"} {
			if st.Requests[ep] != 1 {
				t.Errorf("requests[%s] = %d, want 1", ep, st.Requests[ep])
			}
		}
		if st.RequestsToday != 5 {
			t.Errorf("requests today %d, want 5", st.RequestsToday)
		}
		want := scheduler.Tokens{DeviceList: 29, ControlAccount: 79, ControlDeviceMin: 5, StateMin: 29, ScenesMin: 29, DIYScenesMin: 29}
		if st.Tokens != want {
			t.Errorf("tokens %+v, want %+v", st.Tokens, want)
		}
	})
}

// Devices no longer used are forgotten: memory follows the devices in use,
// not every device ever seen.
func TestIdleDevicesForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := newScheduler(f, scheduler.Config{})
		stop := run(t, s)
		for i := range 300 {
			must(t, s.Control(ctl(fmt.Sprintf("d%03d", i), "powerSwitch", 1), nil))
			must(t, s.State("H6008", fmt.Sprintf("d%03d", i), scheduler.PriorityPoll, nil))
		}
		time.Sleep(30 * time.Second)
		if n := s.Stats().Devices; n != 300 {
			t.Errorf("%d devices tracked while their buckets refill, want 300", n)
		}
		// Buckets are full again after a minute; the next wake-up sweeps.
		time.Sleep(2 * time.Minute)
		must(t, s.Control(ctl("new", "powerSwitch", 1), nil))
		synctest.Wait()
		st := s.Stats()
		stop()
		if st.Devices != 1 {
			t.Errorf("%d devices tracked after the others went idle, want 1", st.Devices)
		}
		if n := len(f.Calls()); n != 601 {
			t.Errorf("%d requests, want 601", n)
		}
	})
}

// TestRequestsTodaySeeded: the count a previous run saved goes on today,
// and starts from zero on another day.
func TestRequestsTodaySeeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		today := now.Year()*10000 + int(now.Month())*100 + now.Day()
		s := newScheduler(newFake(), scheduler.Config{RequestsToday: 1234, RequestsDay: today})
		stop := run(t, s)
		must(t, s.State("H1", "a", scheduler.PriorityPoll, nil))
		time.Sleep(time.Second)
		if st := s.Stats(); st.RequestsToday != 1235 || st.Day != today {
			t.Errorf("requests today %d (day %d), want 1235 on %d", st.RequestsToday, st.Day, today)
		}
		stop()
		old := newScheduler(newFake(), scheduler.Config{RequestsToday: 1234, RequestsDay: 19991231})
		if st := old.Stats(); st.RequestsToday != 0 {
			t.Errorf("a count from another day: %d today, want 0", st.RequestsToday)
		}
	})
}
