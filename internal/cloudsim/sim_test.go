package cloudsim

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/testkit"
)

func TestAuth(t *testing.T) {
	h := start(t, Options{APIKey: "secret-1"})
	paths := []struct{ method, path string }{
		{http.MethodGet, cloud.PathDevices}, {http.MethodPost, cloud.PathState}, {http.MethodPost, cloud.PathScenes},
		{http.MethodPost, cloud.PathDIYScenes}, {http.MethodPost, cloud.PathControl},
	}
	for _, hdr := range []map[string]string{
		{DefaultKeyHeader: ""},          // missing
		{DefaultKeyHeader: "secret-2"},  // wrong
		{DefaultKeyHeader: "secret-1x"}, // not exactly
		{"Authorization": "secret-1", DefaultKeyHeader: ""},
	} {
		for _, p := range paths {
			r := h.do(p.method, p.path, deviceBody(stripSKU, stripID), hdr)
			if r.status != 401 || string(r.raw) != `{"code":401,"message":"unauthorized, please check your API key"}` {
				t.Fatalf("%s %s with %v: %d %s", p.method, p.path, hdr, r.status, r.raw)
			}
		}
	}
	wantStatus(t, "right key", h.list(), 200)

	h.sim.RevokeKey()
	wantStatus(t, "revoked", h.list(), 401)
	h.sim.RestoreKey()
	wantStatus(t, "restored", h.list(), 200)
	h.sim.SetAPIKey("rotated")
	wantStatus(t, "old key after rotation", h.do(http.MethodGet, cloud.PathDevices, nil, map[string]string{DefaultKeyHeader: "secret-1"}), 401)
	wantStatus(t, "new key", h.list(), 200)
	// 401s spend no token and are counted.
	if n := h.sim.Counts().Of(cloud.EndpointDevices, 401); n != 6 {
		t.Fatalf("401s counted for devices: %d", n)
	}

	h2 := start(t, Options{KeyHeader: "X-Api-Key"})
	wantStatus(t, "spec header when another is configured", h2.list(), 401)
	wantStatus(t, "configured header", h2.do(http.MethodGet, cloud.PathDevices, nil, map[string]string{"X-Api-Key": DefaultAPIKey}), 200)
}

func TestUnknownPathAndMethod(t *testing.T) {
	h := start(t, Options{})
	wantStatus(t, "unknown path", h.do(http.MethodGet, "/router/api/v2/user/devices", nil, nil), 404)
	wantStatus(t, "POST list", h.do(http.MethodPost, cloud.PathDevices, nil, nil), 405)
	wantStatus(t, "GET state", h.do(http.MethodGet, cloud.PathState, nil, nil), 405)
}

// The answer shapes of the live service: GET uses message, POST uses msg and
// echoes requestId; a control echoes the capability with a success state.
func TestAnswerShapes(t *testing.T) {
	h := start(t, Options{})
	r := h.list()
	if r.code() != 200 || r.body["message"] != "success" || r.body["data"] == nil {
		t.Fatalf("list: %s", r.raw)
	}
	st := h.state(stripSKU, stripID)
	p := st.body["payload"].(map[string]any)
	if st.body["requestId"] != "req-1" || st.body["msg"] != "success" || st.code() != 200 || p["sku"] != stripSKU || p["device"] != stripID {
		t.Fatalf("state: %s", st.raw)
	}
	c := h.control(stripSKU, stripID, capability.TypeRange, "brightness", 42)
	want := `{"requestId":"req-c","msg":"success","code":200,"capability":{"type":"devices.capabilities.range","instance":"brightness","value":42,"state":{"status":"success"}}}`
	if c.status != 200 || string(c.raw) != want {
		t.Fatalf("control:\n got %s\nwant %s", c.raw, want)
	}
	if c.header.Get("Content-Type") != "application/json" {
		t.Fatalf("content type %q", c.header.Get("Content-Type"))
	}
}

// Every row of the spec's error tables, in both answer modes.
func TestErrorRows(t *testing.T) {
	body := func(edit func(top, payload, capability map[string]any)) map[string]any {
		b := controlBody(stripSKU, stripID, capability.TypeRange, "brightness", 50)
		payload := b["payload"].(map[string]any)
		edit(b, payload, payload["capability"].(map[string]any))
		return b
	}
	ctl := func(typ, inst string, v any) map[string]any { return controlBody(stripSKU, stripID, typ, inst, v) }
	cases := []struct {
		name string
		path string
		body any
		code int
		msg  string
	}{
		{"bad json", cloud.PathControl, `{"requestId": "x", "payload": {`, 400, "invalid parameter format"},
		{"not an object", cloud.PathState, `[1,2]`, 400, "invalid parameter type"},
		{"trailing data", cloud.PathState, `{"requestId":"x","payload":{"sku":"H619C","device":"AA:BB:CC:DD:EE:FF:10:01"}} {}`, 400, "invalid parameter format"},
		{"empty body", cloud.PathState, ``, 400, "missing parameter"},
		{"missing requestId", cloud.PathControl, body(func(top, _, _ map[string]any) { delete(top, "requestId") }), 400, "missing parameter"},
		{"missing payload", cloud.PathControl, body(func(top, _, _ map[string]any) { delete(top, "payload") }), 400, "missing parameter"},
		{"missing sku", cloud.PathControl, body(func(_, p, _ map[string]any) { delete(p, "sku") }), 400, "missing parameter"},
		{"missing device", cloud.PathControl, body(func(_, p, _ map[string]any) { delete(p, "device") }), 400, "missing parameter"},
		{"missing device (state)", cloud.PathState, map[string]any{"requestId": "r", "payload": map[string]any{"sku": stripSKU}}, 400, "missing parameter"},
		{"missing capability", cloud.PathControl, body(func(_, p, _ map[string]any) { delete(p, "capability") }), 400, "missing parameter"},
		{"missing type", cloud.PathControl, body(func(_, _, c map[string]any) { delete(c, "type") }), 400, "missing parameter"},
		{"missing instance", cloud.PathControl, body(func(_, _, c map[string]any) { delete(c, "instance") }), 400, "missing parameter"},
		{"missing value", cloud.PathControl, body(func(_, _, c map[string]any) { delete(c, "value") }), 400, "missing parameter"},
		{"null value", cloud.PathControl, ctl(capability.TypeRange, "brightness", nil), 400, "missing parameter"},
		{"empty sku", cloud.PathControl, body(func(_, p, _ map[string]any) { p["sku"] = "" }), 400, "parameter value empty"},
		{"empty value", cloud.PathControl, ctl(capability.TypeRange, "brightness", ""), 400, "parameter value empty"},
		{"sku not a string", cloud.PathControl, body(func(_, p, _ map[string]any) { p["sku"] = 7 }), 400, "invalid parameter type"},
		{"payload not an object", cloud.PathState, map[string]any{"requestId": "r", "payload": "x"}, 400, "invalid parameter type"},
		{"value wrong type", cloud.PathControl, ctl(capability.TypeRange, "brightness", "bright"), 400, "invalid parameter type"},
		{"value out of range", cloud.PathControl, ctl(capability.TypeRange, "brightness", 150), 400, "parameter value out of range"},
		{"colour out of range", cloud.PathControl, ctl(capability.TypeColorSetting, "colorRgb", 16777216), 400, "parameter value out of range"},
		{"enum not an option", cloud.PathControl, ctl(capability.TypeOnOff, "powerSwitch", 2), 400, "parameter value out of range"},
		{"too many segments", cloud.PathControl, ctl(capability.TypeSegmentColor, "segmentedColorRgb", map[string]any{"segment": []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 14}, "rgb": 255}), 400, "parameter length does not meet requirements"},
		{"duplicate segment", cloud.PathControl, ctl(capability.TypeSegmentColor, "segmentedColorRgb", map[string]any{"segment": []int{1, 1}, "rgb": 255}), 400, "duplicate parameter value"},
		{"unknown struct member", cloud.PathControl, ctl(capability.TypeMusicSetting, "musicMode", map[string]any{"musicMode": 1, "sensitivity": 50, "rgb": 1, "volume": 3}), 400, "invalid parameter format"},
		{"unknown device", cloud.PathControl, body(func(_, p, _ map[string]any) { p["device"] = "00:00:00:00:00:00:00:00" }), 404, "devices not exist"},
		{"unknown device (state)", cloud.PathState, deviceBody(stripSKU, "00:00:00:00:00:00:00:00"), 404, "devices not exist"},
		{"unknown device (scenes)", cloud.PathScenes, deviceBody(stripSKU, "00:00:00:00:00:00:00:00"), 404, "devices not exist"},
		{"unknown device (diy)", cloud.PathDIYScenes, deviceBody(stripSKU, "00:00:00:00:00:00:00:00"), 404, "devices not exist"},
		{"sku of another model", cloud.PathControl, body(func(_, p, _ map[string]any) { p["sku"] = "H6008" }), 404, "devices not exist"},
		{"instance the device lacks", cloud.PathControl, ctl(capability.TypeRange, "humidity", 50), 404, "devices not support this instance"},
		{"type that does not match", cloud.PathControl, ctl(capability.TypeToggle, "brightness", 1), 404, "devices not support this instance"},
	}
	for _, as200 := range []bool{false, true} {
		h := start(t, Options{ErrorsAs200: as200, Limits: Limits{ControlAccount: Unlimited, ControlDevice: Unlimited}})
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/as200=%v", c.name, as200), func(t *testing.T) {
				r := h.do(http.MethodPost, c.path, c.body, nil)
				wantHTTP := c.code
				if as200 {
					wantHTTP = 200
				}
				if r.status != wantHTTP || r.code() != c.code || r.msg() != c.msg {
					t.Fatalf("HTTP %d %s, want HTTP %d code %d msg %q", r.status, r.raw, wantHTTP, c.code, c.msg)
				}
				if _, ok := r.body["requestId"]; !ok {
					t.Fatalf("POST error without requestId: %s", r.raw)
				}
			})
		}
		// Failed requests change nothing.
		if v, _ := h.sim.Value(stripID, "brightness"); v != int64(1) {
			t.Fatalf("brightness after failures = %v, want the initial 1", v)
		}
	}
}

// The simulator refuses exactly what capability.Validate refuses, with its
// category, for every demo capability and a spread of values.
func TestControlAgreesWithValidate(t *testing.T) {
	h := start(t, Options{Limits: Limits{ControlAccount: Unlimited, ControlDevice: Unlimited}})
	values := []any{nil, "", 0, 1, 2, -1, 50, 100, 101, 16777215, 3054, "on", 1.5,
		map[string]any{}, map[string]any{"paramId": 1, "id": 2}, []any{1},
		map[string]any{"workMode": 1, "modeValue": 3}, map[string]any{"workMode": 3, "modeValue": 50},
		map[string]any{"workMode": 2}, map[string]any{"temperature": 20}, map[string]any{"temperature": 20, "unit": "Kelvin"},
		map[string]any{"segment": []any{0, 1}, "rgb": 255}, map[string]any{"segment": []any{0, 1}, "brightness": 50},
		map[string]any{"musicMode": 1, "sensitivity": 50, "rgb": 0}}
	checked := 0
	for _, d := range h.sim.Devices() {
		for _, c := range d.Capabilities {
			if c.Type == capability.TypeEvent {
				continue
			}
			for _, v := range values {
				nv := capability.NormalizeValue(v)
				r := h.control(d.SKU, d.Device, c.Type, c.Instance, nv)
				h.sim.mu.Lock()
				eff := h.sim.effective(h.sim.devices[d.Device], c)
				h.sim.mu.Unlock()
				err := capability.Validate(eff, nv)
				var ve *capability.ValueError
				switch {
				case err == nil:
					if r.code() != 200 {
						t.Errorf("%s %s %v: Validate accepts, sim answered %s", d.SKU, c.Instance, v, r.raw)
					}
				case errors.As(err, &ve) && ve.Code() == 404:
					if r.code() != 404 || r.msg() != "devices not support this instance" {
						t.Errorf("%s %s %v: read-only, sim answered %s", d.SKU, c.Instance, v, r.raw)
					}
				case errors.As(err, &ve):
					if r.code() != 400 || r.msg() != string(ve.Category) {
						t.Errorf("%s %s %v: Validate says %v, sim answered %s", d.SKU, c.Instance, v, err, r.raw)
					}
				}
				checked++
			}
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d cases checked", checked)
	}
}

func TestControlChangesState(t *testing.T) {
	h := start(t, Options{})
	steps := []struct {
		sku, device, typ, instance string
		value                      any
		want                       any // state answer afterwards
	}{
		{stripSKU, stripID, capability.TypeOnOff, "powerSwitch", 0, int64(0)},
		{stripSKU, stripID, capability.TypeOnOff, "powerSwitch", 1, int64(1)},
		{stripSKU, stripID, capability.TypeRange, "brightness", 77, int64(77)},
		{stripSKU, stripID, capability.TypeColorSetting, "colorRgb", 0xff8800, int64(0xff8800)},
		{stripSKU, stripID, capability.TypeColorSetting, "colorTemperatureK", 4000, int64(4000)},
		{stripSKU, stripID, capability.TypeToggle, "gradientToggle", 1, int64(1)},
		{plugSKU, plugID, capability.TypeToggle, "socketToggle2", 1, int64(1)},
		{heaterSKU, heaterID, capability.TypeTemperature, "targetTemperature", map[string]any{"temperature": 22},
			map[string]any{"temperature": int64(22), "autoStop": int64(0), "unit": "Celsius"}},
		// A value in the other unit is checked in the range's (77 °F is 25 °C) and kept as sent.
		{heaterSKU, heaterID, capability.TypeTemperature, "targetTemperature", map[string]any{"temperature": 77, "unit": "Fahrenheit"},
			map[string]any{"temperature": int64(77), "autoStop": int64(0), "unit": "Fahrenheit"}},
		{humidSKU, humidifierID, capability.TypeWorkMode, "workMode", map[string]any{"workMode": 1, "modeValue": 7},
			map[string]any{"workMode": int64(1), "modeValue": int64(7)}},
		// Auto takes a range; the Manual level 7 would be out of it, so it is not kept.
		{humidSKU, humidifierID, capability.TypeWorkMode, "workMode", map[string]any{"workMode": 3},
			map[string]any{"workMode": int64(3)}},
		{humidSKU, humidifierID, capability.TypeWorkMode, "workMode", map[string]any{"workMode": 3, "modeValue": 60},
			map[string]any{"workMode": int64(3), "modeValue": int64(60)}},
		{humidSKU, humidifierID, capability.TypeRange, "humidity", 55, int64(55)},
		// The spec's misspelt type is accepted as the canonical one.
		{heaterSKU, heaterID, "devices.capabilities.temperature_range", "targetTemperature", map[string]any{"temperature": 18, "unit": "Celsius"},
			map[string]any{"temperature": int64(18), "autoStop": int64(0), "unit": "Celsius"}},
	}
	for _, s := range steps {
		r := h.control(s.sku, s.device, s.typ, s.instance, s.value)
		if r.code() != 200 {
			t.Fatalf("control %s %v: %s", s.instance, s.value, r.raw)
		}
		got := stateValues(t, h.state(s.sku, s.device))[s.instance]
		if !capability.Equal(got, s.want) {
			t.Fatalf("after %s=%v state says %v, want %v", s.instance, s.value, got, s.want)
		}
	}
	log := h.sim.ControlLog()
	if len(log) != len(steps) || log[2].Instance != "brightness" || log[2].Value != int64(77) || log[2].Code != 200 ||
		log[2].Device != stripID || !log[2].Time.Equal(h.clock.Now()) {
		t.Fatalf("control log: %+v", log)
	}
}

// TestColourZeroesColourTemperature: as the live cloud reports it, a light
// showing a colour has a colour temperature of 0; a white shows its own.
func TestColourZeroesColourTemperature(t *testing.T) {
	h := start(t, Options{})
	for _, step := range []struct {
		instance string
		value    int
		wantCT   int64
	}{
		{capability.InstanceColorTemperatureK, 4000, 4000},
		{capability.InstanceColorRGB, 0x00ff00, 0},
		{capability.InstanceColorTemperatureK, 3000, 3000},
	} {
		if r := h.control(stripSKU, stripID, capability.TypeColorSetting, step.instance, step.value); r.code() != 200 {
			t.Fatalf("control %s: %s", step.instance, r.raw)
		}
		got := stateValues(t, h.state(stripSKU, stripID))
		if !capability.Equal(got[capability.InstanceColorTemperatureK], step.wantCT) {
			t.Errorf("after %s=%d the colour temperature reads %v, want %d", step.instance, step.value, got[capability.InstanceColorTemperatureK], step.wantCT)
		}
	}
}

func TestStateAnswer(t *testing.T) {
	h := start(t, Options{})
	// Set every unqueryable kind, then check they still read "".
	for _, c := range []struct {
		typ, inst string
		v         any
	}{
		{capability.TypeDynamicScene, "lightScene", 3055},
		{capability.TypeDynamicScene, "snapshot", 1},
		{capability.TypeDynamicScene, "diyScene", 8216568},
		{capability.TypeSegmentColor, "segmentedColorRgb", map[string]any{"segment": []int{0, 1}, "rgb": 255}},
		{capability.TypeSegmentColor, "segmentedBrightness", map[string]any{"segment": []int{2}, "brightness": 10}},
		{capability.TypeMusicSetting, "musicMode", map[string]any{"musicMode": 2, "sensitivity": 60, "rgb": 0}},
	} {
		if r := h.control(stripSKU, stripID, c.typ, c.inst, c.v); r.code() != 200 {
			t.Fatalf("control %s: %s", c.inst, r.raw)
		}
		got := stateValues(t, h.state(stripSKU, stripID))[c.inst]
		if got != "" {
			t.Fatalf("state reports %s = %v, want \"\" (not queryable)", c.inst, got)
		}
		if v, ok := h.sim.Value(stripID, c.inst); !ok || !capability.Equal(v, capability.NormalizeValue(c.v)) {
			t.Fatalf("Value(%s) = %v, want the value set", c.inst, v)
		}
	}
	// Events are never returned; online comes first; properties are numbers.
	for _, d := range h.sim.Devices() {
		r := h.state(d.SKU, d.Device)
		caps := r.body["payload"].(map[string]any)["capabilities"].([]any)
		first := caps[0].(map[string]any)
		if first["type"] != capability.TypeOnline || first["instance"] != "online" || first["state"].(map[string]any)["value"] != true {
			t.Fatalf("%s: first capability %v", d.Device, first)
		}
		n := 0
		for _, c := range d.Capabilities {
			if c.Type != capability.TypeEvent {
				n++
			}
		}
		if len(caps) != n+1 {
			t.Fatalf("%s: %d capabilities in state, want %d (all but events, plus online)", d.Device, len(caps), n+1)
		}
		for _, raw := range caps {
			c := raw.(map[string]any)
			v := c["state"].(map[string]any)["value"]
			switch c["type"] {
			case capability.TypeEvent:
				t.Fatalf("%s: state returned an event %v", d.Device, c)
			case capability.TypeProperty:
				switch v.(type) {
				case int64, float64:
				default:
					t.Fatalf("%s: property %v is not a number", d.Device, c)
				}
			}
		}
	}
}

func TestScenes(t *testing.T) {
	h := start(t, Options{})
	r := h.scenes(cloud.PathScenes, stripSKU, stripID)
	caps := r.body["payload"].(map[string]any)["capabilities"].([]any)
	c := caps[0].(map[string]any)
	params := c["parameters"].(map[string]any)
	opts := params["options"].([]any)
	if len(caps) != 1 || c["type"] != capability.TypeDynamicScene || c["instance"] != "lightScene" || params["dataType"] != "ENUM" || len(opts) != 6 {
		t.Fatalf("scenes: %s", r.raw)
	}
	scene := opts[2].(map[string]any)["value"].(map[string]any)
	if _, ok := scene["paramId"].(int64); !ok {
		t.Fatalf("scene value %v has no integer paramId", scene)
	}
	wantStatus(t, "select a dynamic scene", h.control(stripSKU, stripID, capability.TypeDynamicScene, "lightScene", scene), 200)
	wantStatus(t, "select a static scene of the list", h.control(stripSKU, stripID, capability.TypeDynamicScene, "lightScene", 3054), 200)
	bad := h.control(stripSKU, stripID, capability.TypeDynamicScene, "lightScene", map[string]any{"paramId": 1, "id": 1})
	if bad.status != 400 || bad.msg() != "parameter value out of range" {
		t.Fatalf("unknown scene: %s", bad.raw)
	}
	if v, _ := h.sim.Value(stripID, "lightScene"); !capability.Equal(v, int64(3054)) {
		t.Fatalf("lightScene = %v", v)
	}

	d := h.scenes(cloud.PathDIYScenes, stripSKU, stripID)
	caps = d.body["payload"].(map[string]any)["capabilities"].([]any)
	c = caps[0].(map[string]any)
	opts = c["parameters"].(map[string]any)["options"].([]any)
	if c["type"] != capability.TypeDIYColorSetting || c["instance"] != "diyScene" || len(opts) != 2 {
		t.Fatalf("diy scenes: %s", d.raw)
	}
	diy := opts[1].(map[string]any)["value"]
	if _, ok := diy.(int64); !ok {
		t.Fatalf("diy value %v is not an integer", diy)
	}
	wantStatus(t, "select a DIY scene", h.control(stripSKU, stripID, capability.TypeDynamicScene, "diyScene", diy), 200)

	// A device without scenes answers an empty list.
	n := h.scenes(cloud.PathScenes, heaterSKU, heaterID)
	if caps := n.body["payload"].(map[string]any)["capabilities"].([]any); n.code() != 200 || len(caps) != 0 {
		t.Fatalf("heater scenes: %s", n.raw)
	}
}

func TestFixtureScenes(t *testing.T) {
	cat, err := LoadCatalogue(filepath.Join(fixtures, "list_devices_2.json"))
	if err != nil {
		t.Fatal(err)
	}
	h := start(t, Options{Catalogue: cat})
	const sku, id = "H6072", "AA:BB:CC:DD:AA:BB:CC:DD"
	r := h.scenes(cloud.PathScenes, sku, id)
	opts := r.body["payload"].(map[string]any)["capabilities"].([]any)[0].(map[string]any)["parameters"].(map[string]any)["options"].([]any)
	if len(opts) != 8 {
		t.Fatalf("generated scenes: %s", r.raw)
	}
	again := h.scenes(cloud.PathScenes, sku, id)
	if string(again.raw) != string(r.raw) {
		t.Fatal("generated scenes differ between calls")
	}
	// The device list's lightScene options are empty: the scene list decides.
	scene := opts[0].(map[string]any)["value"]
	wantStatus(t, "generated scene", h.control(sku, id, capability.TypeDynamicScene, "lightScene", scene), 200)
	wantStatus(t, "scene not in the list", h.control(sku, id, capability.TypeDynamicScene, "lightScene", map[string]any{"paramId": 1, "id": 2}), 400)
	// DIY: the list has none, the endpoint generates some.
	d := h.scenes(cloud.PathDIYScenes, sku, id)
	if !strings.Contains(string(d.raw), `"instance":"diyScene"`) {
		t.Fatalf("diy: %s", d.raw)
	}

	// DefaultScenes from the captured scene answer.
	cat2, _ := LoadCatalogue(filepath.Join(fixtures, "list_devices_2.json"))
	cat2.DefaultScenes = mustScenes(t)
	h2 := start(t, Options{Catalogue: cat2})
	r2 := h2.scenes(cloud.PathScenes, sku, id)
	if n := len(r2.body["payload"].(map[string]any)["capabilities"].([]any)[0].(map[string]any)["parameters"].(map[string]any)["options"].([]any)); n != 65 {
		t.Fatalf("%d default scenes, want 65", n)
	}
	wantStatus(t, "captured scene", h2.control(sku, id, capability.TypeDynamicScene, "lightScene", map[string]any{"paramId": 11837, "id": 7691}), 200)
}

func mustScenes(t *testing.T) []capability.Option {
	t.Helper()
	cat, err := ParseSceneList([]byte(`{"payload":{"capabilities":[{"type":"devices.capabilities.dynamic_scene","instance":"lightScene","parameters":{"dataType":"ENUM","options":[]}}]}}`))
	if err != nil || len(cat) != 0 {
		t.Fatalf("empty scene list: %v %v", cat, err)
	}
	opts, err := ParseSceneList(testkit.ReadFixture(t, fixtures, "scenes.json"))
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return -1
}
