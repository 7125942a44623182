package mqtt

// The broker's backlog: what it kept for the bridge's session while the
// bridge was away. MQTT 3.1.1 gives a message no age, so a "heater on" sent
// hours earlier would run on return; away longer than Config.QueuedMaxAge
// (or for an unknown time) the Client drops and acknowledges all of it.
// A fence, a random payload the Client publishes to <state topic>/fence,
// marks the backlog's end, since mosquitto sends the SUBACK in its middle.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"cloud2mqtt/internal/clock"
)

const (
	// fenceWait is how long the Client waits for its fence before it
	// publishes it again (the broker drops a message for a client whose
	// queue is full), fenceTries how often; then it gives up judging
	// (the broker's ACL may refuse the fence) and handles what comes.
	fenceWait  = 2 * time.Second
	fenceTries = 5
	// seenEvery is how often the Client writes that it is still connected:
	// after a crash it takes itself as away up to this much longer than it
	// was. On a 5 s grid, the read grid an idle daemon's timers share.
	seenEvery = 30 * time.Second
	seenGrid  = 5 * time.Second
	// backlogTopics is how many of the dropped messages' topics the
	// warning names.
	backlogTopics = 10
)

// backlog is the Client's judgement of the broker's backlog, guarded by
// Client.mu but for wake.
type backlog struct {
	fence   string    // the fence's topic; "" when off (no Config.Record)
	caught  time.Time // the last instant connected with nothing older waiting; zero: unknown
	through bool      // this connection's backlog is behind it: caught may move on
	open    bool      // what arrives now is the backlog: dropped
	fresh   bool      // the broker said it kept no session for the id: no backlog
	away    time.Duration
	nonce   string        // the fence's payload on this connection
	back    chan struct{} // closed by dispatch when the fence is back
	dropped int           // since the last warning
	topics  []string      // the first backlogTopics distinct ones dropped
	wake    *clock.Wake   // caught moved: the record's writer saves it
}

// unknownAway is backlog.away when the Client does not know how long it
// was away.
const unknownAway = time.Duration(-1)

// attemptBacklog judges, before a connection attempt (paho's notification,
// synchronous), whether what the broker sends first on it is a backlog to
// drop.
func (c *Client) attemptBacklog() {
	b := &c.bl
	if b.fence == "" {
		return
	}
	now := c.cfg.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	b.away = unknownAway
	if !b.caught.IsZero() && !now.Before(b.caught) {
		b.away = now.Sub(b.caught)
	}
	b.open = b.away == unknownAway || b.away > c.cfg.QueuedMaxAge
	b.through, b.fresh = false, false
	b.back = nil
}

// backlogTakes is dispatch's, under c.mu: whether m is the fence or part of
// a backlog to drop; the caller acknowledges it. A retained message (sent
// because a subscription was made) is no backlog. Dropped messages are
// counted for the warning but those on the state topic, the bridge's own.
func (c *Client) backlogTakes(m paho.Message) bool {
	b := &c.bl
	if m.Topic() == b.fence {
		if b.back != nil && !m.Retained() && string(m.Payload()) == b.nonce {
			b.open = false // what comes after it is new
			close(b.back)
			b.back = nil
		}
		return true // a fence of another connection, or someone else's
	}
	if !b.open || m.Retained() {
		return false
	}
	if m.Topic() == c.cfg.StateTopic {
		return true // the bridge's own will or "offline" (a subscriber of it): stale, and no command
	}
	b.dropped++
	if len(b.topics) < backlogTopics {
		if t := clip(m.Topic()); !slices.Contains(b.topics, t) {
			b.topics = append(b.topics, t)
		}
	}
	return true
}

// clearBacklog is the session's, once subscribed on connection gen: when
// the backlog is to be dropped, it publishes the fence and waits until it
// is back, so that the bridge says "online" only once the backlog is
// behind it; then it logs what was dropped. No fence when the broker said
// it kept no session (a new id, an expired session): there is no backlog.
func (c *Client) clearBacklog(gen uint64) {
	b := &c.bl
	if b.fence == "" {
		return
	}
	c.mu.Lock()
	if c.gen != gen {
		c.mu.Unlock()
		return
	}
	if !b.open {
		c.caughtUpLocked(c.cfg.Clock.Now())
		c.mu.Unlock()
		return
	}
	if b.fresh {
		c.mu.Unlock()
		c.endBacklog(gen, "") // nothing was kept: no fence
		return
	}
	var n [8]byte
	rand.Read(n[:])
	b.nonce = hex.EncodeToString(n[:])
	back := make(chan struct{})
	b.back = back
	c.mu.Unlock()
	done := clock.Busy(c.cfg.Clock, "MQTT: the broker's backlog, until the fence is back")
	defer done()

	if err := c.subscribe(b.fence, 1, gen); err != nil {
		switch {
		case c.replaced(gen):
			// Lost: the next connection judges again.
		case errors.Is(err, errRefused):
			c.endBacklog(gen, "the broker refused the subscription to "+b.fence+": let the bridge's user subscribe and publish to it")
		default:
			c.endBacklog(gen, "the subscription to "+b.fence+" was not confirmed: "+err.Error())
		}
		return
	}
	tick := time.NewTicker(50 * time.Millisecond) // the connection's loss shows as a new gen
	defer tick.Stop()
	wait := c.cfg.Clock.NewTimer(fenceWait)
	defer wait.Stop()
	for try := 1; ; try++ {
		wait.Reset(fenceWait) // armed before the fence can be seen
		c.pc.Publish(b.fence, 1, false, b.nonce)
	waiting:
		for {
			select {
			case <-back:
				c.endBacklog(gen, "")
				return
			case <-wait.C():
				wait.Done()
				break waiting
			case <-tick.C:
				if c.replaced(gen) {
					return
				}
			case <-c.stop:
				return
			}
		}
		if try == fenceTries {
			c.endBacklog(gen, "the fence published on "+b.fence+" did not come back: let the bridge's user subscribe and publish to it")
			return
		}
	}
}

// endBacklog ends the backlog of connection gen: caught up, and one
// warning for what was dropped (why: a problem that ended it early).
func (c *Client) endBacklog(gen uint64, why string) {
	b := &c.bl
	c.mu.Lock()
	if c.gen != gen {
		c.mu.Unlock()
		return
	}
	b.open, b.back = false, nil
	c.caughtUpLocked(c.cfg.Clock.Now())
	dropped, topics, away := b.dropped, b.topics, b.away
	b.dropped, b.topics = 0, nil
	c.mu.Unlock()
	if dropped == 0 && why == "" {
		return
	}
	awayText := "unknown (no record of when it was last connected: STATE_DIR is not set, or the client id is new to it)"
	if away != unknownAway {
		awayText = away.Round(time.Second).String()
	}
	ev := c.log.Warn().Int("dropped", dropped).Strs("topics", topics).Str("offline", awayText).
		Str("max_age", c.cfg.QueuedMaxAge.String())
	if why != "" {
		ev.Str("problem", why).Msg("stopped dropping what the broker had kept for the bridge while it was offline " +
			"longer than MQTT_QUEUED_COMMAND_MAX_AGE: what comes now is carried out, older or not")
		return
	}
	ev.Msg("dropped the commands the broker had kept for the bridge while it was offline longer than " +
		"MQTT_QUEUED_COMMAND_MAX_AGE: MQTT gives them no age, so any may be that old; send again what is still wanted")
}

// caughtUpLocked records that the Client is connected with nothing older
// waiting at now, for the record's writer. Called with c.mu held.
func (c *Client) caughtUpLocked(now time.Time) {
	b := &c.bl
	b.through = true
	b.caught = now
	b.wake.Notify()
}

// lostBacklog is the reconnecting handler's, once the loss is reported
// (at, on Config.Clock; zero when it was not): a connection whose backlog
// was behind it was connected until it was lost.
func (c *Client) lostBacklog(at time.Time) {
	b := &c.bl
	if b.fence == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if b.through && !at.IsZero() && at.After(b.caught) {
		b.caught = at
		b.wake.Notify()
	}
	b.through = false
}

// keepRecord writes the instant the Client was last caught up to its
// Record when it moves, and moves it every seenEvery while connected.
func (c *Client) keepRecord() {
	defer c.wg.Done()
	clk := c.cfg.Clock
	next := func() time.Time { return clock.Ceil(clk.Now().Add(seenEvery), seenGrid) }
	t := clk.NewTimer(seenEvery)
	t.ResetAt(next())
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.bl.wake.C():
			done := c.bl.wake.Take()
			c.saveRecord()
			done()
		case <-t.C():
			c.touch()
			c.saveRecord()
			t.ResetAt(next())
			t.Done()
		}
	}
}

// touch moves caught to now while connected with the backlog behind.
func (c *Client) touch() {
	if !c.pc.IsConnectionOpen() {
		return
	}
	now := c.cfg.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bl.through && now.After(c.bl.caught) {
		c.bl.caught = now
	}
}

// saveRecord writes caught to the Record.
func (c *Client) saveRecord() {
	c.mu.Lock()
	at := c.bl.caught
	c.mu.Unlock()
	if !at.IsZero() {
		c.cfg.Record.save(c.cfg.ClientID, at)
	}
}

// clip shortens a topic for a log line (a topic may be 64 KiB).
func clip(topic string) string {
	if len(topic) > 200 {
		return topic[:200] + "…"
	}
	return topic
}
