package addon

import (
	"encoding/json"
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
