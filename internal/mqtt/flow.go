package mqtt

// Messages in and out: handlers that never block paho, and the publisher
// that sends the outbound queue in order.

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// dispatch is paho's handler for every message: it only queues.
func (c *Client) dispatch(_ paho.Client, m paho.Message) {
	c.received.Add(1)
	msg := inMsg{topic: m.Topic(), payload: m.Payload()}
	c.mu.Lock()
	defer c.mu.Unlock()
	matched := false
	for _, s := range c.subs {
		if !match(s.filter, msg.topic) {
			continue
		}
		matched = true
		select {
		case s.queue <- msg:
		default:
			c.logDrop(c.dropped.Add(1), "inbound", msg.topic)
		}
	}
	if matched {
		return
	}
	if len(c.pending) == pendingMax {
		c.logDrop(c.dropped.Add(1), "pending", c.pending[0].topic)
		copy(c.pending, c.pending[1:])
		c.pending = c.pending[:pendingMax-1]
	}
	c.pending = append(c.pending, msg)
}

// work runs one subscription's handler for each queued message.
func (c *Client) work(s *subscription) {
	defer c.wg.Done()
	for {
		select {
		case <-c.stop:
			return
		case m := <-s.queue:
			c.mu.Lock()
			h := s.handler
			c.mu.Unlock()
			c.handle(h, s.filter, m)
			if len(m.payload) >= bigPayload {
				c.releaseMemory()
			}
		}
	}
}

// bigPayload is the size from which a message, once handled, makes the
// Client return memory to the operating system. paho reads every packet
// whole whatever its size (a broker may deliver up to 256 MB), twice over
// while it decodes it; left to the runtime's background scavenger, the
// pages of a few such messages stay resident for minutes.
const bigPayload = 1 << 20

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
	wait := max(time.Until(c.released.Add(releaseEvery)), 0)
	time.AfterFunc(wait, func() {
		debug.FreeOSMemory()
		c.mu.Lock()
		c.releasing, c.released = false, time.Now()
		c.mu.Unlock()
	})
}

func (c *Client) handle(h func(string, []byte), filter string, m inMsg) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error().Interface("panic", r).Str("filter", filter).Str("topic", m.topic).Msg("message handler panicked; message skipped")
		}
	}()
	h(m.topic, m.payload)
}

// publisher sends queued messages in order while the session is up. After
// Close it sends what is queued if connected and then stops.
func (c *Client) publisher() {
	defer c.wg.Done()
	defer close(c.flushed)
	flushing := false
	for {
		if !flushing {
			select {
			case <-c.stop:
				return
			default:
			}
		}
		m, ok := c.out.pop()
		if !ok {
			if flushing {
				return // everything queued was sent
			}
			select {
			case <-c.stop:
				return
			case <-c.flush:
				flushing = true
			case <-c.out.notify:
			}
			continue
		}
		for !c.send(m) {
			if flushing {
				c.queued.Add(-1)
				c.log.Warn().Int("unsent", c.out.Len()+1).Msg("closing while disconnected: queued messages are not published")
				return
			}
			c.mu.Lock()
			ready := c.ready
			c.mu.Unlock()
			select {
			case <-ready:
			case <-c.stop:
				return
			case <-c.flush:
				flushing = true
			}
		}
		c.queued.Add(-1)
	}
}

// send publishes m when the session is up and waits for the broker's
// acknowledgement; false means "not up, try again after the next connect".
func (c *Client) send(m outMsg) bool {
	c.mu.Lock()
	ready, gen := c.ready, c.gen
	c.mu.Unlock()
	select {
	case <-ready:
	default:
		return false
	}
	if !c.pc.IsConnectionOpen() {
		// Lost, and paho has not yet called the reconnecting handler that
		// closes the gate: wait a moment rather than hand paho a message
		// it would resend before the next birth.
		select {
		case <-c.stop:
		case <-time.After(10 * time.Millisecond):
		}
		return false
	}
	tok := c.pc.Publish(m.topic, m.qos, m.retained, m.payload)
	switch err := c.wait(tok, gen); {
	case errors.Is(err, errLost):
		// A QoS 1/2 message in flight when the connection dropped stays in
		// paho's store and is sent again on reconnect; QoS 0 is lost.
		return true
	case errors.Is(err, paho.ErrNotConnected):
		return false
	case errors.Is(err, ErrClosed):
		return true
	case err != nil:
		c.publishErrors.Add(1)
		c.log.Warn().Err(err).Str("topic", m.topic).Msg("publish failed")
		return true
	}
	c.published.Add(1)
	return true
}

// wait waits for tok until it completes, PublishTimeout passes, the
// connection of generation gen is lost (paho keeps an unacknowledged QoS 1
// message and sends it again, under a new token, after reconnecting) or the
// Client stops.
func (c *Client) wait(tok paho.Token, gen uint64) error {
	timer := time.NewTimer(c.cfg.PublishTimeout)
	defer timer.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tok.Done():
			return tok.Error()
		case <-timer.C:
			return fmt.Errorf("%w (%s)", errTimeout, c.cfg.PublishTimeout)
		case <-c.stop:
			return ErrClosed
		case <-tick.C:
			if c.replaced(gen) {
				return errLost
			}
		}
	}
}

// logDrop logs the first dropped message and then every 100th.
func (c *Client) logDrop(n uint64, queue, topic string) {
	if n == 1 || n%100 == 0 {
		c.log.Warn().Str("queue", queue).Str("topic", topic).Uint64("dropped_total", n).Msg("MQTT queue full; message dropped")
	}
}

// replaced reports whether the session gen was replaced by a reconnect.
func (c *Client) replaced(gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen != gen
}
