package bridge

import (
	"context"
	"strconv"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/topic"
)

// HoldFor is how long a command that arrives before the first device list
// waits for it; the broker delivers queued commands as soon as it connects.
const HoldFor = 2 * time.Minute

// Bounds of what waits for the first device list; what comes on top is
// answered with 503 at once.
const (
	heldMax      = 1000
	heldMaxBytes = 8 << 20
)

// heldMessage is a device message that arrived before the first device list.
type heldMessage struct {
	route   topic.Route
	payload []byte
	at      time.Time
}

// hold keeps a device message for later while the first device list is not in
// (or held ones are being replayed, to keep order), and reports whether it did.
func (b *Bridge) hold(r topic.Route, payload []byte) bool {
	b.heldMu.Lock()
	if b.released {
		b.heldMu.Unlock()
		return false
	}
	if len(b.held) == 0 && b.reg.Listed() {
		b.released = true // listed before any message had to wait
		b.heldMu.Unlock()
		return false
	}
	if n := len(b.held); n >= heldMax || b.heldBytes+len(payload) > heldMaxBytes {
		b.heldMu.Unlock()
		// A flood before the list: answered at once rather than kept.
		b.rejectAs(r.ID, false, capability.Device{SKU: "?", Device: clip(r.ID, maxEchoedID)}, r.Instance, clipPayload(payload),
			codedError{"command not applied: " + strconv.Itoa(n) + " commands already wait for the device list; send it again once the bridge has read the list", 503})
		return true
	}
	b.held = append(b.held, heldMessage{r, payload, time.Now()})
	b.heldBytes += len(payload)
	if len(b.held) == 1 {
		b.log.Info().Str("device", r.ID).Msg("command held until the device list is read")
	}
	b.heldMu.Unlock()
	select {
	case b.heldKick <- struct{}{}:
	default:
	}
	return true
}

// Run releases the held messages once the first device list is in, in the
// order they arrived, and answers on <id>/error those that waited HoldFor
// in vain. It returns when ctx ends, answering what is still held.
func (b *Bridge) Run(ctx context.Context) error {
	listed := b.reg.FirstList()
	timer := time.NewTimer(HoldFor)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			b.expire(time.Time{}, "the bridge is shutting down")
			return nil
		case <-listed:
			b.release()
			listed = nil
		case <-b.heldKick:
		case <-timer.C:
			b.expire(time.Now().Add(-HoldFor), "the device list has not been read in "+HoldFor.String()+"; is the cloud reachable? Send the command again")
		}
		b.heldMu.Lock()
		next := HoldFor
		if len(b.held) > 0 {
			next = max(time.Until(b.held[0].at.Add(HoldFor)), time.Millisecond)
		}
		b.heldMu.Unlock()
		timer.Reset(next)
	}
}

// release replays the held messages in order; messages arriving meanwhile
// are held behind them until none is left.
func (b *Bridge) release() {
	for {
		b.heldMu.Lock()
		q := b.held
		b.held, b.heldBytes = nil, 0
		if len(q) == 0 {
			b.released = true
			b.heldMu.Unlock()
			return
		}
		b.heldMu.Unlock()
		for _, m := range q {
			b.handleDevice(m.route, m.payload)
		}
	}
}

// expire answers the held messages that arrived before cutoff (all of them
// for the zero time) on <id>/error with code 503.
func (b *Bridge) expire(cutoff time.Time, why string) {
	b.heldMu.Lock()
	var gone []heldMessage
	keep := b.held[:0]
	for _, m := range b.held {
		if cutoff.IsZero() || m.at.Before(cutoff) {
			gone = append(gone, m)
		} else {
			keep = append(keep, m)
		}
	}
	b.held = keep
	b.heldBytes = 0
	for _, m := range keep {
		b.heldBytes += len(m.payload)
	}
	b.heldMu.Unlock()
	for _, m := range gone {
		b.rejectAs(m.route.ID, false, capability.Device{SKU: "?", Device: m.route.ID}, m.route.Instance, m.payload, codedError{"command not applied: " + why, 503})
	}
}
