package app

import (
	"net"
	"sync/atomic"
	"time"

	"cloud2mqtt/internal/clock"
)

// What the bridge says of itself: the cloud's health, figures published
// when they change, and the state directory written within seconds.

// The daemon's own delays, on Main.Clock (tests jump it over them).
const (
	// cloudGrace is how long every request may fail before the cloud
	// counts as unreachable (fewer if failingAfter requests failed in a
	// row first): /healthz turns 503 and the bridge's Cloud sensor off
	// well within a minute of the cloud going away.
	cloudGrace = 20 * time.Second
	// saveDelay is how long after a change the state directory is
	// written: changes within it are written together, and a kill loses
	// at most this much (plus the write).
	saveDelay = 8 * time.Second
	// statsDelay gathers the changes of bridge/stats: every read changes
	// requests_today, and one message a second is enough.
	statsDelay = time.Second
)

// failingAfter requests in a row that never reached the cloud make it
// unreachable before the grace ends: a read and its retries failing.
const failingAfter = 3

// notifier wakes its listeners without blocking, once per gathering: a
// listener woken takes its time (a delay) and calls done before it looks,
// and the changes until then cost an atomic each, not a wake (every read
// is a change; at 1000 devices that is 17 a second).
type notifier []*listener

type listener struct {
	c       *clock.Wake
	pending atomic.Bool
}

// done re-arms the listener: the next change wakes it again. Call it
// before looking at what changed.
func (l *listener) done() { l.pending.Store(false) }

func newNotifier(clk clock.Clock, whats ...string) notifier {
	out := make(notifier, len(whats))
	for i, what := range whats {
		out[i] = &listener{c: clock.NewWake(clk, what)}
	}
	return out
}

func (n notifier) notify() {
	for _, l := range n {
		if l.pending.Swap(true) {
			continue
		}
		l.c.Notify()
	}
}

// exposedAddr reports whether an HTTP_ADDR listens on every interface (no
// host, 0.0.0.0 or ::), so that /metrics and /healthz are open to the
// network.
func exposedAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}
