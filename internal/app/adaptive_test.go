package app_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloudsim"
)

// TestPollingShownAndKept: a light changed at the cloud every 10 s is read
// more often than the three that never change, and bridge/devices and the
// status page say so, with why; what the daemon learned is kept in the
// state directory, so that after a restart the busy light is read often
// again from its first shares on.
func TestPollingShownAndKept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cat, err := cloudsim.Household(4) // four lights
	if err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, harnessOptions{
		env: map[string]string{"POLL_INTERVAL": "60s", "STATE_DIR": dir, "HTTP_ADDR": "127.0.0.1:0"},
		sim: cloudsim.Options{Catalogue: cat},
	})
	ids := h.ids()
	availability(h.watch, wait, "online", ids...)
	busy := h.sim.Devices()[0].Device
	for i := range 60 { // ten minutes on the clock
		h.idle(time.Now().Add(wait), "the daemon idle before a change")
		if err := h.sim.SetValue(busy, capability.InstanceBrightness, int64(i%100+1)); err != nil {
			t.Fatal(err)
		}
		h.clock.Advance(10 * time.Second)
	}
	want := map[string]string{ids[0]: "changes often", ids[1]: "quiet", ids[2]: "quiet", ids[3]: "quiet"}
	h.jumpUntil(wait, time.Second, "bridge/devices saying how often each device is read, and why", func() bool {
		return pollsAre(devicesPolls(h), want)
	})
	resp, err := http.Get(h.main.HTTPURL() + "/api/devices")
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Devices []struct {
			ID           string  `json:"id"`
			PollInterval float64 `json:"poll_interval"`
			PollWhy      string  `json:"poll_why"`
		} `json:"devices"`
	}
	err = json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range page.Devices {
		if d.PollWhy != want[d.ID] || (d.PollWhy == "changes often") != (d.PollInterval < 60) {
			t.Errorf("/api/devices: %s every %.0f s (%s), want %s", d.ID, d.PollInterval, d.PollWhy, want[d.ID])
		}
	}

	h.restart(true)
	if _, err := os.Stat(filepath.Join(dir, "activity.json")); err != nil {
		t.Errorf("what was learned is not in the state directory: %v", err)
	}
	h.jumpUntil(wait, time.Second, "bridge/devices after the restart, as learned before it", func() bool {
		return pollsAre(devicesPolls(h), want)
	})
}

// devicesPolls is each device's "poll" in bridge/devices, by id.
func devicesPolls(h *harness) map[string]struct{ Interval, Why string } {
	p, _ := h.watch.get("cloud2mqtt/bridge/devices")
	var list []struct {
		ID   string `json:"id"`
		Poll *struct {
			Interval string `json:"interval"`
			Why      string `json:"why"`
		} `json:"poll"`
	}
	out := map[string]struct{ Interval, Why string }{}
	if json.Unmarshal([]byte(p), &list) != nil {
		return out
	}
	for _, d := range list {
		if d.Poll != nil {
			out[d.ID] = struct{ Interval, Why string }{d.Poll.Interval, d.Poll.Why}
		}
	}
	return out
}

func pollsAre(got map[string]struct{ Interval, Why string }, want map[string]string) bool {
	for id, why := range want {
		if got[id].Why != why {
			return false
		}
	}
	return true
}
