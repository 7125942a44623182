//go:build mosquitto

package app_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/mqtttest"
	"cloud2mqtt/internal/topic"
)

// Floods of commands through a real mosquitto with its default settings
// (max_queued_messages 1000, max_inflight_messages 20): whatever the bridge
// does not take in time, the broker drops.

// floodLights is an account of n lights, clones of the demo's first one.
func floodLights(t *testing.T, n int) *cloudsim.Catalogue {
	t.Helper()
	var light map[string]any
	for _, d := range cloudsim.DemoCatalogue().Devices {
		if d.Type == capability.DeviceLight {
			if err := json.Unmarshal(d.Raw, &light); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	devices := make([]any, n)
	for i := range devices {
		d := maps.Clone(light)
		d["device"] = fmt.Sprintf("5A:00:00:%02X:C0:FF:EE:01", i)
		d["deviceName"] = fmt.Sprintf("Light %d", i)
		devices[i] = d
	}
	b, _ := json.Marshal(map[string]any{"code": 200, "message": "success", "data": devices})
	c, err := cloudsim.ParseCatalogue(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// flood publishes n commands to set/brightness over the devices in turn, about
// 5,000 a second, and returns the last value each device was sent.
func flood(t *testing.T, url string, devs []capability.Device, n int, value func(seq int) string) map[string]string {
	t.Helper()
	c := mqtttest.NewClient(t, url, mqtttest.ClientOptions{}).Paho()
	last := map[string]string{}
	toks := make([]paho.Token, 0, n)
	for seq := range n {
		d := devs[seq%len(devs)]
		v := value(seq)
		toks = append(toks, c.Publish("cloud2mqtt/"+topic.DeviceID(d.SKU, d.Device)+"/set/brightness", 1, false, v))
		last[d.Device] = v
		if seq%50 == 49 {
			time.Sleep(10 * time.Millisecond) // the pace of the flood, not a wait for an outcome
		}
	}
	for _, tok := range toks {
		if !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
			t.Fatalf("publish: %v", tok.Error())
		}
	}
	return last
}

// TestFloodOfCommandsEndsAtTheLastOne: 5,005 commands over 13 lights in
// about a second leave every light at its last command, with no 429.
func TestFloodOfCommandsEndsAtTheLastOne(t *testing.T) {
	if mqtttest.MosquittoPath() == "" {
		t.Fatal("mosquitto is not installed (Debian: apt-get install mosquitto); the mosquitto tag needs it")
	}
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: floodLights(t, 13)}, env: map[string]string{"LOG_LEVEL": "info"}})
	devs := h.sim.Devices()
	availability(h.watch, wait, "online", h.ids()...)
	last := flood(t, h.broker.URL(), devs, 5005, func(seq int) string { return strconv.Itoa(1 + (seq*7)%100) })
	for _, d := range devs {
		want, _ := strconv.Atoi(last[d.Device])
		h.watch.until(wait, d.Device+" at its last command", func() bool {
			v, ok := h.sim.Value(d.Device, capability.InstanceBrightness)
			return ok && capability.Equal(capability.NormalizeValue(v), int64(want))
		})
	}
	if n := h.sim.Counts().RateLimited; len(n) != 0 {
		t.Errorf("the cloud answered 429: %v", n)
	}
}

// TestFloodOfBadCommandsThenAGoodOne: after 5,005 commands the bridge
// refuses, a good one is applied within 10 s, and the refusals are
// answered in bounded numbers.
func TestFloodOfBadCommandsThenAGoodOne(t *testing.T) {
	if mqtttest.MosquittoPath() == "" {
		t.Fatal("mosquitto is not installed (Debian: apt-get install mosquitto); the mosquitto tag needs it")
	}
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: floodLights(t, 13)}, env: map[string]string{"LOG_LEVEL": "info"}})
	devs := h.sim.Devices()
	availability(h.watch, wait, "online", h.ids()...)
	errorsBefore := len(h.watch.messages())
	flood(t, h.broker.URL(), devs, 5005, func(seq int) string { return strconv.Itoa(1000 + seq) })
	start := time.Now()
	d := devs[0]
	h.publish("cloud2mqtt/"+topic.DeviceID(d.SKU, d.Device)+"/set/brightness", "42")
	h.watch.until(10*time.Second, "the good command applied", func() bool {
		v, ok := h.sim.Value(d.Device, capability.InstanceBrightness)
		return ok && capability.Equal(capability.NormalizeValue(v), int64(42))
	})
	t.Logf("the good command was applied %s after it was sent", time.Since(start).Round(time.Millisecond))
	answers := 0
	for _, m := range h.watch.messages()[errorsBefore:] {
		if len(m.topic) > len("/error") && m.topic[len(m.topic)-len("/error"):] == "/error" {
			answers++
		}
	}
	if answers == 0 || answers > 13*50 {
		t.Errorf("%d answers on <id>/error to 5,005 bad commands; want some, at most 50 a device", answers)
	}
}
