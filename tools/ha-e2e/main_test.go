package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/topic"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The check reads the option tables out of our own templates; if the
// template format changes, the check must notice rather than expect nil.
func TestParseSetMap(t *testing.T) {
	tpl := `{% set m = {"Low":{"modeValue":1,"workMode":1},"Auto":3} %}{{ m[value] | tojson }}`
	m := parseSetMap(tpl, "m")
	if !capability.Equal(m["Low"], map[string]any{"modeValue": int64(1), "workMode": int64(1)}) || !capability.Equal(m["Auto"], int64(3)) {
		t.Errorf("parseSetMap = %v", m)
	}
	if parseSetMap(`{{ value }}`, "m") != nil {
		t.Error("a template without a table gave one")
	}
}

// Only the known set-up lines are forgiven; anything else Home Assistant
// warns about fails the check, with its continuation lines (tracebacks).
func TestLogProblems(t *testing.T) {
	dir := t.TempDir()
	log := strings.Join([]string{
		"2026-11-22 03:02:50.001 WARNING (MainThread) [homeassistant.bootstrap] Skipping pip installation of required modules. This may cause issues",
		"2026-11-22 03:02:51.002 DEBUG (MainThread) [homeassistant.components.mqtt] fine",
		"2026-11-22 03:02:52.003 ERROR (MainThread) [homeassistant.components.mqtt.discovery] Error 'bad key' when processing MQTT discovery message",
		"Traceback (most recent call last):",
		"  File x",
		"2026-11-22 03:02:53.004 WARNING (MainThread) [homeassistant.components.light] Got `kelvin` argument in `turn_on` service, which is deprecated",
		"2026-11-22 03:02:54.005 WARNING (MainThread) [homeassistant.helpers.template] Template variable warning: 'dict object' has no attribute 'x'",
		"2026-11-25 00:27:40.101 WARNING (MainThread) [homeassistant.core] Task <Task pending name='listen state_changed' coro=<async_setup.<locals>._state_publisher() running at /opt/ha/homeassistant/components/mqtt_statestream/__init__.py:89> wait_for=<Future pending cb=[Task.task_wakeup()]> cb=[set.remove()]> was still running after final writes shutdown stage; Integrations should cancel non-critical tasks when receiving the stop event to prevent delaying shutdown",
	}, "\n") + "\n"
	if err := os.MkdirAll(filepath.Join(dir, "opt/hacfg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "opt/hacfg/ha.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := (&hass{root: dir}).logProblems()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !strings.Contains(got[0], "bad key") || !strings.Contains(got[0], "Traceback") ||
		!strings.Contains(got[1], "Template variable warning") {
		t.Errorf("logProblems = %q", got)
	}
}

func TestKelvinBoundsFromMireds(t *testing.T) {
	e := &haEntity{cfg: map[string]any{"min_mireds": 112.0, "max_mireds": 500.0}}
	lo, hi := kelvinBounds(e)
	if lo != 2000 || hi != 8928 {
		t.Errorf("kelvinBounds = %d, %d; want 2000, 8928 (what Home Assistant offers)", lo, hi)
	}
	if k := roundIn(lo+(hi-lo)/3, lo, hi); k != 4300 {
		t.Errorf("roundIn = %d", k)
	}
}

// The quota sensor must show bridge/stats' quota left, within the limit.
func TestWantQuotaLeft(t *testing.T) {
	c := &checker{st: newStore(), layout: topic.New("cloud2mqtt"), dailyLimit: 10000}
	const eid = "sensor.bridge_cloud2mqtt_quota_left"
	ha := "hastate/sensor/bridge_cloud2mqtt_quota_left/state"
	if err := c.wantQuotaLeft(eid); err == nil {
		t.Error("no bridge/stats yet, but the quota was accepted")
	}
	c.st.put(c.layout.BridgeStats(), []byte(`{"quota_left":9876}`))
	c.st.put(ha, []byte("9876.0"))
	if err := c.wantQuotaLeft(eid); err != nil {
		t.Errorf("HA shows bridge/stats' 9876: %v", err)
	}
	c.st.put(ha, []byte("9875"))
	if err := c.wantQuotaLeft(eid); err == nil {
		t.Error("HA shows 9875 against bridge/stats' 9876, but it was accepted")
	}
	c.st.put(c.layout.BridgeStats(), []byte(`{"quota_left":20000}`))
	c.st.put(ha, []byte("20000"))
	if err := c.wantQuotaLeft(eid); err == nil {
		t.Error("a quota above the daily limit was accepted")
	}
}
