package settings

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
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

// TestOptionNamesSuggested: an unknown option name over MQTT gets the one
// meant, as the environment's variables do, and a name or value over 64
// characters is cut in the error, which says how long it was.
func TestOptionNamesSuggested(t *testing.T) {
	s := &Settings{env: envConfig(t), saved: savedOptions{Options: map[string]string{}, Devices: map[string]Device{}}}
	s.applied = s.env
	long := strings.Repeat("y", 300)
	for raw, want := range map[string]string{
		`{"pol_interval":"5m"}`:                    `unknown option "pol_interval": did you mean poll_interval?`,
		`{"LOG_LEVEL":"debug"}`:                    `unknown option "LOG_LEVEL": did you mean log_level?`,
		`{"dailylimit":5}`:                         `unknown option "dailylimit": did you mean daily_limit?`,
		`{"colour":1}`:                             `unknown option "colour"; the options are daily_limit, device_list_interval, log_level, poll_interval, scene_interval`,
		`{"` + long + `":1}`:                       `unknown option "` + strings.Repeat("y", 64) + `"… (300 characters); the options are`,
		`{"poll_interval":"` + long + `"}`:         `POLL_INTERVAL="` + strings.Repeat("y", 64) + `"… (300 characters) is not a duration`,
		`{"log_level":"` + long + `"}`:             `LOG_LEVEL="` + strings.Repeat("y", 64) + `"… (300 characters) is not a level`,
		`{"daily_limit":"` + long + `"}`:           `CLOUD_DAILY_LIMIT="` + strings.Repeat("y", 64) + `"… (300 characters) is not a whole number`,
		`{"poll_interval":["` + long[:200] + `"]}`: `poll_interval: ["` + strings.Repeat("y", 62) + `… (204 characters) is neither a string nor a number`,
	} {
		_, err := s.SetOptions(json.RawMessage(raw))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.40s: %v, want it to say %q", raw, err, want)
			continue
		}
		if strings.Contains(err.Error(), strings.Repeat("y", 65)) {
			t.Errorf("%.40s: more than 64 characters of it: %v", raw, err)
		}
	}
	for raw, want := range map[string]string{
		`{"disable":true}`:                 `unknown device option "disable": did you mean disabled?`,
		`{"interval":"2m"}`:                `unknown device option "interval"; the device options are disabled, name, poll_interval`,
		`{"disabled":"` + long + `"}`:      `disabled must be true, false or null, not "` + strings.Repeat("y", 63) + `… (302 characters)`,
		`{"poll_interval":"` + long + `"}`: `poll_interval="` + strings.Repeat("y", 64) + `"… (300 characters) is not a duration`,
	} {
		_, err := s.SetDeviceOptions("h6008_x", capability.Key{SKU: "H6008", Device: "x"}, json.RawMessage(raw))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("device %.40s: %v, want it to say %q", raw, err, want)
		}
	}
}
