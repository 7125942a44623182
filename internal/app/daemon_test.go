package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func getURL(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHealthAndMetrics: /healthz is 200 while all is well and 503 with the
// reason when the broker is gone; /metrics has the documented series.
func TestHealthAndMetrics(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{env: map[string]string{"HTTP_ADDR": "127.0.0.1:0"}})
	h.devices()
	base := h.main.HTTPURL()
	if base == "" {
		t.Fatal("no HTTP endpoint")
	}
	var health struct {
		Healthy bool     `json:"healthy"`
		Reasons []string `json:"reasons"`
	}
	h.watch.until(wait, "a healthy /healthz", func() bool {
		code, body := getURL(t, base+"/healthz")
		return code == 200 && json.Unmarshal([]byte(body), &health) == nil && health.Healthy
	})
	h.publish("cloud2mqtt/"+h.devices()[0].ID+"/set/powerSwitch", "1")
	// Reads go out on a one-second grid: the first may come after the
	// command.
	h.watch.until(wait, "the command and a state read in the metrics", func() bool {
		_, body := getURL(t, base+"/metrics")
		return strings.Contains(body, `cloud2mqtt_commands_total{outcome="ok"} 1`) &&
			strings.Contains(body, `cloud2mqtt_cloud_requests_total{endpoint="state",status="200"}`)
	})
	_, body := getURL(t, base+"/metrics")
	for _, series := range []string{
		`cloud2mqtt_cloud_requests_total{endpoint="devices",status="200"}`,
		`cloud2mqtt_cloud_requests_total{endpoint="state",status="200"}`,
		`cloud2mqtt_cloud_rate_limited_total 0`,
		`cloud2mqtt_tokens_control_account`,
		`cloud2mqtt_queue_depth`,
		`cloud2mqtt_coalesced_total`,
		`cloud2mqtt_command_latency_seconds_count 1`,
		`cloud2mqtt_state_age_seconds`,
		`cloud2mqtt_devices_online`,
		`cloud2mqtt_mqtt_connected 1`,
		`cloud2mqtt_mqtt_client_id_conflicts_total 0`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}

	h.broker.Stop()
	h.watch.until(wait, "an unhealthy /healthz naming the broker", func() bool {
		code, body := getURL(t, base+"/healthz")
		return code == 503 && strings.Contains(body, "MQTT broker")
	})
}

// TestCloudEventsReachMQTT: an event pushed by the cloud's event broker
// (the live payload on GA/<key>) is published on <id>/event, and the API
// key, which is in the event topic, reaches no log line.
func TestCloudEventsReachMQTT(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{noStart: true})
	// The test broker plays the cloud's event broker too.
	h.main.Config.Cloud.EventsURL = h.broker.URL()
	h.start()
	var hum listed
	for _, d := range h.devices() {
		if _, ok := capabilityOf(d, "lackWaterEvent"); ok {
			hum = d
			break
		}
	}
	if hum.ID == "" {
		t.Fatal("no demo device with lackWaterEvent")
	}
	payload := `{"sku":"` + hum.SKU + `","device":"` + hum.Device + `","deviceName":"x","capabilities":[{"type":"devices.capabilities.event","instance":"lackWaterEvent","state":[{"name":"lack","value":1,"message":"Lack of Water"}]}]}`
	// The events subscription may come up a moment after ready: resend
	// until the bridge has published the event.
	h.watch.until(wait, "the event on <id>/event", func() bool {
		if _, ok := h.watch.get("cloud2mqtt/" + hum.ID + "/event"); ok {
			return true
		}
		h.publish("GA/"+testKey, payload)
		return false
	})
	ev := h.watch.waitJSON(wait, "cloud2mqtt/"+hum.ID+"/event", func(m map[string]any) bool { return m["event_type"] == "lack" })
	if ev["message"] != "Lack of Water" || ev["instance"] != "lackWaterEvent" {
		t.Errorf("event payload %v", ev)
	}
	h.stop()
	if strings.Contains(h.logs.String(), testKey) {
		t.Errorf("the API key is in the logs")
	}
}

// TestShutdownPublishesOffline: a clean stop leaves the bridge's retained
// state "offline" (not only through the will).
func TestShutdownPublishesOffline(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{})
	h.devices()
	h.watch.until(wait, "bridge online", func() bool { p, _ := h.watch.get("cloud2mqtt/bridge/state"); return p == "online" })
	h.stop()
	h.watch.until(wait, "bridge offline after stop", func() bool { p, _ := h.watch.get("cloud2mqtt/bridge/state"); return p == "offline" })
}
