package clocktest

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// The work in hand that the code under test reports (clock.Busy, a timer's
// value not yet handled, a datagram on its way): a test jumps the clock
// only when there is none (WaitIdle), so that nothing due at one instant is
// cut short by the next, however slow the machine.

// flight is a datagram sent to a listener that has not taken it in.
type flight struct {
	to      netip.AddrPort
	payload []byte
}

// addLocked changes the count of work in hand by n.
func (c *Clock) addLocked(n int) {
	if n == 0 {
		return
	}
	c.busy += n
	if c.busy < 0 {
		panic("clocktest: more work let go than was in hand")
	}
	if c.busy == 0 {
		close(c.idle)
		c.idle = make(chan struct{})
	}
}

// Busy is clock.Busy's on c: what is in hand until done (further calls of
// done do nothing).
func (c *Clock) Busy(what string) (done func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.busyLocked(what)
}

func (c *Clock) busyLocked(what string) (done func()) {
	c.nextHold++
	id := c.nextHold
	c.holds[id] = what
	c.addLocked(1)
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.holds[id]; ok {
			delete(c.holds, id)
			c.addLocked(-1)
		}
	}
}

// covers says whether a socket listening at l takes a datagram sent to to.
func covers(l, to netip.AddrPort) bool {
	return l.Port() == to.Port() && (l.Addr().IsUnspecified() || l.Addr().Unmap() == to.Addr().Unmap())
}

func (c *Clock) listenedLocked(to netip.AddrPort) bool {
	for l, n := range c.listeners {
		if n > 0 && covers(l, to) {
			return true
		}
	}
	return false
}

// Sent is clock.Sent's on c: a datagram to a listener is in hand until it
// arrives (a datagram to nobody is not).
func (c *Clock) Sent(to netip.AddrPort, payload []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.listenedLocked(to) {
		return
	}
	c.flights = append(c.flights, flight{to: to, payload: bytes.Clone(payload)})
	c.addLocked(1)
}

// Arrived is clock.Arrived's on c: the datagram's flight ends, and its
// handling is in hand until done.
func (c *Clock) Arrived(at netip.AddrPort, payload []byte) (done func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	done = c.busyLocked("a datagram taken in at " + at.String())
	i := slices.IndexFunc(c.flights, func(f flight) bool { return covers(at, f.to) && bytes.Equal(f.payload, payload) })
	if i >= 0 {
		c.flights = slices.Delete(c.flights, i, i+1)
		c.addLocked(-1)
	}
	return done
}

// Listening is clock.Listening's on c. Once stopped, the datagrams on
// their way there that no other listener takes are lost, as the kernel
// loses them.
func (c *Clock) Listening(at netip.AddrPort) (stop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listeners[at]++
	stopped := false
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if stopped {
			return
		}
		stopped = true
		if c.listeners[at]--; c.listeners[at] <= 0 {
			delete(c.listeners, at)
		}
		n := len(c.flights)
		c.flights = slices.DeleteFunc(c.flights, func(f flight) bool { return !c.listenedLocked(f.to) })
		c.addLocked(len(c.flights) - n)
	}
}

// Idle says whether no work is in hand.
func (c *Clock) Idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.busy == 0
}

// WaitIdle waits until no work is in hand, or ctx ends; then it returns
// ctx's error naming the work still in hand.
func (c *Clock) WaitIdle(ctx context.Context) error {
	for {
		c.mu.Lock()
		busy, idle := c.busy, c.idle
		c.mu.Unlock()
		if busy == 0 {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return fmt.Errorf("%w with work in hand: %s", ctx.Err(), strings.Join(c.Holders(), "; "))
		}
	}
}

// Holders names the work in hand, for a test's message.
func (c *Clock) Holders() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, what := range c.holds {
		out = append(out, what)
	}
	for t := range c.held {
		{
			out = append(out, fmt.Sprintf("%d unhandled value(s) of the timer made at %s", t.held, t.site))
		}
	}
	for _, f := range c.flights {
		out = append(out, fmt.Sprintf("a datagram of %d bytes on its way to %s", len(f.payload), f.to))
	}
	slices.Sort(out)
	return out
}

// caller is where the code under test made a timer: the first frame
// outside this package.
func caller() string {
	pcs := make([]uintptr, 8)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if !strings.Contains(f.Function, "clocktest.") {
			return fmt.Sprintf("%s:%d", filepath.Base(f.File), f.Line)
		}
		if !more {
			return "?"
		}
	}
}

// IdleWithin waits until no work is in hand, failing t after within with
// when and what is still in hand.
func (c *Clock) IdleWithin(t testing.TB, within time.Duration, when string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := c.WaitIdle(ctx); err != nil {
		t.Fatalf("%s: %v", when, err)
	}
}
