package app_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/topic"
)

// lights is an account of n lights (the demo's H6008), each with its own id.
func lights(t *testing.T, n int) *cloudsim.Catalogue {
	t.Helper()
	var raw json.RawMessage
	for _, d := range cloudsim.DemoCatalogue().Devices {
		if d.SKU == "H6008" {
			raw = d.Raw
		}
	}
	var devices []map[string]any
	for i := range n {
		var d map[string]any
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		d["device"] = fmt.Sprintf("AA:BB:CC:DD:EE:%02X:%02X:01", i>>8, i&0xff)
		d["deviceName"] = fmt.Sprintf("Light %d", i)
		devices = append(devices, d)
	}
	b, err := json.Marshal(devices)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cloudsim.ParseCatalogue(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFirstStatesOf100Lights: each of 100 lights gets its first state at a 60 s
// interval, the reads sent as soon as the device list is in, with the clock
// standing still. It logs how long that took.
func TestFirstStatesOf100Lights(t *testing.T) {
	t.Parallel()
	start := time.Now()
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: lights(t, 100)}, env: map[string]string{"POLL_INTERVAL": "60s"}, frozen: true,
		watch: "cloud2mqtt/#"})
	devs := h.sim.Devices()
	var listed time.Time
	h.watch.until(time.Minute, "every first state", func() bool {
		if listed.IsZero() {
			if _, ok := h.watch.get("cloud2mqtt/bridge/devices"); ok {
				listed = time.Now()
			}
		}
		for _, d := range devs {
			if p, _ := h.watch.get("cloud2mqtt/" + topic.DeviceID(d.SKU, d.Device) + "/state"); p == "" {
				return false
			}
		}
		return true
	})
	now := time.Now()
	t.Logf("100 lights: every first state %v after start, %v after the device list was published",
		now.Sub(start).Round(time.Millisecond), now.Sub(listed).Round(time.Millisecond))
}
