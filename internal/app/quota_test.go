package app_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/cloudsim"
)

// TestQuotaLearnedIsShown: with a quota of 45 per 180 s told by the cloud, 18
// devices and nothing configured, bridge/stats, /metrics, the page's API and the
// bridge's Home Assistant device show the learned limit, and nothing is refused.
// The quota's windows over time are the poller's TestQuotaAtScale.
func TestQuotaLearnedIsShown(t *testing.T) {
	t.Parallel()
	cat, err := cloudsim.Household(18)
	if err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, harnessOptions{noStart: true,
		env: map[string]string{"POLL_INTERVAL": "60s", "HTTP_ADDR": "127.0.0.1:0"},
		sim: cloudsim.Options{Catalogue: cat, Quota: cloudsim.Quota{Limit: 45, Window: 180 * time.Second}}})
	h.start()

	// The stats follow a change within seconds: the clock jumps them.
	st := h.jumpStats(func(m map[string]any) bool {
		return m["quota_limit"] == float64(45) && m["quota_source"] == "learned"
	})
	left, _ := st["quota_remaining"].(float64)
	reset, _ := time.Parse(time.RFC3339, toString(st["quota_reset"]))
	if until := reset.Sub(h.clock.Now()); left < 0 || left > 45 || until > 180*time.Second || until < -5*time.Second {
		t.Errorf("bridge/stats: %d left until %v", int(left), st["quota_reset"])
	}
	if got := metricValue(t, h, "cloud2mqtt_quota_limit"); got != 45 {
		t.Errorf("/metrics cloud2mqtt_quota_limit %d, want 45", got)
	}
	if got := metricValue(t, h, "cloud2mqtt_quota_learned"); got != 1 {
		t.Errorf("/metrics cloud2mqtt_quota_learned %d, want 1", got)
	}
	resp, err := http.Get(h.main.HTTPURL() + "/api/budget")
	if err != nil {
		t.Fatal(err)
	}
	var budget struct {
		Quota *struct {
			Limit  int    `json:"limit"`
			Source string `json:"source"`
		} `json:"quota"`
	}
	err = json.NewDecoder(resp.Body).Decode(&budget)
	resp.Body.Close()
	if err != nil || budget.Quota == nil || budget.Quota.Limit != 45 || budget.Quota.Source != "learned" {
		t.Errorf("/api/budget quota: %+v (%v)", budget.Quota, err)
	}
	for _, key := range []string{"sensor/bridge_cloud2mqtt/quota_limit", "sensor/bridge_cloud2mqtt/quota_remaining",
		"sensor/bridge_cloud2mqtt/quota_reset", "sensor/bridge_cloud2mqtt/quota_source", "binary_sensor/bridge_cloud2mqtt/quota_short"} {
		h.watch.until(wait, "the discovery config of "+key, func() bool {
			p, ok := h.watch.get("homeassistant/" + key + "/config")
			return ok && strings.Contains(p, "cloud2mqtt/bridge/stats")
		})
	}
	if n := h.sim.Counts().RateLimited[cloudsim.BucketQuota]; n != 0 {
		t.Errorf("%d requests refused by the quota", n)
	}
}

// When another app spends the account's quota, <id>/get is answered with
// the reason and when the quota renews (the read that met the 429, then
// at once without sending), and bridge/stats says the bridge is rate
// limited.
func TestQuotaSpentAnswersGet(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{
		env: map[string]string{"POLL_INTERVAL": "60s"},
		sim: cloudsim.Options{Catalogue: firstDevices(2), Quota: cloudsim.Quota{Limit: 1000, Window: time.Hour}}})
	ids := h.ids()
	availability(h.watch, wait, "online", ids...)
	// The start's scene lists go after the first reads: spent while they
	// are on the wire, each would meet the spent quota too.
	h.devicesWithScenes()
	h.sim.SpendQuota(1000)
	for i := range 2 {
		h.publish("cloud2mqtt/"+ids[i]+"/get", "")
		e := h.watch.waitJSON(wait, "cloud2mqtt/"+ids[i]+"/error", func(map[string]any) bool { return true })
		msg := toString(e["error"])
		if e["code"] != float64(429) || !strings.Contains(msg, "quota") || !strings.Contains(msg, "renews at ") {
			t.Errorf("<id>/get with the quota spent: %v, want code 429 naming the quota and when it renews", e)
		}
	}
	h.jumpStats(func(m map[string]any) bool {
		return m["quota_remaining"] == float64(0) && m["rate_limited"] == true
	})
	refused := 0
	for _, q := range h.sim.Requests() {
		if q.Bucket == cloudsim.BucketQuota {
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("%d requests refused by the quota, want 1: the first that found it spent", refused)
	}
}
