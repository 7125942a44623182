package app_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/topic"
)

// TestTemperaturesInTheDevicesUnit: a temperature reaches the cloud converted to
// the unit of the device's range, and one outside it is refused on <id>/error
// naming both units. The devices: a heater ranged 41–86 °F and a kettle 40–100 °C.
func TestTemperaturesInTheDevicesUnit(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../bridge/testdata/temperature_units.json")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := cloudsim.ParseCatalogue(raw)
	if err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: cat}})
	h.devices()
	heater, kettle := cat.Devices[0].Device, cat.Devices[1].Device
	heaterID, kettleID := topic.DeviceID(heater.SKU, heater.Device), topic.DeviceID(kettle.SKU, kettle.Device)

	// Sent: what the cloud receives.
	for _, c := range []struct {
		dev          capability.Device
		topic, value string
		want         string
	}{
		{heater, heaterID + "/set/targetTemperature", "22C", `{"temperature":72,"unit":"Fahrenheit","autoStop":0}`},
		{kettle, kettleID + "/set/sliderTemperature", "200F", `{"temperature":93,"unit":"Celsius","autoStop":0}`},
		{kettle, kettleID + "/set", `{"sliderTemperature":{"temperature":212,"unit":"Fahrenheit"}}`, `{"temperature":100,"unit":"Celsius","autoStop":0}`},
	} {
		before := len(h.sim.ControlLog())
		h.publish("cloud2mqtt/"+c.topic, c.value)
		h.watch.until(wait, "the command at the cloud", func() bool { return len(h.sim.ControlLog()) > before })
		got := h.sim.ControlLog()[before]
		want, _ := capability.Normalize([]byte(c.want))
		if got.Device != c.dev.Device || got.Code != 200 || !capability.Equal(capability.NormalizeValue(got.Value), want) {
			t.Errorf("%s %s: the cloud received %s=%v (code %d %s), want %s", c.topic, c.value, got.Instance, got.Value, got.Code, got.Msg, c.want)
		}
	}
	// The state shows what the cloud accepted, in the device's unit.
	h.watch.waitJSON(wait, "cloud2mqtt/"+heaterID+"/state", func(m map[string]any) bool {
		v, _ := m["targetTemperature"].(map[string]any)
		return v["temperature"] == float64(72) && v["unit"] == "Fahrenheit"
	})

	// Refused: nothing reaches the cloud, and the answer names the units.
	before := len(h.sim.ControlLog())
	for _, c := range []struct{ topic, value, says string }{
		{kettleID + "/set/sliderTemperature", "90F", "90 °F (32 °C) is below the minimum 40 °C"},
		{heaterID + "/set/targetTemperature", "22", "22 °F is below the minimum 41 °F"},
	} {
		errTopic := "cloud2mqtt/" + strings.SplitN(c.topic, "/", 2)[0] + "/error"
		n := h.watch.seen(errTopic)
		h.publish("cloud2mqtt/"+c.topic, c.value)
		h.watch.until(wait, "the answer on "+errTopic, func() bool { return h.watch.seen(errTopic) > n })
		p, _ := h.watch.get(errTopic)
		var e struct {
			Error string `json:"error"`
			Code  int    `json:"code"`
		}
		if json.Unmarshal([]byte(p), &e) != nil || e.Code != 400 || !strings.Contains(e.Error, c.says) {
			t.Errorf("%s %s: answered %s, want code 400 saying %q", c.topic, c.value, p, c.says)
		}
	}
	if got := len(h.sim.ControlLog()); got != before {
		t.Errorf("refused temperatures reached the cloud: %v", h.sim.ControlLog()[before:])
	}
}
