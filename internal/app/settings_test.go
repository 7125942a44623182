package app

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/config"
)

func envConfig(t *testing.T) config.Config {
	t.Helper()
	c, err := config.Load(map[string]string{"CLOUD_BASE_URL": "https://cloud.example", "CLOUD_API_KEY": "k"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestOptionsValidatedLikeTheEnvironment: every option is parsed and checked
// with the environment's rules, and a bad one names the fix.
func TestOptionsValidatedLikeTheEnvironment(t *testing.T) {
	env := envConfig(t)
	good, err := withOptions(env, map[string]string{"poll_interval": "5m", "log_level": "DEBUG", "daily_limit": "10000",
		"device_list_interval": "15m", "scene_interval": "12h"})
	if err != nil {
		t.Fatal(err)
	}
	if good.Poll.Interval != 5*time.Minute || good.Log.Level != "debug" || good.Cloud.DailyLimit != 10000 ||
		good.Poll.DeviceListInterval != 15*time.Minute || good.Poll.SceneInterval != 12*time.Hour {
		t.Errorf("options not applied: %+v %+v %+v", good.Poll, good.Log, good.Cloud.DailyLimit)
	}
	for opts, says := range map[string]string{
		`{"poll_interval":"1s"}`:         "POLL_INTERVAL=1s is below the 2s floor",
		`{"poll_interval":"soon"}`:       "is not a duration",
		`{"daily_limit":"-1"}`:           "CLOUD_DAILY_LIMIT=-1 is negative",
		`{"daily_limit":"lots"}`:         "is not a whole number",
		`{"log_level":"loud"}`:           "LOG_LEVEL",
		`{"scene_interval":"10s"}`:       "SCENE_INTERVAL",
		`{"device_list_interval":"10s"}`: "DEVICE_LIST_INTERVAL",
		`{"poll_intervall":"5m"}`:        "unknown option",
	} {
		var raw map[string]string
		if err := json.Unmarshal([]byte(opts), &raw); err != nil {
			t.Fatal(err)
		}
		if _, err := withOptions(env, raw); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v, want an error saying %q", opts, err, says)
		}
	}
}

func TestOptionValues(t *testing.T) {
	for _, tc := range []struct {
		name, raw, want string
		set             bool
	}{
		{"poll_interval", `"90s"`, "90s", true},
		{"poll_interval", `90`, "90s", true}, // Home Assistant's number sends seconds
		{"daily_limit", `10000`, "10000", true},
		{"log_level", `"warn"`, "warn", true},
		{"poll_interval", `null`, "", false},
	} {
		got, set, err := optionString(tc.name, json.RawMessage(tc.raw))
		if err != nil || got != tc.want || set != tc.set {
			t.Errorf("%s=%s: %q, %v, %v; want %q, %v", tc.name, tc.raw, got, set, err, tc.want, tc.set)
		}
	}
	if _, _, err := optionString("poll_interval", json.RawMessage(`{"a":1}`)); err == nil {
		t.Error("an object was taken as an option value")
	}
}
