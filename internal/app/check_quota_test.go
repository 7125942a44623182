package app

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/config"
)

// TestCheckQuota: -check prints the requests a day the configuration plans
// against the cloud's quota, and warns without failing when they exceed it,
// naming POLL_INTERVAL and CLOUD_DAILY_LIMIT. The figures by time of day are
// checkLearned's test, since this one runs on the real clock.
func TestCheckQuota(t *testing.T) {
	// The simulator stands at noon: its day's quota always has 12 h to go
	// (told as seconds from now), whatever the time of day the test runs
	// at (near midnight a day's quota with minutes left fits any plan).
	noon := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	sim := cloudsim.New(cloudsim.Options{Quota: cloudsim.Quota{Limit: 10000, Window: 24 * time.Hour}, Now: func() time.Time { return noon }})
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
			[]string{"\nwarn quota: the cloud's quota allows a read of each device about every ",
				"\n       the configuration plans 691372 requests a day: 16 devices read every 2s (691200), the device list every 10m (144), 7 scene lists every 6h (28)\n",
				"of 10000 left until", "set POLL_INTERVAL=", "CLOUD_DAILY_LIMIT"},
			// One line, one level, about the quota.
			[]string{"ok   quota"}},
		{"16 devices every 3 min", env("POLL_INTERVAL", "3m"),
			[]string{"\nok   quota: ", "within the cloud's quota (", "\n       the configuration plans 7852 requests a day"},
			[]string{"warn"}},
		{"a daily limit too low", env("POLL_INTERVAL", "3m", "CLOUD_DAILY_LIMIT", "100"),
			[]string{"warn daily limit: CLOUD_DAILY_LIMIT=100 is too low for 16 devices even at one read a day: the bridge reads each device at most once a day; raise CLOUD_DAILY_LIMIT, or lengthen DEVICE_LIST_INTERVAL and SCENE_INTERVAL\n"},
			[]string{"ok   daily limit"}},
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

	// The quota is learned from the answer -check reads the device list
	// with: the check costs the account one request of it.
	t.Run("one request", func(t *testing.T) {
		before := sim.Counts().Total(cloud.EndpointDevices)
		if _, out := checkReport(t, env("POLL_INTERVAL", "3m")); !strings.Contains(out, "within the cloud's quota") {
			t.Fatalf("no learned quota in the report:\n%s", out)
		}
		if n := sim.Counts().Total(cloud.EndpointDevices) - before; n != 1 {
			t.Errorf("-check read the device list %d times, want once", n)
		}
	})

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

// The comparison at explicit instants: a day's quota (it renews at
// midnight) against the day's plan, with the interval that fits a day; a
// shorter window against what would be sent until it renews.
func TestCheckLearned(t *testing.T) {
	var devs []capability.Device
	for _, d := range cloudsim.DemoCatalogue().Devices {
		devs = append(devs, d.Device)
	}
	now := time.Date(2026, 11, 25, 13, 0, 0, 0, time.UTC)
	midnight := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		interval string
		w        cloud.RateLimit
		want     string
	}{
		{"a day's quota, 2 s", "2s", cloud.RateLimit{Limit: 10000, Remaining: 9998, HasRemaining: true, Reset: midnight},
			"warn quota: the cloud's quota allows a read of each device about every 2m54s, not every 2s: the bridge reads that often; set POLL_INTERVAL=2m54s or longer to plan for it, or CLOUD_DAILY_LIMIT to this bridge's share of the quota (other apps on the account spend it too)\n" +
				"       691372 requests planned a day, more than the 8856 the cloud's quota (9998 of 10000 left until 2026-11-26T00:00:00Z) leaves beside the bridge's reserve for commands\n"},
		{"a day's quota, 3 min", "3m", cloud.RateLimit{Limit: 10000, Remaining: 9998, HasRemaining: true, Reset: midnight},
			"ok   quota: 7852 requests planned a day, within the cloud's quota (9998 of 10000 left until 2026-11-26T00:00:00Z)"},
		{"a short window, 60 s", "60s", cloud.RateLimit{Limit: 45, Remaining: 44, HasRemaining: true, Reset: now.Add(90 * time.Second)},
			"ok   quota: 24 requests planned until it renews in 1m30s, within the cloud's quota (44 of 45 left until 2026-11-25T13:01:30Z)"},
		{"a short window, 2 s", "2s", cloud.RateLimit{Limit: 45, Remaining: 44, HasRemaining: true, Reset: now.Add(90 * time.Second)},
			"       720 requests planned until it renews in 1m30s, more than the 38 the cloud's quota"},
		{"a day's quota in its last hour", "2s", cloud.RateLimit{Limit: 10000, Remaining: 500, HasRemaining: true, Reset: midnight},
			"       14404 requests planned until it renews in 30m"},
		{"no reset told", "2s", cloud.RateLimit{Limit: 10000},
			"it did not say what is left and when it renews"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Load(map[string]string{"CLOUD_BASE_URL": "http://x", "CLOUD_API_KEY": "k", "POLL_INTERVAL": tc.interval})
			if err != nil {
				t.Fatal(err)
			}
			at := now
			if strings.Contains(tc.name, "last hour") {
				at = midnight.Add(-30 * time.Minute)
			}
			var out bytes.Buffer
			checkLearned(cfg, planOf(cfg, devs), tc.w, at).write(&out)
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("got %q\nwant %q", out.String(), tc.want)
			}
		})
	}
}
