package app_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/topic"
)

// restart stops the daemon and starts a new one with the same
// configuration (and so the same MQTT session); wait says whether to wait
// for its first device list.
func (h *harness) restart(wait bool) {
	h.t.Helper()
	h.stop()
	h.main = h.newMain(h.main.Config)
	if wait {
		h.start()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.main.Run(ctx) }()
	h.t.Cleanup(h.stop)
}

// firstLight is the first device of the simulator (a light) and its id.
func (h *harness) firstLight() (capability.Device, string) {
	d := h.sim.Devices()[0]
	return d, topic.DeviceID(d.SKU, d.Device)
}

// waitValue waits until the simulated device has the value.
func (h *harness) waitValue(timeout time.Duration, device, instance string, want any) {
	h.t.Helper()
	h.watch.until(timeout, device+" "+instance+" in the cloud", func() bool {
		v, ok := h.sim.Value(device, instance)
		return ok && capability.Equal(v, capability.NormalizeValue(want))
	})
}

// noErrors fails the test if anything was published on <id>/error.
func (h *harness) noErrors(id string) {
	h.t.Helper()
	for _, m := range h.watch.messages() {
		if m.topic == "cloud2mqtt/"+id+"/error" {
			h.t.Errorf("error published for %s: %s", id, m.payload)
		}
	}
}

// TestCommandQueuedWhileStoppedIsApplied: a user stops the bridge,
// publishes a command (QoS 1) and starts the bridge again. The broker
// delivers the command at connect, before the device list is in; the
// bridge holds it and applies it once the list arrives. The state
// directory says the bridge was away less than MQTT_QUEUED_COMMAND_MAX_AGE
// (without one it cannot know, and drops it).
func TestCommandQueuedWhileStoppedIsApplied(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(3)},
		env: map[string]string{"STATE_DIR": t.TempDir()}})
	d, id := h.firstLight()
	h.waitValue(5*time.Second, d.Device, capability.InstancePower, 1) // the demo lights start on
	h.stop()
	h.publish("cloud2mqtt/"+id+"/set", `{"powerSwitch":0}`)
	h.restart(false)
	h.waitValue(15*time.Second, d.Device, capability.InstancePower, 0)
	h.noErrors(id)
	if n := len(h.logLines(func(l map[string]any) bool { return l["message"] == "command held until the device list is read" })); n == 0 {
		t.Log("the command arrived after the device list (nothing had to be held); the test still proves it was applied")
	}
}

// TestCloudDownAtStart: with the cloud unreachable at start and no state
// directory, the bridge connects, holds a command, and applies it when the
// cloud answers.
func TestCloudDownAtStart(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(3)}, noStart: true})
	h.sim.Faults().FailFraction(cloudsim.AnyEndpoint, 1, 503)
	h.restart(false)
	h.watch.until(10*time.Second, "bridge online", func() bool { p, _ := h.watch.get("cloud2mqtt/bridge/state"); return p == "online" })
	d, id := h.firstLight()
	h.publish("cloud2mqtt/"+id+"/set/brightness", "33")
	// The bridge asked for the device list and was refused twice: it must
	// have published no list of its own.
	h.watch.until(wait, "two refused device-list requests", func() bool {
		return h.sim.Counts().Of(cloud.EndpointDevices, 503) >= 2
	})
	if _, ok := h.watch.get("cloud2mqtt/bridge/devices"); ok {
		t.Error("bridge/devices published although the cloud never answered and there is no state directory")
	}
	h.sim.Faults().Clear()
	h.waitValue(30*time.Second, d.Device, capability.InstanceBrightness, 33)
	h.noErrors(id)
}

// TestStateDirectoryStartsWithoutTheCloud: with STATE_DIR, a start with the
// cloud down publishes the device list, discovery and the last known states
// at once; a command sent meanwhile is applied once the cloud is back, with
// no error published.
func TestStateDirectoryStartsWithoutTheCloud(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(3)}, env: map[string]string{"STATE_DIR": dir}})
	d, id := h.firstLight()
	h.watch.waitJSON(10*time.Second, "cloud2mqtt/"+id+"/state", func(m map[string]any) bool { return m["powerSwitch"] != nil })
	h.stop()
	if _, err := os.Stat(filepath.Join(dir, "devices.json")); err != nil {
		t.Fatalf("no devices.json in STATE_DIR after a clean stop: %v", err)
	}
	// Forget what the broker kept, so only the new run can publish it.
	for _, tp := range []string{"cloud2mqtt/bridge/devices", "cloud2mqtt/" + id + "/state"} {
		tok := h.watch.c.Publish(tp, 1, true, "")
		tok.Wait()
	}
	h.watch.until(5*time.Second, "retained topics cleared", func() bool {
		p, _ := h.watch.get("cloud2mqtt/bridge/devices")
		return p == ""
	})

	h.sim.Faults().FailFraction(cloudsim.AnyEndpoint, 1, 503)
	start := time.Now()
	h.restart(false)
	h.watch.until(10*time.Second, "bridge/devices from the state directory", func() bool {
		p, _ := h.watch.get("cloud2mqtt/bridge/devices")
		var list []map[string]any
		return json.Unmarshal([]byte(p), &list) == nil && len(list) == 3
	})
	h.watch.waitJSON(10*time.Second, "cloud2mqtt/"+id+"/state", func(m map[string]any) bool { return m["powerSwitch"] != nil })
	t.Logf("device list and last state published %v after the start, the cloud down", time.Since(start).Round(time.Millisecond))

	h.publish("cloud2mqtt/"+id+"/set/brightness", "44")
	// The command is sent and refused, and retried while the cloud fails.
	h.watch.until(wait, "the command refused twice by the failing cloud", func() bool {
		return h.sim.Counts().Of(cloud.EndpointControl, 503) >= 2
	})
	h.sim.Faults().Clear()
	h.waitValue(60*time.Second, d.Device, capability.InstanceBrightness, 44)
	h.noErrors(id)
}

// TestCorruptStateFileIsIgnored: a damaged devices.json is a warning, and
// the bridge starts from the cloud as if there were none.
func TestCorruptStateFileIsIgnored(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "devices.json"), []byte(`{"format":"cloud2mqtt/devices","version":1,"data":{"devices":[{"dev`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(3)}, env: map[string]string{"STATE_DIR": dir}})
	h.watch.until(10*time.Second, "the device list", func() bool {
		p, _ := h.watch.get("cloud2mqtt/bridge/devices")
		return strings.Count(p, `"sku"`) == 3
	})
	warned := h.logLines(func(l map[string]any) bool {
		return l["level"] == "warn" && strings.Contains(l["error"].(string)+"", "devices.json")
	})
	if len(warned) != 1 {
		t.Errorf("%d warnings naming devices.json, want one", len(warned))
	}
	h.stop()
	b, err := os.ReadFile(filepath.Join(dir, "devices.json"))
	if err != nil || !json.Valid(b) {
		t.Errorf("the damaged file was not replaced by a good one at stop: %v", err)
	}
}

// TestRequestCountSurvivesRestart: with STATE_DIR, today's request count
// goes on after a restart instead of starting from zero, so the daily plan
// knows what was spent.
func TestRequestCountSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(2)}, env: map[string]string{"STATE_DIR": dir}})
	var before float64
	h.watch.waitJSON(15*time.Second, "cloud2mqtt/bridge/stats", func(m map[string]any) bool {
		n, _ := m["requests_today"].(float64)
		before = n
		return n >= 5
	})
	h.stop()
	h.watch.c.Publish("cloud2mqtt/bridge/stats", 1, true, "").Wait()
	h.restart(true)
	h.watch.waitJSON(15*time.Second, "cloud2mqtt/bridge/stats", func(m map[string]any) bool {
		n, _ := m["requests_today"].(float64)
		return n > before
	})
}
