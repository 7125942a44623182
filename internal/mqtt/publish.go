package mqtt

// Messages out: the publisher sends the outbound queue in order, several
// publishes on the wire at once.

import (
	"errors"
	"fmt"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// publishWindow is how many QoS 1 publishes may wait for the broker's
// acknowledgement at once, as many as mosquitto allows (max_inflight_messages),
// so that a start's thousands of configs do not each cost a round trip.
// Order is kept: paho writes and resends them in the order they were stored.
const publishWindow = 20

// flight is a publish handed to paho, waiting for its acknowledgement.
type flight struct {
	m        outMsg
	tok      paho.Token
	gen      uint64    // the connection it was handed to
	deadline time.Time // PublishTimeout after it was handed over
}

// publisher sends queued messages in order while the session is up, up to
// publishWindow of them unacknowledged. After Close it sends what is queued
// if connected, waits for their acknowledgements and then stops; what it
// has not sent by then is given up.
func (c *Client) publisher() {
	defer c.wg.Done()
	defer close(c.flushed)
	p := &pipeline{c: c}
	defer p.stopTimers()
	var m outMsg     // taken from the queue
	holding := false // and not handed to paho
	defer func() {
		if holding {
			c.queued.Add(-1)
			m.release()
		}
		p.giveUp()
	}()
	flushing := false
	for {
		if !flushing {
			select {
			case <-c.stop:
				return
			default:
			}
		}
		p.settleDone()
		if p.n == publishWindow {
			if !p.waitOldest(nil, &flushing) {
				return
			}
			continue
		}
		var ok bool
		if m, ok = c.out.pop(); !ok {
			if p.n > 0 {
				// Take a new message as soon as one comes, or the oldest's
				// acknowledgement.
				if !p.waitOldest(c.out.notify, &flushing) {
					return
				}
				continue
			}
			if flushing {
				return // everything queued was sent
			}
			if c.out.takePeak() >= burstBytes {
				// A burst is sent and acknowledged, and the Client goes
				// idle: give its garbage back now (releaseMemory).
				c.releaseMemory()
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
		holding = true
		for !p.hand(m) {
			// Not up: what was handed over before m is acknowledged, or
			// was lost with the connection and paho sends it again after
			// the next connect, before anything newer (session.go).
			for p.n > 0 {
				if !p.waitOldest(nil, &flushing) {
					return
				}
			}
			if flushing {
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
		holding = false
	}
}

// pipeline is the publisher's window of publishes on the wire, a ring
// oldest first, and its timers (one of each, reused: nothing is allocated
// per message).
type pipeline struct {
	c       *Client
	win     [publishWindow]flight
	head, n int
	timer   *time.Timer
	tick    *time.Ticker
}

// hand gives m to paho when the session is up; false means "not up, try
// again after the next connect".
func (p *pipeline) hand(m outMsg) bool {
	c := p.c
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
	p.win[(p.head+p.n)%publishWindow] = flight{m: m, tok: tok, gen: gen, deadline: time.Now().Add(c.cfg.PublishTimeout)}
	p.n++
	return true
}

// settleDone settles the publishes at the front of the window that are
// acknowledged already.
func (p *pipeline) settleDone() {
	for p.n > 0 {
		tok := p.win[p.head].tok
		select {
		case <-tok.Done():
			p.settle(tok.Error())
		default:
			return
		}
	}
}

// waitOldest waits until the oldest publish on the wire is settled (its
// acknowledgement, PublishTimeout, its connection replaced: paho sends it
// again under a new token after reconnecting), or until more (when not
// nil) has a value. Close's flush sets *flushing meanwhile. false: the
// Client stops.
func (p *pipeline) waitOldest(more <-chan struct{}, flushing *bool) bool {
	c := p.c
	f := &p.win[p.head]
	wait := time.Until(f.deadline)
	if p.timer == nil {
		p.timer, p.tick = time.NewTimer(wait), time.NewTicker(50*time.Millisecond)
	} else {
		p.timer.Reset(wait)
		p.tick.Reset(50 * time.Millisecond)
	}
	defer p.stopTimers()
	flush := c.flush
	if *flushing {
		flush = nil
	}
	for {
		select {
		case <-f.tok.Done():
			p.settle(f.tok.Error())
			return true
		case <-p.timer.C:
			p.settle(fmt.Errorf("%w (%s)", errTimeout, c.cfg.PublishTimeout))
			return true
		case <-c.stop:
			return false
		case <-flush:
			*flushing = true
			flush = nil
		case <-more:
			return true
		case <-p.tick.C:
			if c.replaced(f.gen) {
				p.settle(errLost)
				return true
			}
		}
	}
}

func (p *pipeline) stopTimers() {
	if p.timer != nil {
		p.timer.Stop()
		p.tick.Stop()
	}
}

// settle takes the oldest publish off the window with its outcome.
func (p *pipeline) settle(err error) {
	c := p.c
	f := p.win[p.head]
	m := f.m
	p.win[p.head] = flight{}
	p.head = (p.head + 1) % publishWindow
	p.n--
	c.queued.Add(-1)
	switch {
	case errors.Is(err, errLost):
		// A QoS 1/2 message in flight when the connection dropped stays in
		// paho's store and is sent again on reconnect; QoS 0 is lost.
	case errors.Is(err, paho.ErrNotConnected):
		// Only after Close disconnected: not published, like the rest
		// of the queue then.
	case err != nil:
		c.publishErrors.Add(1)
		c.log.Warn().Err(err).Str("topic", m.topic).Msg("publish failed")
	default:
		c.published.Add(1)
	}
	if m.held == nil {
		return
	}
	if pt, ok := f.tok.(*paho.PublishToken); ok && m.qos > 0 && (err == nil || errors.Is(err, errLost)) {
		// Lost with its connection, or its token replaced by the one
		// under which paho sends it again after reconnecting (which
		// completes the old one): until paho's store lets go of it, it is
		// still to be acknowledged. An acknowledged one the store has
		// deleted already.
		c.store.hold(pt.MessageID(), m.held)
		return
	}
	m.release() // acknowledged, written, or given up
}

// giveUp gives up the publishes on the wire and those queued: the
// publisher stops.
func (p *pipeline) giveUp() {
	c := p.c
	for ; p.n > 0; p.n-- {
		c.queued.Add(-1)
		p.win[p.head].m.release()
		p.win[p.head] = flight{}
		p.head = (p.head + 1) % publishWindow
	}
	for _, m := range c.out.close() {
		c.queued.Add(-1)
		m.release()
	}
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
