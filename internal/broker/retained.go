package broker

// mochi v2.7.9 scans its retained-message index unlocked after a SUBACK
// while storing a retained message writes it: retainedHook makes the two
// exclude each other. Storing waits at most indexWait, so that a subscriber
// that stops reading cannot hold up the bridge's publishes.

import (
	"sync"
	"sync/atomic"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// indexWait bounds how long storing a retained message waits for the
// scans of subscriptions being made.
const indexWait = 200 * time.Millisecond

type retainedHook struct {
	mochi.HookBase
	index indexLock
	// stuck: the last store gave up waiting (a subscriber is stuck); the
	// next ones only try.
	stuck atomic.Bool
	// holding has the clients whose goroutine holds the index, and how: a
	// client's packets are handled, and its will sent, on its own
	// goroutine, one at a time.
	holding sync.Map // *mochi.Client → bool (true: for storing)
}

func (h *retainedHook) ID() string { return "cloud2mqtt-retained-index" }

func (h *retainedHook) Provides(b byte) bool {
	switch b {
	case mochi.OnPacketSent, mochi.OnPacketProcessed, mochi.OnPublish, mochi.OnWill, mochi.OnRetainMessage:
		return true
	}
	return false
}

// OnPacketSent takes the index for scanning once a SUBACK is out: mochi
// then scans it for the retained messages of each filter.
func (h *retainedHook) OnPacketSent(cl *mochi.Client, pk packets.Packet, _ []byte) {
	if pk.FixedHeader.Type == packets.Suback {
		h.index.scan()
		h.holding.Store(cl, false)
	}
}

// OnPublish takes the index for storing before mochi stores a retained
// message (the next thing it does with it).
func (h *retainedHook) OnPublish(cl *mochi.Client, pk packets.Packet) (packets.Packet, error) {
	if pk.FixedHeader.Retain {
		h.store(cl)
	}
	return pk, nil
}

// OnWill takes the index for storing before mochi stores a retained will.
// A will with a delay is stored later, from mochi's event loop, unguarded:
// Home Assistant's and the bridge's wills have none.
func (h *retainedHook) OnWill(cl *mochi.Client, w mochi.Will) (mochi.Will, error) {
	if w.Retain && w.WillDelayInterval == 0 {
		h.store(cl)
	}
	return w, nil
}

// OnRetainMessage releases the index once the message is stored.
func (h *retainedHook) OnRetainMessage(cl *mochi.Client, _ packets.Packet, _ int64) {
	h.release(cl)
}

// OnPacketProcessed releases the index at the end of a SUBSCRIBE, and of a
// retained PUBLISH mochi did not store after all.
func (h *retainedHook) OnPacketProcessed(cl *mochi.Client, pk packets.Packet, _ error) {
	if t := pk.FixedHeader.Type; t == packets.Subscribe || t == packets.Publish {
		h.release(cl)
	}
}

func (h *retainedHook) store(cl *mochi.Client) {
	wait := indexWait
	if h.stuck.Load() {
		wait = 0
	}
	got := h.index.store(wait)
	h.stuck.Store(!got)
	if got {
		h.holding.Store(cl, true)
	}
}

func (h *retainedHook) release(cl *mochi.Client) {
	v, ok := h.holding.LoadAndDelete(cl)
	if !ok {
		return
	}
	if v.(bool) {
		h.index.stored()
	} else {
		h.index.scanned()
	}
}

// indexLock is a readers–writer lock whose writer waits a bounded time.
type indexLock struct {
	mu      sync.Mutex
	scans   int           // scans under way
	storing bool          // a store under way
	changed chan struct{} // closed (and replaced) at each release
}

// scan waits for the store under way, if any, and registers a scan.
func (l *indexLock) scan() {
	for {
		l.mu.Lock()
		if !l.storing {
			l.scans++
			l.mu.Unlock()
			return
		}
		ch := l.changedLocked()
		l.mu.Unlock()
		<-ch
	}
}

// store waits at most wait for the scans and store under way to end and
// registers a store; false if they did not end in time.
func (l *indexLock) store(wait time.Duration) bool {
	var timeout <-chan time.Time
	for {
		l.mu.Lock()
		if !l.storing && l.scans == 0 {
			l.storing = true
			l.mu.Unlock()
			return true
		}
		ch := l.changedLocked()
		l.mu.Unlock()
		if timeout == nil {
			if wait <= 0 {
				return false
			}
			t := time.NewTimer(wait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-ch:
		case <-timeout:
			return false
		}
	}
}

func (l *indexLock) scanned() { l.release(func() { l.scans-- }) }
func (l *indexLock) stored()  { l.release(func() { l.storing = false }) }

func (l *indexLock) release(update func()) {
	l.mu.Lock()
	update()
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	l.mu.Unlock()
}

func (l *indexLock) changedLocked() chan struct{} {
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed
}
