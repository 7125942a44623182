package cloudsim

// The simulated devices: offline ones, drifting readings, changes made by
// tests, events, and the request log.

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
)

func TestOffline(t *testing.T) {
	h := start(t, Options{})
	wantStatus(t, "brightness", h.control(stripSKU, stripID, capability.TypeRange, "brightness", 60), 200)
	before := stateValues(t, h.state(monitorSKU, monitorID))
	if err := h.sim.SetOnline(monitorID, false); err != nil {
		t.Fatal(err)
	}
	if err := h.sim.SetOnline(stripID, false); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(7 * time.Minute)
	after := stateValues(t, h.state(monitorSKU, monitorID))
	if after["online"] != false {
		t.Fatalf("online = %v", after["online"])
	}
	for k, v := range before {
		if k != "online" && !capability.Equal(after[k], v) {
			t.Fatalf("offline %s moved from %v to %v: values must be historical", k, v, after[k])
		}
	}
	st := stateValues(t, h.state(stripSKU, stripID))
	if st["online"] != false || st["brightness"] != int64(60) {
		t.Fatalf("offline strip state %v", st)
	}
	r := h.control(stripSKU, stripID, capability.TypeRange, "brightness", 80)
	if r.status != 400 || r.code() != 400 || r.msg() != "device offline" {
		t.Fatalf("control offline: %d %s", r.status, r.raw)
	}
	capState := r.body["capability"].(map[string]any)["state"].(map[string]any)
	if capState["status"] != "failure" {
		t.Fatalf("offline control state %v", capState)
	}
	// A bad value is still a bad value when offline.
	if r := h.control(stripSKU, stripID, capability.TypeRange, "brightness", 500); r.msg() != "parameter value out of range" {
		t.Fatalf("bad value offline: %s", r.raw)
	}
	if v, _ := h.sim.Value(stripID, "brightness"); v != int64(60) {
		t.Fatalf("offline control changed brightness to %v", v)
	}
	if err := h.sim.SetOnline(stripID, true); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "back online", h.control(stripSKU, stripID, capability.TypeRange, "brightness", 80), 200)
	if err := h.sim.SetOnline("nope", true); err == nil {
		t.Fatal("SetOnline of an unknown device succeeded")
	}
	// ErrorsAs200 answers it with 200.
	h2 := start(t, Options{ErrorsAs200: true})
	_ = h2.sim.SetOnline(stripID, false)
	if r := h2.control(stripSKU, stripID, capability.TypeRange, "brightness", 80); r.status != 200 || r.code() != 400 {
		t.Fatalf("offline with ErrorsAs200: %d %s", r.status, r.raw)
	}
}

func TestPropertyDrift(t *testing.T) {
	read := func(seed uint64, at time.Duration) map[string]any {
		clock := newClock()
		s := New(Options{Now: clock.Now, Seed: seed})
		clock.Advance(at)
		st, err := s.State(monitorID)
		if err != nil {
			t.Fatal(err)
		}
		return st.Values()
	}
	a, b := read(1, 10*time.Minute), read(1, 10*time.Minute)
	for k, v := range a {
		if !capability.Equal(b[k], v) {
			t.Fatalf("same seed and clock, %s differs: %v vs %v", k, v, b[k])
		}
	}
	moved := 0
	for _, at := range []time.Duration{0, 5 * time.Minute, 20 * time.Minute, time.Hour} {
		v := read(1, at)
		temp := v["sensorTemperature"].(float64)
		hum := toFloat(v["sensorHumidity"])
		co2 := v["carbonDioxideConcentration"].(int64)
		pm := v["pm25"].(int64)
		if temp < 18 || temp > 25 || hum < 30 || hum > 60 || co2 < 350 || co2 > 1000 || pm < 0 || pm > 40 {
			t.Fatalf("readings out of plausible bounds at %v: %v", at, v)
		}
		if !capability.Equal(v["sensorTemperature"], a["sensorTemperature"]) {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("temperature never drifts")
	}
	if c := read(2, 10*time.Minute); capability.Equal(c["carbonDioxideConcentration"], a["carbonDioxideConcentration"]) &&
		capability.Equal(c["sensorTemperature"], a["sensorTemperature"]) {
		t.Fatal("another seed gives the same readings")
	}
	// Slowly: a minute moves the temperature by less than half a degree.
	x, y := read(1, 30*time.Minute)["sensorTemperature"].(float64), read(1, 31*time.Minute)["sensorTemperature"].(float64)
	if d := x - y; d > 0.5 || d < -0.5 {
		t.Fatalf("temperature jumped %v in a minute", d)
	}
	// Filter life falls by one percent a day.
	clock := newClock()
	s := New(Options{Now: clock.Now})
	if v, _ := s.Value(purifierID, "filterLifeTime"); v != int64(87) {
		t.Fatalf("filter life %v, want 87", v)
	}
	clock.Advance(49 * time.Hour)
	if v, _ := s.Value(purifierID, "filterLifeTime"); v != int64(85) {
		t.Fatalf("filter life after 49 h %v, want 85", v)
	}
	// SetValue fixes a reading.
	if err := s.SetValue(monitorID, "pm25", 80); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Value(monitorID, "pm25"); v != int64(80) {
		t.Fatalf("pm25 %v", v)
	}
	if v, _ := s.Value(monitorID, "airQuality"); v != int64(1) && v != int64(2) && v != int64(3) && v != int64(4) {
		t.Fatalf("airQuality %v", v)
	}
}

func TestSetValue(t *testing.T) {
	s := New(Options{Now: newClock().Now})
	if err := s.SetValue(stripID, "brightness", 33); err != nil {
		t.Fatal(err)
	}
	st, _ := s.State(stripID)
	if st.Values()["brightness"] != int64(33) {
		t.Fatalf("state %v", st.Values())
	}
	var ve *capability.ValueError
	if err := s.SetValue(stripID, "brightness", 333); !errors.As(err, &ve) || ve.Category != capability.CategoryRange {
		t.Fatalf("bad value: %v", err)
	}
	if err := s.SetValue(stripID, "nope", 1); err == nil {
		t.Fatal("unknown instance accepted")
	}
	if err := s.SetValue("nope", "brightness", 1); err == nil {
		t.Fatal("unknown device accepted")
	}
}

func TestRemoveAndAddDevices(t *testing.T) {
	h := start(t, Options{})
	n := len(h.sim.Devices())
	if err := h.sim.RemoveDevice(plugID); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(h.list().raw), plugID) {
		t.Fatal("removed device still listed")
	}
	for _, r := range []reply{h.state(plugSKU, plugID), h.control(plugSKU, plugID, capability.TypeOnOff, "powerSwitch", 1)} {
		if r.status != 404 || r.msg() != "devices not belong you" {
			t.Fatalf("removed device: %s", r.raw)
		}
	}
	if err := h.sim.RemoveDevice(plugID); err == nil {
		t.Fatal("removed twice")
	}
	if err := h.sim.RestoreDevice(plugID); err != nil {
		t.Fatal(err)
	}
	if err := h.sim.RestoreDevice(plugID); err == nil {
		t.Fatal("restored a device that is there")
	}
	wantStatus(t, "restored device", h.state(plugSKU, plugID), 200)

	newDev := capability.Device{SKU: "H5083", Device: "AA:BB:CC:DD:EE:FF:10:99", Name: "New Plug", Type: capability.DeviceSocket,
		Capabilities: []capability.Capability{{Type: capability.TypeOnOff, Instance: "powerSwitch",
			Parameters: &capability.Parameters{DataType: capability.DataEnum, Options: []capability.Option{{Name: "on", Value: int64(1)}, {Name: "off", Value: int64(0)}}}}}}
	if err := h.sim.AddDevice(newDev); err != nil {
		t.Fatal(err)
	}
	if err := h.sim.AddDevice(newDev); err == nil {
		t.Fatal("added the same id twice")
	}
	if err := h.sim.AddDevice(capability.Device{Device: "x"}); err == nil {
		t.Fatal("added a device without sku")
	}
	var list cloud.DeviceList
	if err := jsonUnmarshal(h.list().raw, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Data) != n+1 || list.Data[n].Device != newDev.Device || list.Data[n].Name != "New Plug" {
		t.Fatalf("list after add: %d devices, last %+v", len(list.Data), list.Data[len(list.Data)-1])
	}
	wantStatus(t, "control new device", h.control("H5083", newDev.Device, capability.TypeOnOff, "powerSwitch", 1), 200)
}

func TestEvents(t *testing.T) {
	h := start(t, Options{})
	var mu sync.Mutex
	var got []Event
	remove := h.sim.OnEvent(func(e Event) { mu.Lock(); got = append(got, e); mu.Unlock() })
	ev, err := h.sim.RaiseEvent(humidifierID, "lackWaterEvent", "lack")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"sku":"H7142","device":"AA:BB:CC:DD:EE:FF:10:11","deviceName":"Nursery Humidifier","capabilities":[{"type":"devices.capabilities.event","instance":"lackWaterEvent","state":[{"name":"lack","value":1,"message":"Lack of Water"}]}]}`
	if string(ev.Payload) != want {
		t.Fatalf("payload\n got %s\nwant %s", ev.Payload, want)
	}
	if _, err := h.sim.RaiseEvent(iceID, "iceFullEvent", ""); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(got) != 2 || string(got[0].Payload) != want || got[1].Instance != "iceFullEvent" || got[1].SKU != iceSKU {
		t.Fatalf("listener got %+v", got)
	}
	mu.Unlock()
	remove()
	if _, err := h.sim.RaiseEvent(iceID, "lackWaterEvent", ""); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(got) != 2 {
		t.Fatal("removed listener still called")
	}
	mu.Unlock()
	for name, raise := range map[string]func() error{
		"not an event":   func() error { _, err := h.sim.RaiseEvent(humidifierID, "humidity", ""); return err },
		"unknown option": func() error { _, err := h.sim.RaiseEvent(humidifierID, "lackWaterEvent", "full"); return err },
		"unknown device": func() error { _, err := h.sim.RaiseEvent("nope", "lackWaterEvent", ""); return err },
		"offline": func() error {
			_ = h.sim.SetOnline(iceID, false)
			_, err := h.sim.RaiseEvent(iceID, "iceFullEvent", "")
			return err
		},
	} {
		if err := raise(); err == nil || !strings.HasPrefix(err.Error(), "cloudsim: ") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestRequestLogAndCounts(t *testing.T) {
	h := start(t, Options{LogLimit: 3})
	h.list()
	h.state(stripSKU, stripID)
	h.control(stripSKU, stripID, capability.TypeRange, "brightness", 500)
	h.control(stripSKU, stripID, capability.TypeRange, "brightness", 5)
	reqs := h.sim.Requests()
	if len(reqs) != 3 || reqs[0].Endpoint != cloud.EndpointState || reqs[1].Code != 400 || reqs[2].Instance != "brightness" || reqs[2].HTTPStatus != 200 {
		t.Fatalf("log %+v", reqs)
	}
	c := h.sim.Counts()
	if c.Of(cloud.EndpointDevices, 200) != 1 || c.Of(cloud.EndpointControl, 400) != 1 || c.Of(cloud.EndpointControl, 200) != 1 || c.Total(cloud.EndpointControl) != 2 {
		t.Fatalf("counts %+v", c)
	}
	h.sim.ResetLog()
	if len(h.sim.Requests()) != 0 || h.sim.Counts().Total(cloud.EndpointControl) != 0 || len(h.sim.ControlLog()) != 0 {
		t.Fatal("ResetLog kept entries")
	}
}

// Many clients at once: no race, every accepted control recorded once.
func TestConcurrentClients(t *testing.T) {
	h := start(t, Options{Limits: Limits{ControlAccount: Unlimited, ControlDevice: Unlimited, State: Unlimited}})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				r := h.control(stripSKU, stripID, capability.TypeRange, "brightness", 1+(g*25+i)%100)
				if r.code() != 200 {
					t.Errorf("control: %s", r.raw)
				}
				h.state(stripSKU, stripID)
				_, _ = h.sim.State(stripID)
			}
		})
	}
	wg.Wait()
	if n := len(h.sim.ControlLog()); n != 200 {
		t.Fatalf("%d controls logged, want 200", n)
	}
}
