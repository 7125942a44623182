package app_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/topic"
)

const wait = 15 * time.Second

// listed is an element of <base>/bridge/devices.
type listed struct {
	ID           string                  `json:"id"`
	SKU          string                  `json:"sku"`
	Device       string                  `json:"device"`
	Name         string                  `json:"name"`
	Type         string                  `json:"type"`
	Capabilities []capability.Capability `json:"capabilities"`
}

// devices waits for the device list and every listed device's discovery
// configs (the mirror sends those after the states and the list: a test
// that reads them must wait for them too).
func (h *harness) devices() []listed {
	h.t.Helper()
	var list []listed
	h.watch.until(wait, "the device list", func() bool {
		p, ok := h.watch.get("cloud2mqtt/bridge/devices")
		list = nil
		return ok && json.Unmarshal([]byte(p), &list) == nil && len(list) == len(h.sim.Devices())
	})
	h.discovered(list)
	return list
}

// discovered waits until every config discovery gives the listed devices
// (with the daemon's settings) is retained.
func (h *harness) discovered(list []listed) {
	h.t.Helper()
	cfg := h.main.Config
	if !cfg.HA.Discovery {
		return
	}
	dc := discovery.Config{Prefix: cfg.HA.DiscoveryPrefix, Layout: topic.New(cfg.MQTT.BaseTopic), Local: cfg.Local.Enabled}
	for _, d := range list {
		dev := capability.Device{SKU: d.SKU, Device: d.Device, Name: d.Name, Type: d.Type, Capabilities: d.Capabilities}
		for tp := range discovery.Configs(dc, dev) {
			h.watch.until(wait, "the discovery config "+tp, func() bool { p, _ := h.watch.get(tp); return p != "" })
		}
	}
}

// devicesWithScenes waits until every light's scene list has arrived from
// the scene endpoint (the device list has none for most lights). It asks
// with bridge/request/devices: the retained list follows scene changes only
// every 30 s.
func (h *harness) devicesWithScenes() []listed {
	h.t.Helper()
	var list []listed
	n := 0
	h.watch.until(wait, "every light's scenes", func() bool {
		n++
		tx := fmt.Sprintf("scenes-%d", n)
		h.publish("cloud2mqtt/bridge/request/devices", `{"transaction":"`+tx+`"}`)
		var resp struct {
			Status string   `json:"status"`
			Data   []listed `json:"data"`
		}
		h.watch.waitJSON(wait, "cloud2mqtt/bridge/response/devices", func(m map[string]any) bool {
			if m["transaction"] != tx {
				return false
			}
			p, _ := json.Marshal(m)
			return json.Unmarshal(p, &resp) == nil
		})
		list = resp.Data
		if resp.Status != "ok" || len(list) != len(h.sim.Devices()) {
			return false
		}
		for _, d := range list {
			c, ok := capabilityOf(d, capability.InstanceLightScene)
			if ok && (c.Parameters == nil || len(c.Parameters.Options) == 0) {
				return false
			}
		}
		return true
	})
	return list
}

// TestEveryDeviceAppears: every device of the demo catalogue gets its
// discovery configs, a retained state, availability online, and a place in
// the device list; the bridge itself is online with its own device.
func TestEveryDeviceAppears(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{})
	if p, _ := h.watch.get("cloud2mqtt/bridge/state"); p != "online" {
		h.watch.until(wait, "bridge online", func() bool { p, _ := h.watch.get("cloud2mqtt/bridge/state"); return p == "online" })
	}
	for _, d := range h.devices() {
		if want := topic.DeviceID(d.SKU, d.Device); d.ID != want {
			t.Errorf("%s: id %q, want %q", d.Device, d.ID, want)
		}
		h.watch.until(wait, d.ID+" availability online", func() bool {
			p, _ := h.watch.get("cloud2mqtt/" + d.ID + "/availability")
			return p == "online"
		})
		st := h.watch.waitJSON(wait, "cloud2mqtt/"+d.ID+"/state", func(m map[string]any) bool { return m["online"] == true })
		for _, c := range d.Capabilities {
			if c.Type == capability.TypeEvent {
				if _, ok := st[c.Instance]; ok {
					t.Errorf("%s: state has the event %s", d.ID, c.Instance)
				}
			}
		}
		configs := 0
		for tp := range h.watch.topics("homeassistant/") {
			if strings.Contains(tp, "/"+d.ID+"/") {
				configs++
			}
		}
		if configs == 0 {
			t.Errorf("%s (%s): no discovery configs", d.ID, d.Name)
		}
	}
	if len(h.watch.topics("homeassistant/sensor/"+"cloud2mqtt_bridge")) == 0 && len(bridgeConfigs(h)) == 0 {
		t.Errorf("no discovery configs for the bridge's own device")
	}
}

func bridgeConfigs(h *harness) []string {
	var out []string
	for tp, p := range h.watch.topics("homeassistant/") {
		if strings.Contains(p, `"cloud2mqtt/bridge/stats"`) {
			out = append(out, tp)
		}
	}
	return out
}

// target picks a value different from the usual initial one: the last
// option of an ENUM, the top of a range, an example of a struct.
func target(c capability.Capability) (any, bool) {
	p := c.Parameters
	if p == nil {
		return nil, false
	}
	switch p.DataType {
	case capability.DataEnum:
		if len(p.Options) == 0 {
			return nil, false
		}
		return p.Options[len(p.Options)-1].Value, true
	case capability.DataInteger:
		if p.Range == nil {
			return nil, false
		}
		step := p.Range.Step()
		return int64(p.Range.Min + (p.Range.Max-p.Range.Min)/step*step), true
	}
	return capability.Example(c)
}

// TestEveryCapabilityCommandedThroughSet sends a valid value to every
// controllable instance of every demo device through <id>/set/<instance>
// and checks that the simulated cloud received exactly that value, and that
// readable values come back in the state.
func TestEveryCapabilityCommandedThroughSet(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{})
	type sent struct {
		dev      listed
		instance string
		value    any
	}
	var all []sent
	for _, d := range h.devicesWithScenes() {
		for _, c := range d.Capabilities {
			if !c.Controllable() {
				continue
			}
			v, ok := target(c)
			if !ok {
				// A scene kind the account has none of (the DIY scenes or
				// snapshots of a light without any): nothing to select.
				if c.Type == capability.TypeDynamicScene || c.Type == capability.TypeDIYColorSetting {
					t.Logf("%s %s: the device has no such scenes", d.ID, c.Instance)
					continue
				}
				t.Errorf("%s %s: no value to send", d.ID, c.Instance)
				continue
			}
			b, _ := json.Marshal(v)
			h.publish("cloud2mqtt/"+d.ID+"/set/"+c.Instance, string(b))
			all = append(all, sent{d, c.Instance, capability.NormalizeValue(v)})
		}
	}
	h.watch.until(30*time.Second, "every command in the cloud's control log", func() bool {
		return len(missing(h.sim, all, func(s sent) (string, string, any) { return s.dev.Device, s.instance, s.value })) == 0
	})
	for _, s := range all {
		c, _ := capabilityOf(s.dev, s.instance)
		if !readable(c) {
			continue
		}
		h.watch.waitJSON(wait, "cloud2mqtt/"+s.dev.ID+"/state", func(m map[string]any) bool {
			got, _ := json.Marshal(m[s.instance])
			n, err := capability.Normalize(got)
			return err == nil && capability.Equal(n, s.value)
		})
	}
	if n := h.sim.Counts().RateLimited; len(n) != 0 {
		t.Errorf("the cloud answered 429: %v", n)
	}
}

// readable: the simulated cloud reports the instance in its state (scenes,
// segments and music mode it does not, like the live service).
func readable(c capability.Capability) bool {
	switch c.Type {
	case capability.TypeDynamicScene, capability.TypeDIYColorSetting, capability.TypeSegmentColor, capability.TypeMusicSetting:
		return false
	}
	return c.Readable()
}

func capabilityOf(d listed, instance string) (capability.Capability, bool) {
	for _, c := range d.Capabilities {
		if c.Instance == instance {
			return c, true
		}
	}
	return capability.Capability{}, false
}

// missing lists what the simulated cloud has not applied yet.
func missing[T any](sim *cloudsim.Sim, want []T, key func(T) (string, string, any)) []T {
	log := sim.ControlLog()
	var out []T
	for _, w := range want {
		dev, inst, val := key(w)
		found := false
		for _, r := range log {
			if r.Device == dev && r.Instance == inst && r.Code == 200 && capability.Equal(capability.NormalizeValue(r.Value), val) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, w)
		}
	}
	return out
}

// TestFriendlyValuesAndLightCommands: option names, on/off, colours,
// scenes by name and a Home Assistant light command with several changes.
func TestFriendlyValuesAndLightCommands(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{})
	var light listed
	for _, d := range h.devices() {
		if _, ok := capabilityOf(d, capability.InstanceSegmentedColorRGB); ok && d.Type == capability.DeviceLight {
			if _, ok := capabilityOf(d, capability.InstanceLightScene); ok {
				light = d
				break
			}
		}
	}
	if light.ID == "" {
		t.Fatal("the demo catalogue has no light with segments and scenes")
	}
	scene := firstSceneName(t, h, light)
	type c struct{ instance, payload string }
	h.publish("cloud2mqtt/"+light.ID+"/set", `{"powerSwitch":"off","brightness":"35","colorRgb":"#FF8000"}`)
	h.publish("cloud2mqtt/"+light.ID+"/set/lightScene", strings.ToUpper(scene.Name))
	h.publish("cloud2mqtt/"+light.ID+"/set/segmentedColorRgb", `{"segment":"0-2","rgb":"0,0,255"}`)
	want := []struct {
		instance string
		value    any
	}{
		{"powerSwitch", int64(0)},
		{"brightness", int64(35)},
		{"colorRgb", int64(0xFF8000)},
		{"lightScene", scene.Value},
		{"segmentedColorRgb", map[string]any{"segment": []any{int64(0), int64(1), int64(2)}, "rgb": int64(255)}},
	}
	h.watch.until(wait, "friendly commands applied", func() bool {
		return len(missing(h.sim, want, func(w struct {
			instance string
			value    any
		}) (string, string, any) {
			return light.Device, w.instance, w.value
		})) == 0
	})

	// A Home Assistant light command: on, brightness and colour at once
	// become power first, then the rest.
	before := len(h.sim.ControlLog())
	h.publish("cloud2mqtt/"+light.ID+"/light/set", `{"state":"ON","brightness":80,"color":{"r":0,"g":255,"b":0}}`)
	h.watch.until(wait, "the light command's three requests", func() bool { return len(h.sim.ControlLog()) >= before+3 })
	got := h.sim.ControlLog()[before:]
	if got[0].Instance != "powerSwitch" || !capability.Equal(capability.NormalizeValue(got[0].Value), int64(1)) {
		t.Errorf("first request of the light command: %s=%v, want powerSwitch=1", got[0].Instance, got[0].Value)
	}
	h.watch.waitJSON(wait, "cloud2mqtt/"+light.ID+"/light", func(m map[string]any) bool {
		return m["state"] == "ON" && m["brightness"] == float64(80) && m["color_mode"] == "rgb"
	})
}

func firstSceneName(t *testing.T, h *harness, d listed) capability.Option {
	t.Helper()
	var opt capability.Option
	h.watch.until(wait, "scenes of "+d.ID, func() bool {
		for _, l := range h.devices() {
			if l.ID != d.ID {
				continue
			}
			c, ok := capabilityOf(l, capability.InstanceLightScene)
			if ok && c.Parameters != nil && len(c.Parameters.Options) > 0 {
				opt = c.Parameters.Options[len(c.Parameters.Options)-1]
				return true
			}
		}
		return false
	})
	return opt
}

// TestBadPayloadsAreRejectedWithoutCloudRequests: junk, wrong types, out of
// range and unknown instances give an error on <id>/error and never reach
// the cloud; the bridge keeps working afterwards.
func TestBadPayloadsAreRejectedWithoutCloudRequests(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{})
	var d listed
	for _, l := range h.devices() {
		if _, ok := capabilityOf(l, capability.InstanceBrightness); ok {
			d = l
			break
		}
	}
	base := "cloud2mqtt/" + d.ID
	cases := []struct {
		name, topic, payload, wantInError string
		code                              int
	}{
		{"junk object", base + "/set", `{not json`, "JSON object", 400},
		{"array", base + "/set", `[1,2]`, "JSON object", 400},
		{"empty object", base + "/set", `{}`, "", 400},
		{"out of range", base + "/set/brightness", `1000`, "out of range", 400},
		{"wrong type", base + "/set/brightness", `{"a":1}`, "", 400},
		{"fraction", base + "/set/brightness", `12.5`, "", 400},
		{"unknown option", base + "/set/powerSwitch", `maybe`, "", 400},
		{"unknown instance", base + "/set/warpDrive", `1`, "warpDrive", 404},
		{"read-only", base + "/set/online", `true`, "", 404},
		{"light junk", base + "/light/set", `garbage`, "", 400},
		{"binary", base + "/set/brightness", "\x00\xff\xfe", "", 400},
	}
	controlsBefore := len(h.sim.ControlLog())
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := h.watch.seen(base + "/error")
			h.publish(c.topic, c.payload)
			h.watch.until(wait, "an error message", func() bool { return h.watch.seen(base+"/error") > n })
			p, _ := h.watch.get(base + "/error")
			var e struct {
				Instance string `json:"instance"`
				Error    string `json:"error"`
				Code     int    `json:"code"`
			}
			if err := json.Unmarshal([]byte(p), &e); err != nil {
				t.Fatalf("error payload %q: %v", p, err)
			}
			if e.Error == "" || !strings.Contains(e.Error, c.wantInError) {
				t.Errorf("error %q does not say %q", e.Error, c.wantInError)
			}
			if e.Code/100 != c.code/100 {
				t.Errorf("code %d, want %d", e.Code, c.code)
			}
		})
	}
	if got := len(h.sim.ControlLog()); got != controlsBefore {
		t.Errorf("bad payloads reached the cloud: %d control requests", got-controlsBefore)
	}
	// Still working.
	h.publish(base+"/set/brightness", "42")
	h.watch.waitJSON(wait, base+"/state", func(m map[string]any) bool { return m["brightness"] == float64(42) })
}

// TestRestartsAndBirthRepublish: after a broker restart (state lost) the
// bridge republishes discovery, device list, state and availability; after
// Home Assistant's birth message it republishes the configs.
func TestRestartsAndBirthRepublish(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{})
	devs := h.devices()
	cfgs := h.watch.topics("homeassistant/")
	if len(cfgs) == 0 {
		t.Fatal("no discovery configs")
	}
	var one string
	for tp := range cfgs {
		one = tp
		break
	}
	n := h.watch.seen(one)
	h.publish("homeassistant/status", "online")
	h.watch.until(wait, "configs republished after the birth message", func() bool { return h.watch.seen(one) > n })

	h.broker.Restart()
	// The restarted broker has no retained messages: a fresh subscriber
	// sees only what the bridge published again.
	fresh := newWatcher(t, h.broker.URL(), h.broker)
	fresh.until(30*time.Second, "bridge online after the restart", func() bool {
		p, _ := fresh.get("cloud2mqtt/bridge/state")
		return p == "online"
	})
	fresh.until(wait, "discovery restored", func() bool { return len(fresh.topics("homeassistant/")) >= len(cfgs) })
	for _, d := range devs {
		fresh.until(wait, "state and availability of "+d.ID, func() bool {
			_, s := fresh.get("cloud2mqtt/" + d.ID + "/state")
			a, _ := fresh.get("cloud2mqtt/" + d.ID + "/availability")
			return s && a == "online"
		})
	}
}

// TestDeviceRemovedAndOffline: a device removed from the account loses its
// entities (empty retained configs) and retained topics; an offline device
// is shown unavailable.
func TestDeviceRemovedAndOffline(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{})
	devs := h.devices()
	gone, off := devs[0], devs[1]
	prefix := "/" + gone.ID + "/"
	var its []string
	for tp := range h.watch.topics("homeassistant/") {
		if strings.Contains(tp, prefix) {
			its = append(its, tp)
		}
	}
	if len(its) == 0 {
		t.Fatalf("%s has no configs", gone.ID)
	}
	if err := h.sim.RemoveDevice(gone.Device); err != nil {
		t.Fatal(err)
	}
	if err := h.sim.SetOnline(off.Device, false); err != nil {
		t.Fatal(err)
	}
	h.publish("cloud2mqtt/bridge/request/refresh", `{"transaction":"t1"}`)
	resp := h.watch.waitJSON(wait, "cloud2mqtt/bridge/response/refresh", func(m map[string]any) bool { return m["transaction"] == "t1" })
	if resp["status"] != "ok" {
		t.Errorf("refresh response %v", resp)
	}
	h.watch.until(wait, "the removed device's configs emptied", func() bool {
		for _, tp := range its {
			if p, _ := h.watch.get(tp); p != "" {
				return false
			}
		}
		return true
	})
	h.watch.until(wait, "the removed device's state cleared", func() bool {
		p, _ := h.watch.get("cloud2mqtt/" + gone.ID + "/state")
		return p == ""
	})
	h.publish("cloud2mqtt/"+off.ID+"/get", "")
	h.watch.until(wait, "the offline device unavailable", func() bool {
		p, _ := h.watch.get("cloud2mqtt/" + off.ID + "/availability")
		return p == "offline"
	})
}

// TestBridgeRequests: health, scenes and an unknown action.
func TestBridgeRequests(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{})
	h.devices()
	h.publish("cloud2mqtt/bridge/request/health", `{"transaction":7}`)
	r := h.watch.waitJSON(wait, "cloud2mqtt/bridge/response/health", func(m map[string]any) bool { return m["transaction"] == float64(7) })
	if r["status"] != "ok" {
		t.Errorf("health: %v", r)
	}
	h.publish("cloud2mqtt/bridge/request/warp", `{"transaction":"x"}`)
	r = h.watch.waitJSON(wait, "cloud2mqtt/bridge/response/unknown", func(m map[string]any) bool { return m["transaction"] == "x" })
	if r["status"] != "error" || r["action"] != "warp" || !strings.Contains(fmt.Sprint(r["error"]), "refresh") {
		t.Errorf("unknown action: %v", r)
	}
	h.publish("cloud2mqtt/bridge/request/scenes", `{"transaction":"s","device":"nope"}`)
	r = h.watch.waitJSON(wait, "cloud2mqtt/bridge/response/scenes", func(m map[string]any) bool { return m["transaction"] == "s" })
	if r["status"] != "error" {
		t.Errorf("scenes for an unknown device: %v", r)
	}
}

// TestNoSecretInAnyOutput: the API key and the broker password never reach
// the logs or any MQTT message. Not parallel: it logs at trace, a level the
// process holds for all its daemons (a parallel test's start would lower it).
func TestNoSecretInAnyOutput(t *testing.T) {
	const password = "broker-pass-8d2e61"
	h := startHarness(t, harnessOptions{
		env:    map[string]string{"MQTT_USERNAME": "bridge", "MQTT_PASSWORD": password, "LOG_LEVEL": "trace"},
		broker: nil,
	})
	h.devices()
	h.publish("cloud2mqtt/bridge/request/health", `{}`)
	h.publish("cloud2mqtt/"+h.devices()[0].ID+"/set/brightness", `5000`)
	h.watch.until(wait, "the health answer", func() bool { _, ok := h.watch.get("cloud2mqtt/bridge/response/health"); return ok })
	h.stop()
	logs := h.logs.String()
	if !strings.Contains(logs, "starting") && len(logs) < 100 {
		t.Fatalf("suspiciously little log output: %q", logs)
	}
	for _, secret := range []string{testKey, password} {
		if strings.Contains(logs, secret) {
			t.Errorf("a secret is in the logs")
		}
		for _, m := range h.watch.messages() {
			if strings.Contains(m.payload, secret) || strings.Contains(m.topic, secret) {
				t.Errorf("a secret is in MQTT message %s", m.topic)
			}
		}
	}
}
