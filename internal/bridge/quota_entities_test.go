package bridge

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/topic"
)

// quotaConfigTopics are the config topics of the bridge's quota entities
// for the mirror of newQuotaMirror.
var quotaConfigTopics = []string{
	"homeassistant/sensor/c2m_bridge/quota_limit/config",
	"homeassistant/sensor/c2m_bridge/quota_remaining/config",
	"homeassistant/sensor/c2m_bridge/quota_reset/config",
	"homeassistant/sensor/c2m_bridge/quota_source/config",
	"homeassistant/sensor/c2m_bridge/quota_runs_out/config",
	"homeassistant/binary_sensor/c2m_bridge/quota_short/config",
}

// newQuotaMirror is a mirror with discovery on, connected to a fresh
// publisher (Connected: the republish of a (re)connection).
func newQuotaMirror(dailyLimit int) (*Mirror, *fakePub) {
	l := topic.New("c2m")
	m := NewMirror(Options{Layout: l, DiscoveryEnabled: true, Log: zerolog.Nop(),
		Discovery: discovery.Config{Layout: l, Version: "test", BridgeID: "c2m_bridge", DailyLimit: dailyLimit}})
	pub := &fakePub{}
	m.Connected(pub)
	return m, pub
}

// quotaConfigs returns what msgs published on each quota config topic, in
// order; every one must be retained.
func quotaConfigs(t *testing.T, msgs []published) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, tp := range quotaConfigTopics {
		for _, m := range on(msgs, tp) {
			if !m.retained {
				t.Errorf("%s published not retained", tp)
			}
			out[tp] = append(out[tp], m.payload)
		}
	}
	return out
}

// wantQuotaConfigs checks that each quota config topic got exactly one
// message: a config over bridge/stats (configs) or an empty payload.
func wantQuotaConfigs(t *testing.T, when string, got map[string][]string, configs bool) {
	t.Helper()
	for _, tp := range quotaConfigTopics {
		p := got[tp]
		switch {
		case len(p) != 1:
			t.Errorf("%s: %s published %d times (%q), want once", when, tp, len(p), p)
		case configs && !strings.Contains(p[0], `"state_topic":"c2m/bridge/stats"`):
			t.Errorf("%s: %s = %q, want a config over bridge/stats", when, tp, p[0])
		case !configs && p[0] != "":
			t.Errorf("%s: %s = %q, want an empty payload (a removal)", when, tp, p[0])
		}
	}
}

// TestQuotaEntitiesOnceAQuotaIsLearned: with no quota known, a connection
// removes the quota entities' configs (what an earlier run may have left
// retained) and stats without a quota publish none; the first stats with a
// learned quota publish them once, and they stay, also on a reconnection.
func TestQuotaEntitiesOnceAQuotaIsLearned(t *testing.T) {
	m, pub := newQuotaMirror(0)
	wantQuotaConfigs(t, "connected with no quota", quotaConfigs(t, pub.take()), false)

	m.PublishStats(discovery.BridgeStats{Version: "1"})
	m.PublishStats(discovery.BridgeStats{Version: "1", RequestsToday: 3})
	if got := quotaConfigs(t, pub.take()); len(got) != 0 {
		t.Errorf("stats without a quota published quota configs: %q", got)
	}

	learned, limit, left := "learned", 45, 12
	known := discovery.BridgeStats{Version: "1", QuotaLimit: &limit, QuotaRemaining: &left, QuotaSource: &learned}
	m.PublishStats(known)
	msgs := pub.take()
	wantQuotaConfigs(t, "the first stats with a quota", quotaConfigs(t, msgs), true)
	if len(on(msgs, "c2m/bridge/stats")) != 1 {
		t.Errorf("the stats with the quota were not published")
	}

	left--
	m.PublishStats(known)
	m.PublishStats(discovery.BridgeStats{Version: "1"}) // the quota unknown again: the entities stay
	if got := quotaConfigs(t, pub.take()); len(got) != 0 {
		t.Errorf("quota configs published again after the first time: %q", got)
	}

	m.Connected(pub)
	wantQuotaConfigs(t, "reconnected", quotaConfigs(t, pub.take()), true)
}

// TestQuotaEntitiesWithADailyLimit: a configured daily limit is a quota
// known from the start: the first connection publishes the configs.
func TestQuotaEntitiesWithADailyLimit(t *testing.T) {
	m, pub := newQuotaMirror(10000)
	wantQuotaConfigs(t, "connected with a daily limit", quotaConfigs(t, pub.take()), true)
	configured, left := "configured", 9990
	m.PublishStats(discovery.BridgeStats{Version: "1", QuotaLimit: new(10000), QuotaRemaining: &left, QuotaSource: &configured})
	if got := quotaConfigs(t, pub.take()); len(got) != 0 {
		t.Errorf("quota configs published again with the first stats: %q", got)
	}
}
