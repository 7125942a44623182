package settings

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
)

// TestOptionDurationsOneRule: over MQTT, as in the environment, 60, "60",
// "60s" and "1m" are the same minute, for the bridge's options and a
// device's.
func TestOptionDurationsOneRule(t *testing.T) {
	env := envConfig(t)
	for _, raw := range []string{`60`, `"60"`, `"60s"`, `"1m"`, `60.0`} {
		for _, name := range []string{"poll_interval", "device_list_interval", "scene_interval"} {
			str, set, err := optionString(name, json.RawMessage(raw))
			if err != nil || !set {
				t.Fatalf("%s=%s: %v", name, raw, err)
			}
			c, err := withOptions(env, map[string]string{name: str})
			if err != nil {
				t.Errorf("%s=%s: %v", name, raw, err)
				continue
			}
			got := map[string]time.Duration{"poll_interval": c.Poll.Interval, "device_list_interval": c.Poll.DeviceListInterval, "scene_interval": c.Poll.SceneInterval}[name]
			if got != time.Minute {
				t.Errorf("%s=%s: %v, want 1m", name, raw, got)
			}
		}
		var d Device
		if err := setDeviceOption(&d, "poll_interval", json.RawMessage(raw)); err != nil || d.PollInterval != "1m" {
			t.Errorf("device poll_interval=%s: %q, %v; want 1m", raw, d.PollInterval, err)
		}
	}
}

// TestEveryBadOptionReported: a request with several bad options names each
// of them, and changes nothing.
func TestEveryBadOptionReported(t *testing.T) {
	s := &Settings{env: envConfig(t), saved: savedOptions{Options: map[string]string{}, Devices: map[string]Device{}}}
	s.applied = s.env
	_, err := s.SetOptions(json.RawMessage(`{"poll_interval":"soon","scene_interval":"10s","daily_limit":"lots","log_level":"loud","colour":1,"device_list_interval":true}`))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		`poll_interval: POLL_INTERVAL="soon" is not a duration`,
		`SCENE_INTERVAL=10s is below the 1m floor`,
		`daily_limit: CLOUD_DAILY_LIMIT="lots" is not a whole number`,
		`log_level: LOG_LEVEL="loud" is not a level`,
		`unknown option "colour"`,
		`device_list_interval: true is neither a string nor a number`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("the error is more than one line: %q", err)
	}
	if len(s.saved.Options) != 0 || s.changes != 0 {
		t.Errorf("a rejected request changed the settings: %v", s.saved.Options)
	}

	_, err = s.SetDeviceOptions("h6008_x", capability.Key{SKU: "H6008", Device: "X"},
		json.RawMessage(`{"poll_interval":"1s","disabled":"yes","name":3,"colour":"red"}`))
	if err == nil {
		t.Fatal("bad device options accepted")
	}
	for _, want := range []string{"poll_interval=1s is below the 2s floor", "disabled must be true, false or null", "name must be a string or null", `unknown device option "colour"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("device options error lacks %q:\n%v", want, err)
		}
	}
	if len(s.saved.Devices) != 0 || s.changes != 0 {
		t.Errorf("rejected device options changed the settings: %v", s.saved.Devices)
	}
}

// A rejected value is quoted, not echoed whole.
func TestOptionErrorQuotesABoundedExcerpt(t *testing.T) {
	big := `{"a":"` + strings.Repeat("x", 10000) + `"}`
	_, _, err := optionString("poll_interval", json.RawMessage(big))
	if err == nil || len(err.Error()) > 200 {
		t.Errorf("got %d bytes: %.120v", len(err.Error()), err)
	}
}
