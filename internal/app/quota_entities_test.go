package app_test

import (
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/cloudsim"
)

// bridgeQuotaConfigs are the config topics of the bridge device's six
// entities of the account's quota (they read quota_* of bridge/stats).
var bridgeQuotaConfigs = []string{
	"homeassistant/sensor/bridge_cloud2mqtt/quota_limit/config",
	"homeassistant/sensor/bridge_cloud2mqtt/quota_remaining/config",
	"homeassistant/sensor/bridge_cloud2mqtt/quota_reset/config",
	"homeassistant/sensor/bridge_cloud2mqtt/quota_source/config",
	"homeassistant/sensor/bridge_cloud2mqtt/quota_runs_out/config",
	"homeassistant/binary_sensor/bridge_cloud2mqtt/quota_short/config",
}

// TestQuotaEntitiesOnlyOnceAQuotaIsKnown: with no quota told or configured, the
// quota entities would stay unknown forever, so none exists and one left
// retained by an earlier run is removed. Once a quota is known they appear.
func TestQuotaEntitiesOnlyOnceAQuotaIsKnown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		quota cloudsim.Quota
		env   map[string]string
		want  string // quota_source in bridge/stats; "" for none known
	}{
		{"no rate-limit headers", cloudsim.Quota{}, nil, ""},
		{"learned from the headers", cloudsim.Quota{Limit: 45, Window: 180 * time.Second}, nil, "learned"},
		{"CLOUD_DAILY_LIMIT", cloudsim.Quota{}, map[string]string{"CLOUD_DAILY_LIMIT": "10000"}, "configured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cat, err := cloudsim.Household(3)
			if err != nil {
				t.Fatal(err)
			}
			h := startHarness(t, harnessOptions{noStart: true, env: tc.env,
				sim: cloudsim.Options{Catalogue: cat, Quota: tc.quota}})
			// What an earlier run that knew a quota left retained.
			stale := `{"name":"Cloud quota","state_topic":"cloud2mqtt/bridge/stats","unique_id":"bridge_cloud2mqtt_quota_limit"}`
			if tok := h.watch.c.Publish(bridgeQuotaConfigs[0], 1, true, stale); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
				t.Fatalf("publish %s: %v", bridgeQuotaConfigs[0], tok.Error())
			}
			h.start()

			// The cloud has answered reads (with the quota it tells, if any)
			// and the stats after them are out: the bridge's configs that
			// follow a quota went out before them (Mirror.PublishStats).
			h.jumpStats(func(m map[string]any) bool {
				n, _ := m["requests_today"].(float64)
				return n > 0 && m["devices_total"] == float64(3) && toString(m["quota_source"]) == tc.want
			})
			h.idle(time.Now().Add(wait), "the bridge idle after its stats")

			// A subscriber arriving now gets what is retained: once one
			// retained config is in, its subscriptions are in place and
			// sync has every retained message come before its own.
			fresh := newNamedWatcher(t, h.broker.URL(), "fresh-"+strings.ReplaceAll(t.Name(), "/", "-"))
			fresh.until(wait, "the bridge's retained version config", func() bool {
				p, _ := fresh.get("homeassistant/sensor/bridge_cloud2mqtt/version/config")
				return p != ""
			})
			fresh.sync(time.Now().Add(wait))
			for _, tp := range bridgeQuotaConfigs {
				p, _ := fresh.get(tp)
				switch {
				case tc.want == "" && p != "":
					t.Errorf("no quota known, yet %s is retained: %s", tp, p)
				case tc.want != "" && (!strings.Contains(p, `"state_topic":"cloud2mqtt/bridge/stats"`) || p == stale):
					t.Errorf("quota %s, yet %s retains %q; want the bridge's config", tc.want, tp, p)
				}
			}
		})
	}
}
