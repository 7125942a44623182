package addon

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cloud2mqtt/internal/config"
)

// FuzzReadOptions: any options file gives either variables that are
// settings, each with the text the file held, or an error that never
// repeats a value (the marker stands for a secret typed as a value).
func FuzzReadOptions(f *testing.F) {
	for _, s := range []string{
		`{"cloud_api_key":"SECRET-1","poll_interval":"30s","cloud_daily_limit":100,"ha_discovery":false,"mqtt_url":null}`,
		`{"cloud_api_key":["SECRET-1"]}`, `{"SECRET-1":1}`, `[]`, `{}`, `{"log_level":"info"} {"x":1}`, `{"cloud_daily_limit":1e3}`, `null`, `{"cloud_api_key":"SECRET-1"} x`,
	} {
		f.Add([]byte(s))
	}
	known := map[string]bool{}
	for _, v := range config.Vars() {
		known[v.Name] = true
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "options.json")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		env, err := ReadOptions(p)
		if err != nil {
			// Keys are named in errors (that is the point); values never.
			var keys map[string]json.RawMessage
			keyed := json.Unmarshal(data, &keys) == nil
			for k := range keys {
				keyed = keyed && !strings.Contains(k, "SECRET-1")
			}
			if strings.Contains(err.Error(), "SECRET-1") && keyed {
				t.Fatalf("the error repeats a value: %v", err)
			}
			return
		}
		for k, v := range env {
			if !known[k] || v == "" {
				t.Fatalf("%s=%q from %q", k, v, data)
			}
		}
	})
}

// FuzzScrub: whatever a secret option holds, and however a message quotes
// it, the scrubbed error never shows it; a long value of any setting
// neither.
func FuzzScrub(f *testing.F) {
	for _, s := range []string{"SECRET-1", "k3y\"with\\quotes\ttab", "Ünïcödé-key", "\x00\x01bin", strings.Repeat("L", 80), "****", "a\nb\nc\nd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		err := fmt.Errorf("config: CLOUD_API_KEY is odd\nPOLL_INTERVAL=%q is not a duration\nLOG_LEVEL=%+q\nMQTT_CLIENT_ID=%s", v, v, v)
		got := Scrub(err, map[string]string{"CLOUD_API_KEY": v, "POLL_INTERVAL": v}).Error()
		// A value made only of the mask and the quoting around it ("***)
		// is found in any scrubbed text: that is the mask, not the value.
		if len(v) >= minHidden && strings.Trim(v, `*"\`) != "" && strings.Contains(got, v) {
			t.Fatalf("the secret %q shows in %q", v, got)
		}
		long := strings.Repeat("y", 70) + v
		got = Scrub(fmt.Errorf("MQTT_BASE_TOPIC=%q and %s", long, long), map[string]string{"MQTT_BASE_TOPIC": long}).Error()
		if strings.Contains(got, long[:65]) {
			t.Fatalf("a value of %d characters shows in %q", len(long), got)
		}
	})
}
