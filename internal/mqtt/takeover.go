package mqtt

// Another client with our client id. The broker allows one connection per
// client id: when a second client connects with it, the broker closes the
// first one's connection (MQTT 3.1.1 §3.1.4; paho speaks 3.1.1, which gives
// no reason, and mosquitto only logs "already connected, closing old
// connection"). Two bridges with the same id, each reconnecting at once,
// knock each other off in a loop. What the Client sees is its connection
// closed by the broker within seconds of its opening, again and again, and
// each reconnection accepted at its first attempt (a broker that restarts
// refuses one at least): after conflictDrops such drops in a row it says
// so, naming MQTT_CLIENT_ID, and waits ConflictBackoff (doubling while it
// goes on) before it connects again, so that the other client keeps the id
// instead of both fighting for it.

import (
	"math/rand/v2"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// conflictDrops is how many connections in a row closed by the broker
// within ConflictWindow of their opening make the Client back off.
const conflictDrops = 3

// maxConflictFactor caps the back-off at this many ConflictBackoffs.
const maxConflictFactor = 16

// takeover is the Client's record of quick drops, guarded by Client.mu.
type takeover struct {
	up      time.Time     // when the attempt that connected began; zero once judged, or after a failed attempt
	lostAt  time.Time     // when paho reported the connection lost
	lostErr error         // and why
	lost    chan struct{} // lost's word to judge (capacity 1)
	drops   int           // quick drops in a row
	wait    time.Duration // the last back-off; 0 while none
	until   time.Time     // reconnections wait until then
	held    chan struct{} // tests: signalled when a reconnection starts waiting
}

// attempting records a connection attempt's start, or its failure (paho's
// notifications, synchronous): a failed attempt (refused, the broker
// restarting) breaks a run of quick drops, as the broker was not there to
// hand the id to someone else.
func (c *Client) attempting(failed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if failed {
		c.conflict.up, c.conflict.drops = time.Time{}, 0
		return
	}
	c.conflict.up = time.Now()
}

// judge looks at the connection just lost (paho's reconnecting handler
// calls it, before each reconnection attempt): one the broker closed
// within ConflictWindow of its opening is a quick drop; conflictDrops of
// them in a row set a back-off and say why.
func (c *Client) judge() {
	t := &c.conflict
	c.mu.Lock()
	up := t.up
	t.up = time.Time{}
	c.mu.Unlock()
	if up.IsZero() {
		return // no connection since the last judgement
	}
	// paho reports the loss (lost) on a goroutine it starts beside the
	// reconnection.
	report := time.NewTimer(time.Second)
	select {
	case <-t.lost:
	case <-report.C:
	case <-c.quit:
	}
	report.Stop()
	c.mu.Lock()
	closed, err := t.lostAt, t.lostErr
	if closed.Before(up) || closed.Sub(up) >= c.cfg.ConflictWindow || !closedByPeer(err) {
		t.drops, t.wait = 0, 0
		c.mu.Unlock()
		return
	}
	t.drops++
	drops := t.drops
	if drops < conflictDrops {
		c.mu.Unlock()
		c.log.Debug().Dur("lasted", closed.Sub(up)).Int("drops", drops).Msg("the broker closed the connection right after accepting it")
		return
	}
	t.wait = min(max(2*t.wait, c.cfg.ConflictBackoff), maxConflictFactor*c.cfg.ConflictBackoff)
	// ±20 %: two bridges backing off from each other drift apart.
	wait := t.wait + time.Duration((rand.Float64()*0.4-0.2)*float64(t.wait))
	t.until = time.Now().Add(wait)
	c.mu.Unlock()
	c.conflicts.Add(1)
	c.log.Error().Err(err).Int("drops", drops).Dur("window", c.cfg.ConflictWindow).Str("wait", wait.Round(time.Second).String()).
		Msg("the broker keeps closing the connection right after accepting it: most likely another client connects with " +
			"the same client id (a second bridge with the same settings, or a copy of this one), and the broker lets only " +
			"one connect with it; give each bridge its own MQTT_CLIENT_ID. Waiting before connecting again rather than " +
			"taking the id back (if no other client uses it, see the broker's log: it may refuse something the bridge sends)")
}

// lost is paho's connection-lost handler (on a paho goroutine, which may
// run after the reconnection started): it tells judge when and why.
func (c *Client) lost(_ paho.Client, err error) {
	c.mu.Lock()
	c.conflict.lostAt, c.conflict.lostErr = time.Now(), err
	c.mu.Unlock()
	select {
	case c.conflict.lost <- struct{}{}:
	default:
	}
	c.log.Warn().Err(err).Str("hint", hint(err)).Msg("connection to MQTT broker lost; reconnecting")
}

// holdOff waits out the back-off before a reconnection (paho's reconnecting
// handler calls it), or until the Client closes.
func (c *Client) holdOff() {
	c.mu.Lock()
	wait := time.Until(c.conflict.until)
	held := c.conflict.held
	c.mu.Unlock()
	if wait <= 0 {
		return
	}
	if held != nil {
		select {
		case held <- struct{}{}:
		default:
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		c.log.Info().Msg("connecting to the MQTT broker again after backing off")
	case <-c.quit:
	}
}
