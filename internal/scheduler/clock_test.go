package scheduler_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/clock/clocktest"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

// The scheduler keeps time on Config.Clock only: a test of the whole
// bridge, whose sockets keep it out of a synctest bubble, jumps a clocktest
// clock over a hold-off or a Retry-After instead of shortening them. These
// run on the system's time, as such a test does.

// TestAuthHoldoffEndsWhenTheClockJumps: the minute after a 401 is the
// clock's: requests fail unsent until the test jumps it, then go out.
func TestAuthHoldoffEndsWhenTheClockJumps(t *testing.T) {
	clk := clocktest.New()
	f := newFake()
	var refused atomic.Bool
	refused.Store(true)
	f.fail = func(c call, n int) error {
		if refused.Load() {
			return &cloud.APIError{Kind: cloud.ErrAuth, Endpoint: c.ep, HTTPStatus: 401}
		}
		return nil
	}
	s := scheduler.New(f, scheduler.Config{Clock: clk}, zerolog.Nop())
	stop := run(t, s)
	defer stop()
	command := func(v int) scheduler.CommandResult {
		t.Helper()
		done := make(chan scheduler.CommandResult, 1)
		if err := s.Control(ctl("a", "powerSwitch", v), func(r scheduler.CommandResult) { done <- r }); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no report")
		}
		return scheduler.CommandResult{}
	}
	if r := command(1); !cloud.IsAuth(r.Err) {
		t.Fatalf("first command: %v, want the 401", r.Err)
	}
	refused.Store(false)
	if r := command(0); !errors.Is(r.Err, scheduler.ErrAuthHoldoff) || r.Attempts != 0 {
		t.Fatalf("command within the hold-off: %v after %d attempts, want ErrAuthHoldoff, unsent", r.Err, r.Attempts)
	}
	clk.Advance(time.Minute)
	if r := command(1); r.Err != nil {
		t.Fatalf("command after the jump over the hold-off: %v", r.Err)
	}
	if n := len(f.Calls()); n != 2 {
		t.Errorf("%d requests reached the cloud, want 2", n)
	}
}

// TestRetryAfterWaitsOnTheClock: a read answered 429 waits its Retry-After
// on the clock's timer: a jump over it sends the read again at once.
func TestRetryAfterWaitsOnTheClock(t *testing.T) {
	clk := clocktest.New()
	f := newFake()
	f.fail = func(c call, n int) error {
		if n == 0 {
			return &cloud.APIError{Kind: cloud.ErrRateLimited, Endpoint: c.ep, HTTPStatus: 429, RetryAfter: time.Hour}
		}
		return nil
	}
	held := make(chan scheduler.Hold, 1)
	s := scheduler.New(f, scheduler.Config{Clock: clk, OnHeld: func(_, _ string, h scheduler.Hold) { held <- h }}, zerolog.Nop())
	stop := run(t, s)
	defer stop()
	done := make(chan error, 1)
	if err := s.State("H6008", "lamp", scheduler.PriorityPoll, func(_ cloud.DeviceState, err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case h := <-held:
		if d := h.Until.Sub(clk.Now()); d <= 4*time.Minute || d > 5*time.Minute {
			t.Fatalf("held for %v, want the capped Retry-After (5 min)", d)
		}
	case <-ctx.Done():
		t.Fatal("the 429 did not hold the read")
	}
	if err := clk.WaitPending(ctx, 1); err != nil { // the loop's timer, for the hold's end
		t.Fatal("the loop never waited for the Retry-After on the clock")
	}
	clk.Advance(5 * time.Minute)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("read after the jump: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the read was not sent again after the jump over its Retry-After")
	}
	if n := len(f.Calls()); n != 2 {
		t.Errorf("%d requests, want the 429 and the read after it", n)
	}
}
