package config

import (
	"strings"
	"testing"
	"time"
)

// TestLocalSettings: the LAN settings' defaults, and each bad value named
// with its variable and the fix. LAN_LISTEN and LAN_SCAN_TARGETS are text
// here, parsed by lan: internal/app's TestValidateLANSettings holds them.
func TestLocalSettings(t *testing.T) {
	base := map[string]string{"CLOUD_BASE_URL": "https://api.example.com", "CLOUD_API_KEY": "k"}
	cfg := mustLoad(t, base)
	if want := (Local{ListenAddr: "0.0.0.0:4002", ScanTargets: "239.255.255.250", ScanInterval: 5 * time.Minute, PollInterval: 10 * time.Second}); cfg.Local != want {
		t.Errorf("defaults %+v, want %+v", cfg.Local, want)
	}
	for _, tc := range []struct{ name, value, want string }{
		{"LAN_SCAN_INTERVAL", "500ms", "LAN_SCAN_INTERVAL=500ms is below the 1s floor"},
		{"LAN_POLL_INTERVAL", "50ms", "LAN_POLL_INTERVAL=50ms is below the 100ms floor"},
	} {
		env := map[string]string{tc.name: tc.value}
		for k, v := range base {
			env[k] = v
		}
		err := mustLoad(t, env).Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: %v, want an error saying %q", tc.name, tc.value, err, tc.want)
		}
	}
	env := map[string]string{"LAN_ENABLED": "true", "LAN_SCAN_TARGETS": "239.255.255.250, 192.168.20.31, [fd00::5]:4001", "LAN_POLL_INTERVAL": "2"}
	for k, v := range base {
		env[k] = v
	}
	cfg = mustLoad(t, env)
	if err := cfg.Validate(); err != nil || cfg.Local.PollInterval != 2*time.Second {
		t.Errorf("%v, poll %v", err, cfg.Local.PollInterval)
	}
}

// TestLocalSettingsInTheTable: -check and the startup log say when the LAN
// settings have no effect, and what the demo uses instead.
func TestLocalSettingsInTheTable(t *testing.T) {
	base := map[string]string{"CLOUD_BASE_URL": "https://api.example.com", "CLOUD_API_KEY": "k"}
	off := mustLoad(t, base)
	if got := rowOf(off, "LAN_POLL_INTERVAL"); got != "10s (not used: only with LAN_ENABLED=true)" {
		t.Errorf("LAN off: %q", got)
	}
	base["LAN_ENABLED"] = "true"
	if got := rowOf(mustLoad(t, base), "LAN_POLL_INTERVAL"); got != "10s" {
		t.Errorf("LAN on: %q", got)
	}
	demo := mustLoad(t, map[string]string{})
	demo.Demo = true
	if got := rowOf(demo, "LAN_ENABLED"); !strings.HasPrefix(got, "true (-demo") {
		t.Errorf("demo: %q", got)
	}
}
