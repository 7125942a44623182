package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestQuotedValues (issue 41 §2): a value wholly wrapped in one pair of
// matching quotes, as docker run --env-file keeps them, is used without
// them, with one warning naming the variable and never showing a secret.
func TestQuotedValues(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte("\"k-123\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		environ  map[string]string
		check    func(Config) bool
		warnings []string // each a warning's text, in order
	}{
		{"quoted key", with(valid(), "CLOUD_API_KEY", `"k-123"`),
			func(c Config) bool { return c.Cloud.APIKey.Reveal() == "k-123" },
			[]string{"CLOUD_API_KEY is wrapped in quotes: they were removed and the value inside is used; docker run --env-file keeps quotes as part of the value, so write CLOUD_API_KEY=value without them"}},
		{"quoted duration", with(valid(), "POLL_INTERVAL", `"60s"`),
			func(c Config) bool { return c.Poll.Interval == time.Minute },
			[]string{"POLL_INTERVAL is wrapped in quotes"}},
		{"single quotes", with(valid(), "LOG_LEVEL", `'debug'`, "HA_DISCOVERY", `'false'`),
			func(c Config) bool { return c.Log.Level == "debug" && !c.HA.Discovery },
			[]string{"HA_DISCOVERY is wrapped in quotes", "LOG_LEVEL is wrapped in quotes"}}, // in config.example.env's order
		{"key file with quotes", with(valid(), "CLOUD_API_KEY", "", "CLOUD_API_KEY_FILE", keyFile),
			func(c Config) bool { return c.Cloud.APIKey.Reveal() == "k-123" },
			[]string{"the file CLOUD_API_KEY_FILE names holds the secret wrapped in quotes: they were removed and the text inside is used; write the secret alone in the file, without quotes"}},
		{"quotes inside are kept", with(valid(), "MQTT_CLIENT_ID", `a"b"`),
			func(c Config) bool { return c.MQTT.ClientID == `a"b"` }, nil},
		{"one quote is kept", with(valid(), "MQTT_USERNAME", `"bob`),
			func(c Config) bool { return c.MQTT.Username == `"bob` }, nil},
		{"mixed quotes are kept", with(valid(), "MQTT_USERNAME", `"bob'`),
			func(c Config) bool { return c.MQTT.Username == `"bob'` }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(tc.environ)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if err := cfg.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
			if !tc.check(cfg) {
				t.Errorf("value not taken without its quotes: %s", cfg)
			}
			got := cfg.Warnings()
			if len(got) != len(tc.warnings) {
				t.Fatalf("warnings %q, want %d", got, len(tc.warnings))
			}
			for i, w := range got {
				if !strings.HasPrefix(w, tc.warnings[i]) {
					t.Errorf("warning %q, want it to start %q", w, tc.warnings[i])
				}
				if strings.Contains(w, "k-123") {
					t.Errorf("a warning shows the key: %s", w)
				}
			}
		})
	}

	// An unbalanced quote still fails, showing what was given.
	if msg := loadErrors(with(valid(), "POLL_INTERVAL", `"60s`), false); !strings.Contains(msg, `POLL_INTERVAL="\"60s" is not a duration`) {
		t.Errorf(`POLL_INTERVAL="60s: %s`, msg)
	}
}

// TestLogLevelWarning (issue 41 §5): LOG_LEVEL=warning, the word the
// bridge's own log lines carry, is warn, in the environment and as an
// option.
func TestLogLevelWarning(t *testing.T) {
	for _, v := range []string{"warning", "WARNING", " Warning ", "warn"} {
		cfg, err := Load(with(valid(), "LOG_LEVEL", v))
		if err != nil || cfg.Validate() != nil || cfg.Log.Level != "warn" {
			t.Errorf("LOG_LEVEL=%q: %q, %v, %v; want warn", v, cfg.Log.Level, err, cfg.Validate())
		}
		set := mustLoad(t, valid())
		if err := set.Set("LOG_LEVEL", v); err != nil || set.Log.Level != "warn" {
			t.Errorf("Set(LOG_LEVEL, %q): %q, %v; want warn", v, set.Log.Level, err)
		}
	}
	if msg := loadErrors(with(valid(), "LOG_LEVEL", "warnings"), false); !strings.Contains(msg, `LOG_LEVEL="warnings" is not a level: use one of trace, debug, info, warn, error`) {
		t.Errorf("LOG_LEVEL=warnings: %s", msg)
	}
}

// TestBoolWords (issue 41 §5): yes, on, no and off, in any case, are
// booleans in the environment as in options; anything else is refused.
func TestBoolWords(t *testing.T) {
	for v, want := range map[string]bool{
		"yes": true, "YES": true, "On": true, " on ": true, "true": true, "TRUE": true, "1": true,
		"no": false, "No": false, "off": false, "OFF": false, "false": false, "0": false,
	} {
		cfg, err := Load(with(valid(), "HA_DISCOVERY", v, "LAN_ENABLED", v))
		if err != nil || cfg.Validate() != nil || cfg.HA.Discovery != want || cfg.Local.Enabled != want {
			t.Errorf("%q: HA_DISCOVERY %v, LAN_ENABLED %v, %v, %v; want %v", v, cfg.HA.Discovery, cfg.Local.Enabled, err, cfg.Validate(), want)
		}
		set := mustLoad(t, with(valid(), "LAN_ENABLED", strings.TrimSpace(map[bool]string{true: "false", false: "true"}[want])))
		if err := set.Set("LAN_ENABLED", v); err != nil || set.Local.Enabled != want {
			t.Errorf("Set(LAN_ENABLED, %q): %v, %v; want %v", v, set.Local.Enabled, err, want)
		}
	}
	for _, v := range []string{"maybe", "y", "enabled", "oui"} {
		if msg := loadErrors(with(valid(), "LAN_ENABLED", v), false); !strings.Contains(msg, "LAN_ENABLED="+Quote(v)+" is not true or false") {
			t.Errorf("LAN_ENABLED=%q: %s", v, msg)
		}
	}
}

// TestExportLine (issue 41 §5): a line "export NAME=value" of a
// shell-style env file either arrives as a variable named "export NAME"
// (one error naming the fix, and no "is empty" beside it) or is dropped
// (systemd's EnvironmentFile=), and then the "is empty" error says it.
func TestExportLine(t *testing.T) {
	environ := map[string]string{"CLOUD_BASE_URL": "https://api.example.com", "export CLOUD_API_KEY": "k-123", "EXPORT  POLL_INTERVAL": "30s"}
	msg := loadErrors(environ, false)
	for _, want := range []string{
		`CLOUD_API_KEY is set as "export CLOUD_API_KEY": the env file has a shell line "export CLOUD_API_KEY=...", and docker run --env-file takes "export CLOUD_API_KEY" as the name; remove "export " from the line (env files hold NAME=value lines)`,
		`POLL_INTERVAL is set as "EXPORT  POLL_INTERVAL"`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "is empty") || strings.Contains(msg, "k-123") || strings.Count(msg, "\n") != 1 {
		t.Errorf("want two lines, no \"is empty\", no key:\n%s", msg)
	}
	// Set both ways: the variable wins, nothing to report.
	if msg := loadErrors(with(valid(), "export CLOUD_API_KEY", "x"), false); msg != "" {
		t.Errorf("CLOUD_API_KEY set too: %s", msg)
	}

	msg = loadErrors(map[string]string{"CLOUD_BASE_URL": "https://api.example.com"}, false)
	if want := `CLOUD_API_KEY is empty: set it, or CLOUD_API_KEY_FILE, or a systemd credential named cloud_api_key; if the env file has a line "export CLOUD_API_KEY=...", remove "export " (systemd ignores such lines)`; !strings.Contains(msg, want) {
		t.Errorf("the error lacks %q:\n%s", want, msg)
	}
}
