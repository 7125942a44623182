package app

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/cloudsim"
)

// -check prints the requests a day the configuration plans against the
// quota the cloud tells, and warns (without failing) when they exceed it,
// naming POLL_INTERVAL and CLOUD_DAILY_LIMIT: 16 devices at 2 s no longer
// pass without a word.
func TestCheckQuota(t *testing.T) {
	// A window that has just begun: it renews in 24 h.
	start := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	sim := cloudsim.New(cloudsim.Options{Quota: cloudsim.Quota{Limit: 10000, Window: 24 * time.Hour},
		Now: func() time.Time { return start }})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	env := func(kv ...string) map[string]string {
		m := map[string]string{"CLOUD_BASE_URL": srv.URL, "CLOUD_API_KEY": sim.APIKey()}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name      string
		env       map[string]string
		want, not []string
	}{
		{"16 devices every 2 s", env("POLL_INTERVAL", "2s"),
			[]string{"ok   quota: the configuration plans 691372 requests a day: 16 devices read every 2s (691200), the device list every 10m (144), 7 scene lists every 6h (28)",
				"warn quota: ", "more than the", "9998 of 10000 left", "POLL_INTERVAL=", "CLOUD_DAILY_LIMIT"},
			nil},
		{"16 devices every 3 min", env("POLL_INTERVAL", "3m"),
			[]string{"ok   quota: the configuration plans 7852 requests a day", "ok   quota: 7852 requests planned until the cloud's quota (", "of 10000 left until", "renews in 24h"},
			[]string{"warn"}},
		{"a daily limit too low", env("POLL_INTERVAL", "3m", "CLOUD_DAILY_LIMIT", "100"),
			[]string{"warn quota: CLOUD_DAILY_LIMIT=100 is too low for 16 devices"},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, out := checkReport(t, tc.env)
			if !ok {
				t.Errorf("-check failed:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("report lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(out, w) {
					t.Errorf("report has %q:\n%s", w, out)
				}
			}
		})
	}

	t.Run("no quota known", func(t *testing.T) {
		plain := cloudsim.New(cloudsim.Options{})
		srv := httptest.NewServer(plain)
		defer srv.Close()
		ok, out := checkReport(t, map[string]string{"CLOUD_BASE_URL": srv.URL, "CLOUD_API_KEY": plain.APIKey(), "POLL_INTERVAL": "2s"})
		if !ok || !strings.Contains(out, "ok   quota: no quota known") || !strings.Contains(out, "set CLOUD_DAILY_LIMIT") {
			t.Errorf("without headers:\n%s", out)
		}
	})
}
