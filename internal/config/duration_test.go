package config

import (
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/cloud"
)

// TestParseDuration is the one duration rule: a plain number is seconds,
// anything else Go's duration syntax.
func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"60", time.Minute},
		{"60s", time.Minute},
		{"1m", time.Minute},
		{" 60 ", time.Minute},
		{"1.5", 1500 * time.Millisecond},
		{"0.5", 500 * time.Millisecond},
		{"90", 90 * time.Second},
		{"+30", 30 * time.Second},
		{"-5", -5 * time.Second}, // parsed; the floors refuse it with their own message
		{"0", 0},
		{"1h30m", 90 * time.Minute},
		{"6h", 6 * time.Hour},
		{"250ms", 250 * time.Millisecond},
	} {
		got, err := ParseDuration(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", " ", "soon", "60 s", "1e3", "0x10", "NaN", "Inf", "infinity", "1.2.3", ".", "-", "60sec",
		"99999999999999999999", "9999999999h"} {
		if d, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", in, d)
		}
	}
}

func TestParseDurationForNamesTheSetting(t *testing.T) {
	_, err := ParseDurationFor("POLL_INTERVAL", "soon")
	if err == nil || err.Error() != `POLL_INTERVAL="soon" is not a duration: use seconds (60) or a number with a unit (60s, 1m, 6h)` {
		t.Errorf("got %v", err)
	}
}

// The environment reads durations by the same rule: POLL_INTERVAL=60 is a
// minute, as "60s" and "1m" are.
func TestEnvironmentDurations(t *testing.T) {
	for _, v := range []string{"60", "60s", "1m", "60.0"} {
		cfg, err := Load(with(valid(), "POLL_INTERVAL", v, "DEVICE_LIST_INTERVAL", v, "SCENE_INTERVAL", v, "CLOUD_TIMEOUT", v))
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", v, err)
		}
		if cfg.Poll.Interval != time.Minute || cfg.Poll.DeviceListInterval != time.Minute || cfg.Poll.SceneInterval != time.Minute || cfg.Cloud.Timeout != time.Minute {
			t.Errorf("%s: got %+v, timeout %v; want a minute each", v, cfg.Poll, cfg.Cloud.Timeout)
		}
	}
	_, err := Load(with(valid(), "POLL_INTERVAL", "1 minute"))
	if err == nil || !strings.Contains(err.Error(), `POLL_INTERVAL="1 minute" is not a duration: use seconds (60)`) {
		t.Errorf("got %v", err)
	}
}

// TestBaseURLWithTheAPIPath: a base URL that already holds the path the
// client appends is refused with the URL to use instead; a proxy's prefix is
// kept.
func TestBaseURLWithTheAPIPath(t *testing.T) {
	for in, fixed := range map[string]string{
		"https://api.example.com/router/api/v1":               "https://api.example.com",
		"https://api.example.com/router/api/v1/":              "https://api.example.com",
		"https://api.example.com/router/api/v1/user/devices":  "https://api.example.com",
		"https://api.example.com/Router/API/v1":               "https://api.example.com",
		"https://api.example.com/router":                      "https://api.example.com",
		"http://127.0.0.1:8081/proxy/router/api/v1":           "http://127.0.0.1:8081/proxy",
		"https://api.example.com/router/api/v1/device/state/": "https://api.example.com",
	} {
		cfg := mustLoad(t, with(valid(), "CLOUD_BASE_URL", in))
		err := cfg.Validate()
		if err == nil {
			t.Errorf("%s accepted", in)
			continue
		}
		want := "set it to " + fixed + " (scheme and host only)"
		if !strings.Contains(err.Error(), "CLOUD_BASE_URL=") || !strings.Contains(err.Error(), "which the bridge appends itself") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want it to name CLOUD_BASE_URL and say %q", in, err, want)
		}
	}
	for _, ok := range []string{"https://api.example.com", "https://api.example.com/", "https://proxy.example.com/cloud", "https://proxy.example.com/routers", "https://proxy.example.com/myrouter/api"} {
		cfg := mustLoad(t, with(valid(), "CLOUD_BASE_URL", ok))
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	// Every path the client appends is recognised.
	for _, p := range []string{cloud.PathDevices, cloud.PathState, cloud.PathScenes, cloud.PathDIYScenes, cloud.PathControl} {
		cfg := mustLoad(t, with(valid(), "CLOUD_BASE_URL", "https://api.example.com"+p))
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "set it to https://api.example.com (") {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestDurationRepeatedUnit: a value pasted twice (60s60s), which Go would
// read as the sum, is not a duration; units once each still are.
func TestDurationRepeatedUnit(t *testing.T) {
	for _, s := range []string{"60s60s", "1m30s1m", "1h 1h", "5m5m5m"} {
		if d, err := ParseDuration(s); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", s, d)
		}
	}
	for s, want := range map[string]time.Duration{"1h30m": 90 * time.Minute, "1m30s": 90 * time.Second, "1h2m3s4ms": time.Hour + 2*time.Minute + 3*time.Second + 4*time.Millisecond, "30m1h": 90 * time.Minute} {
		if d, err := ParseDuration(s); err != nil || d != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", s, d, err, want)
		}
	}
}

// FuzzParseDuration: never a panic; Go's syntax means what Go says, and a
// plain number is that many seconds.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"60", "60s", "1m", "1.5", "-5", "1h30m", "", "soon", "1e3", "9999999999999999999", "60s60s", "1h1h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		trimmed := strings.TrimSpace(s)
		if goD, goErr := time.ParseDuration(trimmed); goErr == nil && goD != d {
			t.Fatalf("ParseDuration(%q) = %v, time.ParseDuration = %v", s, d, goD)
		}
		if isDecimal(trimmed) {
			if back, err := ParseDuration(FormatDuration(d)); err != nil || back != d {
				t.Fatalf("%q: %v does not read back from %q: %v, %v", s, d, FormatDuration(d), back, err)
			}
		}
	})
}
