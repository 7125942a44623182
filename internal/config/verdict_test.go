package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestProblemsClassifyOnce: the verdict lists Load's and Validate's
// problems as errors and the unknown variables and values in quotes as
// warnings, errors first; Validate holds only the errors.
func TestProblemsClassifyOnce(t *testing.T) {
	env := valid()
	env["POLL_INTERVAL"] = "soon"
	env["MQTT_URL"] = "http://broker:1883"
	env["MQTT_PASS"] = "x"
	env["LOG_LEVEL"] = `"debug"`
	cfg, err := Load(env)
	ps := cfg.Problems(err)
	want := []Problem{
		{Level: Error, Text: `POLL_INTERVAL="soon" is not a duration`},
		{Level: Error, Text: `MQTT_URL="http://broker:1883" has scheme "http": use tcp://, mqtt://, ssl://, mqtts://, tls://, ws:// or wss://, like tcp://127.0.0.1:1883`},
		{Level: Warning, Text: "MQTT_PASS is not a setting of cloud2mqtt and is ignored: did you mean MQTT_PASSWORD?",
			Fields: []Field{{"variable", "MQTT_PASS"}, {"did_you_mean", "MQTT_PASSWORD"}}},
		{Level: Warning, Text: "LOG_LEVEL is wrapped in quotes"},
	}
	if len(ps) != len(want) {
		t.Fatalf("problems %d, want %d: %q", len(ps), len(want), ps)
	}
	for i, w := range want {
		if ps[i].Level != w.Level || !strings.HasPrefix(ps[i].Text, w.Text) || !slices.Equal(ps[i].Fields, w.Fields) {
			t.Errorf("problem %d: %s %q %v, want %s %q %v", i, ps[i].Level, ps[i].Text, ps[i].Fields, w.Level, w.Text, w.Fields)
		}
	}
	if got := len(ps.Errors()); got != 2 {
		t.Errorf("errors %d, want 2", got)
	}
	if err := cfg.Validate(); err == nil || strings.Contains(err.Error(), "MQTT_PASS ") {
		t.Errorf("Validate: %v", err)
	}
	// As an error the verdict is found again whole; another error is read
	// a line a problem, each an error.
	var back Problems
	if !errors.As(ps.Err(), &back) || len(back) != len(ps) {
		t.Errorf("Problems.Err lost the problems: %v", back)
	}
	if Problems(nil).Err() != nil {
		t.Error("no problems is not nil")
	}
	if got := ProblemsOf(errors.New("config: a\nb")); len(got) != 2 || got[0].Level != Error || got[0].Text != "a" || got[1].Level != Error {
		t.Errorf("ProblemsOf: %q", got)
	}
}

// TestQuotaWords: the quota's warnings name only real settings, with
// durations as the environment writes them.
func TestQuotaWords(t *testing.T) {
	for _, s := range []string{DailyLimitTooLow(100, 18), QuotaSlowsPolling(time.Minute, 95*time.Second)} {
		if strings.Contains(s, "allowance") || strings.Contains(s, "%!") {
			t.Errorf("%q", s)
		}
		for _, name := range []string{"CLOUD_DAILY_LIMIT", "POLL_INTERVAL", "DEVICE_LIST_INTERVAL", "SCENE_INTERVAL"} {
			if _, ok := lookup(Config{}, name); strings.Contains(s, name) && !ok {
				t.Errorf("%s is no setting", name)
			}
		}
	}
	if got := QuotaSlowsPolling(time.Minute, 95*time.Second); !strings.Contains(got, "about every 1m35s, not every 1m:") || !strings.Contains(got, "set POLL_INTERVAL=1m35s or longer") {
		t.Errorf("%q", got)
	}
}
