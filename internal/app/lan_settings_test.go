package app_test

import (
	"strings"
	"testing"

	"cloud2mqtt/internal/app"
	"cloud2mqtt/internal/config"
)

// TestValidateLANSettings: LAN_LISTEN and LAN_SCAN_TARGETS, text in config
// and parsed by lan, are among the configuration's problems, named with the
// fix, also with LAN_ENABLED=false; a list with blanks and an IPv6 target
// is taken.
func TestValidateLANSettings(t *testing.T) {
	t.Parallel()
	base := map[string]string{"CLOUD_BASE_URL": "https://api.example.com", "CLOUD_API_KEY": "k"}
	load := func(name, value string) config.Config {
		t.Helper()
		env := map[string]string{name: value}
		for k, v := range base {
			env[k] = v
		}
		cfg, err := config.Load(env)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	for _, tc := range []struct{ name, value, want string }{
		{"LAN_LISTEN", "4002", "LAN_LISTEN"},
		{"LAN_LISTEN", "lights:4002", "not an IP address"},
		{"LAN_SCAN_TARGETS", "239.255.255.250,,10.0.0.5", "empty entry"},
		{"LAN_SCAN_TARGETS", "10.0.0.5:99999", "port"},
	} {
		err := app.Validate(load(tc.name, tc.value))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s=%s: %v, want an error naming it and saying %q", tc.name, tc.value, err, tc.want)
		}
	}
	// A long value is cut as every value of the configuration's errors is.
	long := strings.Repeat("10.0.0.5,", 20) + ","
	if err := app.Validate(load("LAN_SCAN_TARGETS", long)); err == nil || strings.Contains(err.Error(), long) ||
		!strings.Contains(err.Error(), "(181 characters)") {
		t.Errorf("a long LAN_SCAN_TARGETS: %v", err)
	}
	if err := app.Validate(load("LAN_SCAN_TARGETS", "239.255.255.250, 192.168.20.31, [fd00::5]:4001")); err != nil {
		t.Errorf("a valid list: %v", err)
	}
}
