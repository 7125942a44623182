// Package clock is the one source of time of the bridge's timing parts:
// the scheduler, the poller, the registry and the LAN client each take a
// Clock in their configuration (nil meaning Real) and never call time.Now,
// time.NewTimer or time.NewTicker themselves. Production passes nothing;
// a test passes the clock it can move (clocktest), so that it waits out a
// hold-off or an interval by jumping over it instead of shortening the
// production settings.
//
// Unit tests that need no sockets keep using testing/synctest: Real is
// time's own functions, which a synctest bubble fakes. Instants still go
// in as arguments where they can (rate.Limiter's ReserveN and AllowN,
// functions taking now), so that the logic below the loops is tested at
// explicit instants.
//
// It is not a scheduler of work: it only tells the time and makes timers.
package clock

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"
)

// Clock tells the time and makes timers, as the time package does.
type Clock interface {
	// Now is time.Now.
	Now() time.Time
	// NewTimer is time.NewTimer: the timer's channel receives the time
	// once d has passed.
	NewTimer(d time.Duration) Timer
	// AfterFunc is time.AfterFunc: f runs in its own goroutine once d has
	// passed.
	AfterFunc(d time.Duration, f func()) Timer
	// NewTicker is time.NewTicker; d must be positive.
	NewTicker(d time.Duration) Ticker
}

// Timer is a *time.Timer's methods, with C a method. As since Go 1.23,
// no value sent before Stop or Reset is received after it.
type Timer interface {
	// C is the channel the time is sent on (nil for AfterFunc's timers).
	C() <-chan time.Time
	// Stop is time.Timer.Stop: false when the timer had fired or was
	// stopped.
	Stop() bool
	// Reset is time.Timer.Reset: the timer fires d from now.
	Reset(d time.Duration) bool
	// ResetAt is Reset to fire when the clock reaches at (at once when it
	// has). A loop waiting for a deadline uses it rather than Reset with
	// at.Sub(now): a clock a test jumps between that Now and the Reset
	// would otherwise run the whole duration again after the jump.
	ResetAt(at time.Time) bool
	// Done says the receiver has handled the value it took from C (work.go):
	// until then, or until the timer is stopped or reset, a test clock
	// counts that value as work in hand. Nothing on the system's clock.
	Done()
}

// Ticker is a *time.Ticker's methods, with C a method.
type Ticker interface {
	C() <-chan time.Time
	Stop()
	Reset(d time.Duration)
	// Done is Timer.Done: a tick taken from C is handled.
	Done()
}

// Real is the system's clock: the time package's functions.
var Real Clock = realClock{}

// Or is c, or Real when c is nil: what every Config's nil Clock means.
func Or(c Clock) Clock {
	if c == nil {
		return Real
	}
	return c
}

type realClock struct{}

func (realClock) Now() time.Time                 { return time.Now() }
func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }
func (realClock) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{time.AfterFunc(d, f)}
}
func (realClock) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

// realTimer and realTicker hold one pointer: made into an interface they
// cost no allocation beyond the time package's own.
type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time        { return t.t.C }
func (t realTimer) Stop() bool                 { return t.t.Stop() }
func (t realTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }
func (t realTimer) ResetAt(at time.Time) bool  { return t.t.Reset(time.Until(at)) }
func (realTimer) Done()                        {}

type realTicker struct{ t *time.Ticker }

func (t realTicker) C() <-chan time.Time   { return t.t.C }
func (t realTicker) Stop()                 { t.t.Stop() }
func (t realTicker) Reset(d time.Duration) { t.t.Reset(d) }
func (realTicker) Done()                   {}

// Wait is lim.Wait(ctx) on c: it takes one token, waiting on c's timer
// until the limiter has it, or returns ctx's error (the token given back);
// a wait longer than ctx's deadline leaves at once with an error, as
// rate.Limiter's own Wait does. That one reads the system's clock; this one
// keeps a limiter on the clock its owner was given.
func Wait(ctx context.Context, c Clock, lim *rate.Limiter) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	now := c.Now()
	r := lim.ReserveN(now, 1)
	if !r.OK() {
		return fmt.Errorf("clock: wait for a token: the limiter's burst is %d, below one token", lim.Burst())
	}
	delay := r.DelayFrom(now)
	if delay <= 0 {
		return nil
	}
	// A context's deadline is on the system's clock.
	if deadline, ok := ctx.Deadline(); ok && delay > time.Until(deadline) {
		r.CancelAt(now)
		return fmt.Errorf("clock: wait for a token: %v would pass the context's deadline: %w", delay, context.DeadlineExceeded)
	}
	t := c.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		r.CancelAt(c.Now())
		return ctx.Err()
	}
}

// Ceil is t rounded up to a whole multiple of g since the zero time: an
// instant of a grid of g (the poller's read grid, which the other timers
// of an idle daemon share). t itself when it is on the grid already, or
// when g is not positive. It keeps t's monotonic clock reading, so that a
// timer set from it is not moved by a change of the wall clock.
func Ceil(t time.Time, g time.Duration) time.Time {
	if f := Floor(t, g); f.Before(t) {
		return f.Add(g)
	}
	return t
}

// Floor is t rounded down to a whole multiple of g since the zero time:
// the grid's last instant at or before t. t itself when g is not
// positive. Like Ceil it keeps t's monotonic clock reading.
func Floor(t time.Time, g time.Duration) time.Time {
	if g <= 0 {
		return t
	}
	return t.Add(-t.Sub(t.Truncate(g)))
}
