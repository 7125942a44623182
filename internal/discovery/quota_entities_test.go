package discovery

import (
	"strings"
	"testing"
)

// quotaStatsKeys are the keys of BridgeStats that only a known quota fills.
var quotaStatsKeys = []string{"quota_limit", "quota_remaining", "quota_reset", "quota_source", "quota_fits", "quota_runs_out"}

// readsQuota reports whether a config's template reads one of quotaStatsKeys.
func readsQuota(t *testing.T, p []byte) bool {
	t.Helper()
	tpl, _ := decodeMap(t, p)["value_template"].(string)
	for _, k := range templateKeys(tpl) {
		for _, q := range quotaStatsKeys {
			if k == q {
				return true
			}
		}
	}
	return false
}

// TestQuotaEntitiesOnlyWithAQuota: the quota entities exist once a quota is
// known and are removed with empty payloads otherwise.
func TestQuotaEntitiesOnlyWithAQuota(t *testing.T) {
	base := testConfig()
	id := base.withDefaults().BridgeID
	topics := []string{
		base.ConfigTopic("sensor", id, "quota_limit"),
		base.ConfigTopic("sensor", id, "quota_remaining"),
		base.ConfigTopic("sensor", id, "quota_reset"),
		base.ConfigTopic("sensor", id, "quota_source"),
		base.ConfigTopic("sensor", id, "quota_runs_out"),
		base.ConfigTopic("binary_sensor", id, "quota_short"),
	}
	for _, tc := range []struct {
		name       string
		dailyLimit int
		known      bool
		want       bool
	}{
		{"none known", 0, false, false},
		{"learned from the cloud", 0, true, true},
		{"configured daily limit", 10000, false, true},
		{"both", 10000, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			cfg.DailyLimit, cfg.QuotaKnown = tc.dailyLimit, tc.known
			configs := BridgeConfigs(cfg)
			for _, tp := range topics {
				p, ok := configs[tp]
				switch {
				case !ok:
					t.Errorf("%s missing (want a config or an empty payload)", tp)
				case tc.want && (len(p) == 0 || !strings.Contains(string(p), `"state_topic":"`+cfg.Layout.BridgeStats()+`"`)):
					t.Errorf("%s = %q, want a config over bridge/stats", tp, p)
				case tc.want && !readsQuota(t, p):
					t.Errorf("%s does not read the quota: %s", tp, p)
				case !tc.want && len(p) != 0:
					t.Errorf("%s = %q, want an empty payload", tp, p)
				}
			}
			// No entity outside the six reads what only a quota fills.
			quota := map[string]bool{}
			for _, tp := range topics {
				quota[tp] = true
			}
			for tp, p := range configs {
				if len(p) != 0 && !quota[tp] && readsQuota(t, p) {
					t.Errorf("%s reads the quota but is not among the quota's entities", tp)
				}
			}
		})
	}
}
