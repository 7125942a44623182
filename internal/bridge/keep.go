package bridge

// The bridge's own retained topics, kept true. Where any client may publish
// anywhere, one can retain bridge/state or a device's availability "offline"
// and Home Assistant would show it until the next real change. The bridge
// watches those topics and republishes the truth when a live message differs;
// its own echoes cost at most one needless republish, never a loop.
//
// A flood of overwrites cannot make the bridge publish without bound: the first
// is answered at once, later ones together every CorrectEvery, at most
// maxCorrections topics each time, each topic once.

import (
	"bytes"
	"maps"
	"slices"
	"time"

	"cloud2mqtt/internal/clock"
)

const (
	// CorrectEvery spaces the corrections: an overwritten topic is published
	// again within a second.
	CorrectEvery = time.Second
	// maxCorrections bounds the topics published again in one round.
	maxCorrections = 100
)

// keeper is the Mirror's record of its topics seen overwritten, guarded by
// the Mirror's lock.
type keeper struct {
	clk     clock.Clock
	suspect map[string]struct{} // topics to publish again at the next round: one per device at most, and bridge/state
	next    time.Time           // when the next round may be
	timer   clock.Timer         // the next round's, while suspects wait
	rounds  int                 // rounds that published (for the log)
	fixed   int                 // topics published again since the last log line
	logged  time.Time
}

// observed takes a message on a watched topic (Bridge.Handle).
func (m *Mirror) observed(t string, payload []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	truth, ok := m.truthLocked(t)
	if !ok || bytes.Equal(payload, truth) {
		delete(m.keep.suspect, t)
		return
	}
	if m.keep.suspect == nil {
		m.keep.suspect = map[string]struct{}{}
	}
	_, again := m.keep.suspect[t]
	m.keep.suspect[t] = struct{}{}
	now := m.keep.clk.Now()
	if m.keep.timer == nil && !now.Before(m.keep.next) {
		m.correctLocked(now)
		return
	}
	m.armLocked()
	if !again { // once a topic a round: a flood makes no more lines
		m.log.Debug().Str("topic", clip(t, maxErrorText)).Time("at", m.keep.next).
			Msg("retained topic overwritten by another client; the truth goes out again with the next round")
	}
}

// truthLocked is what the bridge last published on a watched topic: "online"
// while connected for its state, the mirror's availability for a device. ok is
// false when the bridge has nothing to say there.
func (m *Mirror) truthLocked(t string) ([]byte, bool) {
	if m.pub == nil {
		return nil, false
	}
	l := m.opt.Layout
	if t == l.BridgeState() {
		return []byte(online), true
	}
	id, ok := l.AvailabilityID(t)
	if !ok {
		return nil, false
	}
	e := m.devices[id]
	if e == nil || e.avail == "" {
		return nil, false
	}
	return []byte(e.avail), true
}

// online is the bridge's state while connected (mqtt.Online: the bridge
// does not import the connection's package).
const online = "online"

// armLocked has the next round run when it may, unless one is due.
func (m *Mirror) armLocked() {
	if m.keep.timer != nil {
		return
	}
	m.keep.timer = m.keep.clk.AfterFunc(max(m.keep.next.Sub(m.keep.clk.Now()), 0), func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.keep.timer = nil
		m.correctLocked(m.keep.clk.Now())
	})
}

// correctLocked publishes the truth of up to maxCorrections suspect topics
// again (in topic order), and has the rest wait for the next round.
func (m *Mirror) correctLocked(now time.Time) {
	var msgs []message
	for _, t := range slices.Sorted(maps.Keys(m.keep.suspect)) {
		if len(msgs) == maxCorrections {
			break
		}
		delete(m.keep.suspect, t)
		if truth, ok := m.truthLocked(t); ok {
			msgs = append(msgs, message{t, truth, true})
		}
	}
	if len(msgs) == 0 {
		return
	}
	m.keep.next = now.Add(CorrectEvery)
	sent := 0
	for _, msg := range msgs {
		// Refused once the connection is closing: then the echo was of the
		// bridge's own "offline", and there is nothing to correct or say.
		if m.pub.Publish(msg.topic, msg.payload, msg.retained, 1) == nil {
			sent++
		}
	}
	if sent == 0 {
		return
	}
	m.keep.rounds++
	m.keep.fixed += sent
	if now.Sub(m.keep.logged) >= time.Minute || m.keep.rounds == 1 {
		m.log.Warn().Str("topic", clip(msgs[0].topic, maxErrorText)).Int("published_again", m.keep.fixed).
			Msg("another client overwrote a retained topic of the bridge's (its state or a device's availability); " +
				"the bridge published the truth again. Let only the bridge publish under its base topic: " +
				"the ACL file in deploy/mosquitto, or the embedded broker")
		m.keep.fixed, m.keep.logged = 0, now
	}
	if len(m.keep.suspect) > 0 {
		m.armLocked()
	}
}
