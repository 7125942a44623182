package app_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/mqtt"
)

// TestCommandQueuedWhileStoppedTooLongIsDropped: "heater on" is published while
// the bridge is stopped and delivered by the broker at the next start. Stopped
// longer than MQTT_QUEUED_COMMAND_MAX_AGE by its STATE_DIR record, the bridge
// drops it with one warning naming the count, topic and setting; a command sent
// once it is back runs.
func TestCommandQueuedWhileStoppedTooLongIsDropped(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(3)},
		env: map[string]string{"STATE_DIR": t.TempDir()}})
	d, id := h.firstLight()
	h.waitValue(5*time.Second, d.Device, capability.InstancePower, 1) // the demo lights start on
	h.stop()
	h.publish("cloud2mqtt/"+id+"/set", `{"powerSwitch":0}`)
	h.clock.Advance(3 * time.Minute)
	before := len(h.sim.ControlLog())
	h.restart(true)

	// Sent once the bridge is back: the broker delivers in order, so the
	// stale one would have reached the cloud first.
	h.publish("cloud2mqtt/"+id+"/set/brightness", "41")
	h.waitValue(wait, d.Device, capability.InstanceBrightness, 41)
	if log := h.sim.ControlLog()[before:]; len(log) != 1 {
		t.Errorf("commands sent to the cloud since the restart: %v, want only the one sent once back", log)
	}
	if v, _ := h.sim.Value(d.Device, capability.InstancePower); !capability.Equal(v, capability.NormalizeValue(1)) {
		t.Errorf("power %v: the command kept by the broker for 3 minutes ran", v)
	}
	warnings := h.logLines(func(l map[string]any) bool {
		return l["level"] == "warn" && strings.Contains(fmt.Sprint(l["message"]), "MQTT_QUEUED_COMMAND_MAX_AGE")
	})
	if len(warnings) != 1 || warnings[0]["dropped"] != float64(1) || fmt.Sprint(warnings[0]["topics"]) != "[cloud2mqtt/"+id+"/set]" ||
		!strings.HasPrefix(fmt.Sprint(warnings[0]["offline"]), "3m") {
		t.Errorf("warnings %v, want one: 1 dropped on cloud2mqtt/%s/set, offline 3m", warnings, id)
	}
}

// TestClientIDIsKeptInTheStateDirectory: without MQTT_CLIENT_ID the bridge uses
// a random id kept in STATE_DIR across restarts; a second bridge has another,
// and the id appears in no warning, which bridge/logging would publish to all.
func TestClientIDIsKeptInTheStateDirectory(t *testing.T) {
	t.Parallel()
	ids := func(h *harness) []string {
		var out []string
		for _, l := range h.logLines(func(l map[string]any) bool { return l["message"] == "connecting to MQTT broker" }) {
			out = append(out, fmt.Sprint(l["client_id"]))
		}
		return out
	}
	start := func() *harness {
		return startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(1)},
			env: map[string]string{"STATE_DIR": t.TempDir(), "MQTT_CLIENT_ID": ""}})
	}
	a, b := start(), start()
	a.restart(true)
	got, other := ids(a), ids(b)
	shape := regexp.MustCompile(`^cloud2mqtt-[0-9a-f]{12}$`)
	if len(got) != 2 || got[0] != got[1] || !shape.MatchString(got[0]) || got[0] == mqtt.DefaultClientID("cloud2mqtt/bridge/state") {
		t.Fatalf("client ids across a restart: %v, want one random id kept", got)
	}
	if len(other) != 1 || other[0] == got[0] {
		t.Errorf("a second bridge's id %v, want another than %s", other, got[0])
	}
	for _, l := range a.logLines(func(l map[string]any) bool { return l["level"] == "warn" || l["level"] == "error" }) {
		if strings.Contains(fmt.Sprint(l), got[0]) {
			t.Errorf("a warning shows the client id: %v", l)
		}
	}
}
