package mqtt

// Messages in: paho hands them over in arrival order, each subscription's
// goroutine handles them and then acknowledges them through paho (the
// publisher that sends the outbound queue in order is publish.go).

import (
	"runtime/debug"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/topic"
)

// dispatch is paho's handler for every message, called on its router
// goroutine in arrival order, which it must not block: it queues the
// message for each matching subscription (or as pending) and drops it,
// counted and logged, when a queue is full.
//
// A message queued is work in hand (Config.Clock) until every handler it
// went to has returned and it is acknowledged (ack); one in the pending
// buffer is not, until a Subscribe queues it.
func (c *Client) dispatch(_ paho.Client, pm paho.Message) {
	c.received.Add(1)
	held := nop
	if c.counts {
		held = clock.Busy(c.cfg.Clock, "MQTT message on "+pm.Topic()+", not handled and acknowledged")
	}
	msg := &inMsg{Message: pm, ack: ack{msg: pm}}
	var matched [4]*subscription
	targets := matched[:0]
	c.mu.Lock()
	if c.stopping {
		// The workers stop: not handled, not acknowledged; the broker
		// sends it again to the next run.
		c.mu.Unlock()
		held()
		return
	}
	msg.gen = c.gen
	if c.bl.fence != "" && c.backlogTakes(pm) {
		// The fence, or the broker's backlog after too long away
		// (backlog.go): acknowledged, so that the broker forgets it.
		c.mu.Unlock()
		held()
		pm.Ack()
		return
	}
	for _, s := range c.subs {
		if topic.Matches(s.filter, pm.Topic()) {
			targets = append(targets, s)
		}
	}
	msg.ack.left.Store(int32(max(len(targets), 1)))
	if len(targets) == 0 {
		var oldest *inMsg
		if len(c.pending) == pendingMax {
			oldest = c.pending[0]
			copy(c.pending, c.pending[1:])
			c.pending = c.pending[:pendingMax-1]
		}
		c.pending = append(c.pending, msg)
		c.mu.Unlock()
		held()
		if oldest != nil {
			c.drop("pending", oldest) // its acknowledgement may wait for paho's writer: not under the lock
		}
		return
	}
	if c.counts {
		msg.ack.held = held // before a handler can see it
	}
	// Queued under the lock: a worker that stops takes (abandon) what
	// was queued before, and nothing is queued after.
	dropped := 0
	for _, s := range targets {
		select {
		case s.queue <- msg:
		default:
			dropped++ // its queue is full
		}
	}
	c.mu.Unlock()
	for range dropped {
		c.drop("inbound", msg)
	}
}

// drop gives up on a message: counted, logged, and acknowledged so that
// it does not hold a place in the broker's window.
func (c *Client) drop(queue string, m *inMsg) {
	c.logDrop(c.dropped.Add(1), queue, m.Topic())
	m.ack.done()
}

// ack acknowledges a message through paho (Message.Ack, nothing at
// QoS 0) once every subscription it went to has handled it, and then lets
// go of its work in hand (held).
type ack struct {
	left      atomic.Int32
	abandoned atomic.Bool // a subscription gave it up unhandled (Close)
	msg       paho.Message
	held      func() // nil when no clock counts the work in hand
}

// done: one subscription handled the message, or dropped it.
func (a *ack) done() {
	if a.left.Add(-1) == 0 {
		if !a.abandoned.Load() {
			a.msg.Ack()
		}
		if a.held != nil {
			a.held()
		}
	}
}

// abandon: one subscription's worker stopped before handling the message.
// It is not acknowledged: the broker sends it again to the next run.
func (a *ack) abandon() {
	a.abandoned.Store(true)
	a.done()
}

// work runs one subscription's handler for each queued message, and then
// acknowledges it. A QoS 1 message whose connection was lost before it
// was handled is handled all the same (the broker may have lost the
// session), and the broker's redelivery of it (DUP, same packet id) on the
// next connection is acknowledged without being handled again: handling
// both would put an older command after a newer one.
func (c *Client) work(s *subscription) {
	defer c.wg.Done()
	for {
		select {
		case <-c.stop:
			c.abandon(s)
			return
		case m := <-s.queue:
			c.mu.Lock()
			h := s.handler
			again := false
			switch {
			case m.Qos() == 0:
			case m.Duplicate() && c.redelivered[m.MessageID()]:
				again = true
				delete(c.redelivered, m.MessageID())
			case !m.Duplicate():
				delete(c.redelivered, m.MessageID()) // a new message under an id the broker freed
			}
			c.mu.Unlock()
			if !again {
				c.handle(h, s.filter, m)
			}
			if m.Qos() > 0 {
				c.mu.Lock()
				if m.gen != c.gen {
					c.redelivered[m.MessageID()] = true // paho drops its acknowledgement with the connection
				}
				c.mu.Unlock()
			}
			m.ack.done()
			if len(m.Payload()) >= bigPayload {
				c.releaseMemory()
			}
		}
	}
}

// abandon gives up the messages left in a stopped worker's queue. Queued
// under c.mu before the Client stopped (dispatch, Subscribe), they are all
// there once the lock is taken.
func (c *Client) abandon(s *subscription) {
	var left []*inMsg
	c.mu.Lock()
	for len(s.queue) > 0 {
		left = append(left, <-s.queue)
	}
	c.mu.Unlock()
	for _, m := range left {
		m.ack.abandon()
	}
}

// bigPayload is the size from which a message, once handled, makes the
// Client return memory to the system: paho reads every packet whole, and
// the scavenger would leave such pages resident for minutes.
const bigPayload = 1 << 20

// burstBytes is the size of a burst of publishes (a start's discovery
// configs) after which the Client returns memory to the system once all of
// it is acknowledged: the idle daemon would otherwise keep the burst's
// garbage resident until the forced collection two minutes later.
const burstBytes = 256 << 10

// releaseEvery spaces the releases during a stream of large messages.
const releaseEvery = time.Second

// releaseMemory returns freed memory to the operating system soon: at once
// when none was returned in the last releaseEvery, else at the end of it,
// once for all the messages of that second.
func (c *Client) releaseMemory() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.releasing {
		return
	}
	c.releasing = true
	clk := clock.Or(c.cfg.Clock)
	wait := max(c.released.Add(releaseEvery).Sub(clk.Now()), 0)
	clk.AfterFunc(wait, func() {
		debug.FreeOSMemory()
		c.mu.Lock()
		c.releasing, c.released = false, clk.Now()
		c.mu.Unlock()
	})
}

func (c *Client) handle(h Handler, filter string, m *inMsg) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error().Interface("panic", r).Str("filter", filter).Str("topic", m.Topic()).Msg("message handler panicked; message skipped")
		}
	}()
	h(m.Topic(), m.Payload(), m.Retained())
}

// logDrop logs a dropped message, at most 5 at once and one a second: the
// total in each line counts the ones not logged.
func (c *Client) logDrop(n uint64, queue, topic string) {
	if !c.dropLog.Allow() {
		return
	}
	if len(topic) > 200 {
		topic = topic[:200] + "…"
	}
	c.log.Warn().Str("queue", queue).Str("topic", topic).Uint64("dropped_total", n).Msg("MQTT queue full; message dropped")
}

// replaced reports whether the session gen was replaced by a reconnect.
func (c *Client) replaced(gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen != gen
}
