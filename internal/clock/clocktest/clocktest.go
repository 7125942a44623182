// Package clocktest is a clock.Clock a test can jump forward, for the tests
// testing/synctest cannot serve: those with real sockets, whose goroutines
// blocked on network I/O are not durably blocked, so a bubble's time never
// advances while they wait. Only tests import it.
//
// New's clock runs with the system's time and Advance jumps it forward: a
// test waits out a 60 s hold-off or a poll interval in no time, while
// answers over the network still take the time they take. Every timer due
// by the new instant fires at once, the others are re-armed for what is
// left of them. NewFrozen's clock stands still but for Advance: for a test
// that must see no time pass at all (rate limits of log lines).
package clocktest

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"cloud2mqtt/internal/clock"
)

// Clock is a clock.Clock whose time a test moves forward with Advance.
// Its methods are safe for concurrent use.
type Clock struct {
	// frozen holds a frozen clock's time before any Advance (nil while the
	// clock runs with the system's time), read without the lock by Now.
	frozen atomic.Pointer[time.Time]
	offset atomic.Int64 // nanoseconds from the system's time (NewAt's start, then every jump), read without the lock by Now

	mu     sync.Mutex
	armed  map[*timer]struct{}
	change chan struct{} // closed and replaced whenever a timer is armed
	// recorded holds the deadlines of the waits that ended at them since
	// Record, nil while not recording.
	recorded []time.Time

	// Work in hand (clock.Busy and its kin, work.go): busy counts it all,
	// and idle is closed and replaced whenever busy falls to 0.
	busy      int
	idle      chan struct{}
	holds     map[uint64]string // clock.Busy's, by id
	nextHold  uint64
	flights   []flight               // datagrams on their way to a listener
	listeners map[netip.AddrPort]int // where datagrams are taken in
	held      map[*timer]struct{}    // the timers whose held is above 0

	advanced time.Duration // every Advance's
}

// New is a clock that runs with the system's time, Advance jumping it
// forward.
func New() *Clock {
	return &Clock{armed: map[*timer]struct{}{}, change: make(chan struct{}),
		idle: make(chan struct{}), holds: map[uint64]string{}, listeners: map[netip.AddrPort]int{},
		held: map[*timer]struct{}{}}
}

// NewAt is a clock that runs with the system's time from start on (its
// Now is start when NewAt returns), Advance jumping it forward: a test whose
// jumps must not cross a midnight starts it at noon.
func NewAt(start time.Time) *Clock {
	c := New()
	c.offset.Store(int64(start.Sub(time.Now())))
	return c
}

// NewFrozen is a clock standing at start; only Advance moves it. Its
// timers fire only when an Advance reaches them.
func NewFrozen(start time.Time) *Clock {
	c := New()
	c.frozen.Store(&start)
	return c
}

// Freeze stops a running clock where it stands: from then on only Advance
// moves it, and its timers fire only when an Advance reaches them. A test
// lets a daemon start on the running clock and freezes it for a phase
// whose instants must not depend on how fast the machine is.
func (c *Clock) Freeze() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen.Load() != nil {
		return
	}
	now := time.Now()
	c.frozen.Store(&now) // Now stays what it was: now plus the offset
	for t := range c.armed {
		t.disarmReal()
	}
}

var _ clock.Clock = (*Clock)(nil)

// Now is the system's time (a frozen clock's start) plus every Advance.
func (c *Clock) Now() time.Time {
	off := time.Duration(c.offset.Load())
	if start := c.frozen.Load(); start != nil {
		return start.Add(off)
	}
	return time.Now().Add(off)
}

// Advance jumps the clock d forward. Every timer and ticker due by then
// fires before Advance returns (a ticker once, however many of its periods
// were jumped over, as a real ticker's slow receiver sees), with the new
// time as its value; AfterFunc's functions start in goroutines of their
// own. The others fire when what is left of their durations has passed. A
// negative d panics: time does not go back.
func (c *Clock) Advance(d time.Duration) {
	if d < 0 {
		panic("clocktest: Advance(" + d.String() + "): time does not go back")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset.Add(int64(d))
	c.advanced += d
	now := c.Now()
	var due []*timer
	for t := range c.armed {
		t.disarmReal()
		if !t.when.After(now) {
			due = append(due, t)
		}
	}
	for _, t := range due {
		c.recordLocked(t.when)
		c.fireLocked(t, now)
	}
	for t := range c.armed {
		c.armRealLocked(t, t.when.Sub(now))
	}
}

// Advanced is how far Advance has jumped the clock in all.
func (c *Clock) Advanced() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.advanced
}

// Pending is how many timers and tickers are armed: made or reset, and not
// yet fired (a ticker until it is stopped) nor stopped.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.armed)
}

// Deadlines are the instants at which the armed timers and tickers fire
// next, earliest first.
func (c *Clock) Deadlines() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]time.Time, 0, len(c.armed))
	for t := range c.armed {
		out = append(out, t.when)
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// WaitPending waits until at least n timers or tickers are armed (the code
// under test has started waiting), or ctx ends. A test jumps a wait only
// once it has begun: a timer made after an Advance runs its whole duration.
func (c *Clock) WaitPending(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		k, change := len(c.armed), c.change
		c.mu.Unlock()
		if k >= n {
			return nil
		}
		select {
		case <-change:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Record starts keeping the deadline of every wait on c that ends at it
// from now on: a timer, an AfterFunc or a ticker's period firing because
// the clock reached it (flowing or by Advance): the instants at which the
// code under test was woken by its clock. A timer stopped or reset before
// its deadline woke nobody, and one armed for an instant the clock has
// already reached fires at once without a wait: neither is kept. Record
// again starts afresh.
func (c *Clock) Record() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recorded = make([]time.Time, 0, 64)
}

// Recorded is the deadlines kept since Record, in the order they fired.
func (c *Clock) Recorded() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.recorded...)
}

// recordLocked keeps when if c is recording.
func (c *Clock) recordLocked(when time.Time) {
	if c.recorded != nil {
		c.recorded = append(c.recorded, when)
	}
}

// NewTimer is time.NewTimer on c.
func (c *Clock) NewTimer(d time.Duration) clock.Timer {
	t := &timer{c: c, ch: make(chan time.Time, 1), site: caller()}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armLocked(t, c.Now().Add(d))
	return t
}

// AfterFunc is time.AfterFunc on c.
func (c *Clock) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := &timer{c: c, f: f, site: caller()}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armLocked(t, c.Now().Add(d))
	return t
}

// NewTicker is time.NewTicker on c; d must be positive.
func (c *Clock) NewTicker(d time.Duration) clock.Ticker {
	if d <= 0 {
		panic("clocktest: non-positive interval for NewTicker")
	}
	t := &timer{c: c, ch: make(chan time.Time, 1), period: d, site: caller()}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armLocked(t, c.Now().Add(d))
	return ticker{t}
}

// timer is a timer, an AfterFunc or (period > 0) a ticker of a Clock. Its
// fields are guarded by the clock's lock.
type timer struct {
	c      *Clock
	ch     chan time.Time // nil for AfterFunc
	f      func()         // AfterFunc's
	period time.Duration  // tickers'
	when   time.Time      // the deadline on the clock, while armed
	real   *time.Timer    // wakes it when the system's time reaches when
	gen    uint64         // a wake of an earlier arming is ignored
	// held is how many values sent on ch are work in hand: not yet
	// received, or received and not yet handled (Done, Stop, Reset).
	held int
	site string // where the timer was made, for Holders
}

// armLocked arms t to fire when the clock reaches when; at once when it
// has.
func (c *Clock) armLocked(t *timer, when time.Time) {
	now := c.Now()
	t.when = when
	c.armed[t] = struct{}{}
	close(c.change)
	c.change = make(chan struct{})
	if !when.After(now) {
		c.fireLocked(t, now)
		return
	}
	c.armRealLocked(t, when.Sub(now))
}

// armRealLocked starts the system's timer that fires t in d, unless the
// clock is frozen.
func (c *Clock) armRealLocked(t *timer, d time.Duration) {
	t.gen++
	if c.frozen.Load() != nil {
		return
	}
	gen := t.gen
	t.real = time.AfterFunc(d, func() { c.wake(t, gen) })
}

// disarmReal stops t's system timer; a wake already on its way is ignored.
func (t *timer) disarmReal() {
	t.gen++
	if t.real != nil {
		t.real.Stop()
		t.real = nil
	}
}

// wake is t's system timer: t is due unless it was stopped, reset or
// jumped meanwhile.
func (c *Clock) wake(t *timer, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, armed := c.armed[t]; !armed || t.gen != gen {
		return
	}
	t.real = nil
	now := c.Now()
	c.recordLocked(t.when)
	c.fireLocked(t, now)
	if _, ticking := c.armed[t]; ticking {
		c.armRealLocked(t, t.when.Sub(now))
	}
}

// fireLocked fires t at now: a timer or an AfterFunc is done, a ticker is
// due again at its next period after now (its caller arms it for that).
func (c *Clock) fireLocked(t *timer, now time.Time) {
	if t.ch != nil {
		select {
		case t.ch <- now:
			t.held++
			c.held[t] = struct{}{}
			c.addLocked(1)
		default: // a ticker's receiver has not taken the last tick yet
		}
	}
	if t.period <= 0 {
		delete(c.armed, t)
		if t.f != nil {
			done := c.busyLocked("the function of an AfterFunc made at " + t.site)
			go func() {
				defer done()
				t.f()
			}()
		}
		return
	}
	missed := now.Sub(t.when) / t.period
	t.when = t.when.Add((missed + 1) * t.period)
}

// stopLocked disarms t and takes back a value it sent and nobody received;
// it says whether t was armed or its value unreceived, as time.Timer.Stop
// does since Go 1.23 (its channel is unbuffered: a value not received was
// never sent).
func (c *Clock) stopLocked(t *timer) bool {
	_, was := c.armed[t]
	t.disarmReal()
	delete(c.armed, t)
	if t.ch != nil {
		select {
		case <-t.ch:
			was = true
		default:
		}
	}
	c.addLocked(-t.held)
	t.held = 0
	delete(c.held, t)
	return was
}

func (t *timer) C() <-chan time.Time { return t.ch }

// Done lets go of the work of one value received from C.
func (t *timer) Done() {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.held > 0 {
		if t.held--; t.held == 0 {
			delete(t.c.held, t)
		}
		t.c.addLocked(-1)
	}
}

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.c.stopLocked(t)
}

func (t *timer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.c.stopLocked(t)
	t.c.armLocked(t, t.c.Now().Add(d))
	return was
}

func (t *timer) ResetAt(at time.Time) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.c.stopLocked(t)
	t.c.armLocked(t, at)
	return was
}

// ticker is a timer with a period, behind clock.Ticker's methods.
type ticker struct{ t *timer }

func (k ticker) C() <-chan time.Time { return k.t.ch }
func (k ticker) Stop()               { k.t.Stop() }
func (k ticker) Done()               { k.t.Done() }

// Reset is time.Ticker.Reset: the period becomes d, the next tick d from
// now; d must be positive.
func (k ticker) Reset(d time.Duration) {
	if d <= 0 {
		panic("clocktest: non-positive interval for Ticker.Reset")
	}
	k.t.c.mu.Lock()
	defer k.t.c.mu.Unlock()
	k.t.c.stopLocked(k.t)
	k.t.period = d
	k.t.c.armLocked(k.t, k.t.c.Now().Add(d))
}
