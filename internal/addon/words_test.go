package addon

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/config"
)

// TestDurationOptionsReadAsInTheEnvironment: in the app, as in the environment,
// 60, "60", "60s" and "1m" are all one minute.
func TestDurationOptionsReadAsInTheEnvironment(t *testing.T) {
	var schema string
	for _, v := range config.Vars() {
		if v.Name == "POLL_INTERVAL" {
			schema = v.App
		}
	}
	match := regexp.MustCompile(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(schema, "?"), "match("), ")"))
	for _, raw := range []string{`60`, `"60"`, `"60s"`, `"1m"`, `60.0`} {
		opts := writeOptions(t, `{"cloud_api_key":"k","cloud_base_url":"https://cloud.example","mqtt_url":"tcp://b:1883","poll_interval":`+raw+`}`)
		env, err := Environment(context.Background(), map[string]string{TokenVar: "tok-123", OptionsFileVar: opts}, nil)
		if err != nil {
			t.Fatalf("poll_interval %s: %v", raw, err)
		}
		if !match.MatchString(env["POLL_INTERVAL"]) {
			t.Errorf("poll_interval %s: the app's schema %s refuses %q", raw, schema, env["POLL_INTERVAL"])
		}
		cfg, err := config.Load(env)
		if err != nil || cfg.Validate() != nil || cfg.Poll.Interval != time.Minute {
			t.Errorf("poll_interval %s: %v, %v, %v; want 1m", raw, cfg.Poll.Interval, err, cfg.Validate())
		}
	}
}

// TestBoolAndLevelWordsInOptions: a text option of the app takes the same
// words as the environment.
func TestBoolAndLevelWordsInOptions(t *testing.T) {
	opts := writeOptions(t, `{"cloud_api_key":"k","cloud_base_url":"https://cloud.example","mqtt_url":"tcp://b:1883","lan_enabled":"yes","ha_discovery":"off","log_level":"warning"}`)
	env, err := Environment(context.Background(), map[string]string{TokenVar: "tok-123", OptionsFileVar: opts}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(env)
	if err != nil || cfg.Validate() != nil || !cfg.Local.Enabled || cfg.HA.Discovery || cfg.Log.Level != "warn" {
		t.Errorf("lan_enabled %v, ha_discovery %v, log_level %q, %v, %v", cfg.Local.Enabled, cfg.HA.Discovery, cfg.Log.Level, err, cfg.Validate())
	}
}
