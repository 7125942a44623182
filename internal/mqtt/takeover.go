package mqtt

// Another client with the bridge's client id: the broker closes the
// bridge's connection without a reason (MQTT 3.1.1 §3.1.4). A close followed
// by a reconnection accepted at once is taken for this, said in one error
// naming MQTT_CLIENT_ID and a shared state directory, and the id is taken
// back at once, because an id nobody can derive is a mistake to fix, not a
// peer to yield to.

import (
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// takeover is the Client's judgement of its lost connections, guarded by
// Client.mu.
type takeover struct {
	up      time.Time     // when the attempt that connected began; zero once judged, or after a failed attempt
	lostAt  time.Time     // when paho reported the connection lost
	lostOn  time.Time     // the same on Config.Clock (backlog.go)
	lostErr error         // and why
	lost    chan struct{} // lost's word to judge (capacity 1)
	suspect bool          // the broker closed the last connection, and no attempt failed since
	lasted  time.Duration // how long that connection had lasted
}

// attempting records a connection attempt's start, or its failure (paho's
// notifications, synchronous): a failed attempt (refused, the broker
// restarting) means the broker was not there to hand the id to another.
func (c *Client) attempting(failed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if failed {
		c.conflict.up, c.conflict.suspect = time.Time{}, false
		return
	}
	c.conflict.up = time.Now()
}

// judge looks at the connection just lost (paho's reconnecting handler
// calls it before each reconnection attempt): closed by the broker, it is
// a takeover if the next attempt is accepted. It returns when the loss
// was reported, on Config.Clock (zero when it was not, or no connection
// was up).
func (c *Client) judge() time.Time {
	t := &c.conflict
	c.mu.Lock()
	up := t.up
	t.up = time.Time{}
	c.mu.Unlock()
	if up.IsZero() {
		return time.Time{} // no connection since the last judgement
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
	defer c.mu.Unlock()
	closed, err := t.lostAt, t.lostErr
	if closed.Before(up) {
		t.suspect = false
		return time.Time{}
	}
	t.suspect, t.lasted = closedByPeer(err), closed.Sub(up)
	return t.lostOn
}

// tookOver is the session's, on every connect: a connection the broker
// closed followed by this one, accepted at once, was most likely another
// client taking the id.
func (c *Client) tookOver() {
	c.mu.Lock()
	t := &c.conflict
	suspect, lasted := t.suspect, t.lasted
	t.suspect = false
	c.mu.Unlock()
	if !suspect {
		return
	}
	n := c.conflicts.Add(1)
	// The id stays out of the line: warnings and errors are published on
	// bridge/logging, where any client of the broker may read them.
	c.log.Error().Uint64("takeovers", n).Str("lasted", lasted.Round(time.Millisecond).String()).
		Msg("the broker closed the bridge's connection and took it back at once: most likely another client connected " +
			"with the bridge's client id (the broker lets one connect with an id at a time, and one with a clean session " +
			"wipes the bridge's session). Another copy of the bridge does that when two share a state directory (STATE_DIR) " +
			"or an MQTT_CLIENT_ID: give each its own. The bridge is back and took the id back; if no other client uses " +
			"it, see the broker's log (it may have closed the connection over something the bridge sent)")
}

// lost is paho's connection-lost handler (on a paho goroutine, which may
// run after the reconnection started): it tells judge when and why.
func (c *Client) lost(_ paho.Client, err error) {
	c.mu.Lock()
	c.conflict.lostAt, c.conflict.lostOn, c.conflict.lostErr = time.Now(), c.cfg.Clock.Now(), err
	c.mu.Unlock()
	select {
	case c.conflict.lost <- struct{}{}:
	default:
	}
	c.log.Warn().Err(err).Str("hint", hint(err)).Msg("connection to MQTT broker lost; reconnecting")
}
