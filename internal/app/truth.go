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
	// cloudGrace is how long every request may fail before the cloud counts as
	// unreachable, so that /healthz and the Cloud sensor react within a minute.
	cloudGrace = 20 * time.Second
	// saveDelay is how long after a change the state directory is written:
	// changes within it go together, and a kill loses at most this much.
	saveDelay = 8 * time.Second
	// statsDelay gathers the changes of bridge/stats: every read changes
	// requests_today, and one message a second is enough.
	statsDelay = time.Second
)

// failingAfter requests in a row that never reached the cloud make it
// unreachable before the grace ends: a read and its retries failing.
const failingAfter = 3

// notifier wakes its listeners without blocking, once per gathering, so that
// frequent changes (17 a second at 1000 devices) cost an atomic each, not a wake.
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

// exposedAddr reports whether HTTP_ADDR listens on every interface, which
// opens /metrics and /healthz to the network.
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
