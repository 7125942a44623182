package clock_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"

	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/clock/clocktest"
)

func TestOrIsRealForNil(t *testing.T) {
	if clock.Or(nil) != clock.Real {
		t.Error("Or(nil) is not Real")
	}
	c := clocktest.New()
	if clock.Or(c) != clock.Clock(c) {
		t.Error("Or(c) is not c")
	}
}

// TestRealIsTheTimePackage: Real's time, timers and tickers are the time
// package's (in a bubble: its fake time, to the nanosecond).
func TestRealIsTheTimePackage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clock.Real
		start := time.Now()
		if !c.Now().Equal(start) {
			t.Fatalf("Now %v, time.Now %v", c.Now(), start)
		}
		tm := c.NewTimer(time.Minute)
		var ran atomic.Bool
		c.AfterFunc(2*time.Minute, func() { ran.Store(true) })
		k := c.NewTicker(40 * time.Second)
		defer k.Stop()
		if at := <-tm.C(); at.Sub(start) != time.Minute {
			t.Errorf("timer fired after %v, want 1m", at.Sub(start))
		}
		if tm.Stop() {
			t.Error("Stop of a timer that fired and was received: true")
		}
		if at := <-k.C(); at.Sub(start) != 40*time.Second {
			t.Errorf("first tick after %v", at.Sub(start))
		}
		if at := <-k.C(); at.Sub(start) != 80*time.Second {
			t.Errorf("second tick after %v", at.Sub(start))
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if !ran.Load() {
			t.Error("AfterFunc's function did not run after its duration")
		}
		if tm.Reset(time.Second) {
			t.Error("Reset of a timer that fired and was received said it was active")
		}
		<-tm.C()
		at := time.Now().Add(90 * time.Second)
		tm.ResetAt(at)
		if got := <-tm.C(); !got.Equal(at) {
			t.Errorf("ResetAt(%v) fired at %v", at, got)
		}
		k.Reset(time.Hour)
		select {
		case <-k.C():
			t.Error("a tick before the reset period")
		default:
		}
	})
}

// TestWaitTakesTokensOnTheClock: Wait waits on the clock it is given: a
// frozen clock's limiter waits until the test advances it.
func TestWaitTakesTokensOnTheClock(t *testing.T) {
	c := clocktest.NewFrozen(time.Unix(1_800_000_000, 0))
	lim := rate.NewLimiter(rate.Every(time.Second), 1)
	ctx := context.Background()
	if err := clock.Wait(ctx, c, lim); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- clock.Wait(ctx, c, lim) }()
	if err := c.WaitPending(ctx, 1); err != nil { // the second waits for a token
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("the second token came without the clock moving: %v", err)
	default:
	}
	c.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c.Pending() != 0 {
		t.Errorf("%d timers left armed", c.Pending())
	}
}

// TestWaitGivesTheTokenBack: a wait that ends with its context gives its
// token back, and one longer than the context's deadline does not start.
func TestWaitGivesTheTokenBack(t *testing.T) {
	c := clocktest.NewFrozen(time.Unix(1_800_000_000, 0))
	lim := rate.NewLimiter(rate.Every(time.Second), 1)
	if err := clock.Wait(context.Background(), c, lim); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- clock.Wait(ctx, c, lim) }()
	if err := c.WaitPending(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	c.Advance(time.Second)
	if !lim.AllowN(c.Now(), 1) {
		t.Error("the cancelled wait kept its token: none a second later")
	}

	short, cancelShort := context.WithTimeout(context.Background(), time.Hour)
	defer cancelShort()
	slow := rate.NewLimiter(rate.Every(2*time.Hour), 1)
	slow.AllowN(c.Now(), 1)
	if err := clock.Wait(short, c, slow); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a wait of 2 h under a deadline of 1 h: %v, want DeadlineExceeded at once", err)
	}
	if err := clock.Wait(ctx, c, lim); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a context already done: %v", err)
	}
	if err := clock.Wait(context.Background(), c, rate.NewLimiter(1, 0)); err == nil {
		t.Error("Wait on a limiter of burst 0 did not fail")
	}
}

// TestCeilAndFloor: up to the next and down to the last whole multiple of
// the grid since the zero time, an instant on the grid as it is both ways,
// no grid no change, and the monotonic reading kept (timers set from them
// ignore wall-clock changes).
func TestCeilAndFloor(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 7, 250e6, time.UTC)
	on5 := time.Date(2026, 11, 26, 12, 0, 5, 0, time.UTC)
	for _, tc := range []struct {
		t           time.Time
		g           time.Duration
		ceil, floor time.Time
	}{
		{at, 5 * time.Second, time.Date(2026, 11, 26, 12, 0, 10, 0, time.UTC), on5},
		{at, time.Second, time.Date(2026, 11, 26, 12, 0, 8, 0, time.UTC), time.Date(2026, 11, 26, 12, 0, 7, 0, time.UTC)},
		{on5, 5 * time.Second, on5, on5},
		{at, 0, at, at},
		{at, -time.Second, at, at},
	} {
		if got := clock.Ceil(tc.t, tc.g); !got.Equal(tc.ceil) {
			t.Errorf("Ceil(%v, %v) = %v, want %v", tc.t, tc.g, got, tc.ceil)
		}
		if got := clock.Floor(tc.t, tc.g); !got.Equal(tc.floor) {
			t.Errorf("Floor(%v, %v) = %v, want %v", tc.t, tc.g, got, tc.floor)
		}
	}
	now := time.Now()
	if got := clock.Ceil(now, time.Second); !strings.Contains(got.String(), "m=+") {
		t.Errorf("Ceil(now) = %v lost the monotonic reading", got)
	}
	if got := clock.Floor(now, time.Second); !strings.Contains(got.String(), " m=") { // m=-… early in a process
		t.Errorf("Floor(now) = %v lost the monotonic reading", got)
	}
}
