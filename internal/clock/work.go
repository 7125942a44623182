package clock

import (
	"net/netip"
	"sync"
)

// Work in hand. A test that jumps a clock over the daemon's waits
// (clocktest) must jump only when the daemon has nothing left to do at the
// clock's instant: every timer that fired handled, every wake-up taken,
// every request answered, every datagram on its way taken in. The parts
// say so through the functions below; on a clock that does not keep
// count (Real) they cost nothing and do nothing.
//
// The rule that makes it exact: work is handed on before it is let go. A
// loop woken by a Wake takes its work (Take) before it looks at what
// changed and lets it go once what it set off holds work of its own (a
// request on the wire, a publish unacknowledged, another loop's Wake).

// counter is a clock that keeps count of the work in hand.
type counter interface {
	Busy(what string) (done func())
	Sent(to netip.AddrPort, payload []byte)
	Arrived(at netip.AddrPort, payload []byte) (done func())
	Listening(at netip.AddrPort) (stop func())
}

func nop() {}

// Busy marks work in hand on c until done is called (once).
func Busy(c Clock, what string) (done func()) {
	if w, ok := c.(counter); ok {
		return w.Busy(what)
	}
	return nop
}

// Sent says a datagram is on its way to an address of this machine. If a
// listener said it takes datagrams there (Listening), the datagram is
// work in hand until that listener reports it with Arrived or stops.
func Sent(c Clock, to netip.AddrPort, payload []byte) {
	if w, ok := c.(counter); ok {
		w.Sent(to, payload)
	}
}

// Arrived says a datagram was taken in at at: it is work in hand, now the
// receiver's, until done.
func Arrived(c Clock, at netip.AddrPort, payload []byte) (done func()) {
	if w, ok := c.(counter); ok {
		return w.Arrived(at, payload)
	}
	return nop
}

// Listening says a socket takes datagrams at at (an unspecified address:
// on every address, at its port) until stop.
func Listening(c Clock, at netip.AddrPort) (stop func()) {
	if w, ok := c.(counter); ok {
		return w.Listening(at)
	}
	return nop
}

// Wake is a loop's wake-up call. Notify never blocks; a notification is
// work in hand until the loop, woken by C, takes it (Take) and lets it go.
// Notifications that come before the loop takes them are one wake-up.
type Wake struct {
	c    chan struct{}
	clk  Clock
	what string

	mu   sync.Mutex
	held func() // the work of the notifications not yet taken
}

// NewWake is a Wake on c; what names its work for a test that waits.
func NewWake(c Clock, what string) *Wake {
	return &Wake{c: make(chan struct{}, 1), clk: Or(c), what: what}
}

// C is where the loop is woken.
func (w *Wake) C() <-chan struct{} { return w.c }

// Notify wakes the loop. Call it after the change it announces is made.
func (w *Wake) Notify() {
	w.mu.Lock()
	if w.held == nil {
		w.held = Busy(w.clk, w.what)
	}
	w.mu.Unlock()
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// Take is the loop's, once woken and before it looks at what changed: it
// returns the end of the work of every notification so far, for the loop
// to call once it has handled them.
func (w *Wake) Take() (done func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.held
	w.held = nil
	if h == nil {
		return nop
	}
	return h
}
