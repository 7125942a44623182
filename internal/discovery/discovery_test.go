package discovery

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/topic"
)

func onOffCap(typ, instance string) capability.Capability {
	return capability.Capability{Type: typ, Instance: instance, Parameters: &capability.Parameters{
		DataType: capability.DataEnum,
		Options:  []capability.Option{{Name: "on", Value: int64(1)}, {Name: "off", Value: int64(0)}},
	}}
}

func rangeCap(typ, instance string, min, max int) capability.Capability {
	return capability.Capability{Type: typ, Instance: instance, Parameters: &capability.Parameters{
		DataType: capability.DataInteger, Range: &capability.Range{Min: min, Max: max, Precision: 1},
	}}
}

func enumCap(typ, instance string, opts ...capability.Option) capability.Capability {
	return capability.Capability{Type: typ, Instance: instance, Parameters: &capability.Parameters{
		DataType: capability.DataEnum, Options: opts,
	}}
}

// colourLamp is a light with everything: brightness 1..100, RGB, 2000..9000 K
// and scenes whose names collide across kinds.
func colourLamp() capability.Device {
	return capability.Device{SKU: "H6072", Device: "AA:BB", Name: "Lamp", Type: capability.DeviceLight,
		Capabilities: []capability.Capability{
			onOffCap(capability.TypeOnOff, capability.InstancePower),
			rangeCap(capability.TypeRange, capability.InstanceBrightness, 1, 100),
			rangeCap(capability.TypeColorSetting, capability.InstanceColorRGB, 0, 0xFFFFFF),
			rangeCap(capability.TypeColorSetting, capability.InstanceColorTemperatureK, 2000, 9000),
			enumCap(capability.TypeDynamicScene, capability.InstanceLightScene,
				capability.Option{Name: "Sunrise", Value: map[string]any{"paramId": int64(1681), "id": int64(1606)}},
				capability.Option{Name: "Party", Value: int64(3055)}),
			enumCap(capability.TypeDynamicScene, capability.InstanceDIYScene, capability.Option{Name: "Party", Value: int64(77)}),
			enumCap(capability.TypeDynamicScene, capability.InstanceSnapshot,
				capability.Option{Name: "sunrise", Value: int64(0)}, capability.Option{Name: "Sunset", Value: int64(1)}),
			{Type: capability.TypeSegmentColor, Instance: capability.InstanceSegmentedColorRGB, Parameters: &capability.Parameters{
				DataType: capability.DataStruct, Fields: []capability.Field{
					{FieldName: "segment", DataType: capability.DataArray, ElementRange: &capability.Range{Min: 0, Max: 14}},
					{FieldName: "rgb", DataType: capability.DataInteger, Range: &capability.Range{Min: 0, Max: 0xFFFFFF}},
				}}},
			{Type: capability.TypeSegmentColor, Instance: capability.InstanceSegmentBrightness, Parameters: &capability.Parameters{
				DataType: capability.DataStruct, Fields: []capability.Field{
					{FieldName: "segment", DataType: capability.DataArray, ElementRange: &capability.Range{Min: 0, Max: 14}},
					{FieldName: "brightness", DataType: capability.DataInteger, Range: &capability.Range{Min: 0, Max: 100}},
				}}},
		}}
}

// dimmer is a light with brightness 10..254 (min above zero, max not 100)
// and no colour.
func dimmer() capability.Device {
	return capability.Device{SKU: "H1", Device: "01", Type: capability.DeviceLight, Capabilities: []capability.Capability{
		onOffCap(capability.TypeOnOff, capability.InstancePower),
		rangeCap(capability.TypeRange, capability.InstanceBrightness, 10, 254),
	}}
}

func decodeMap(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, b)
	}
	return m
}

func configOf(t *testing.T, configs map[string][]byte, component, object string) map[string]any {
	t.Helper()
	for tp, p := range configs {
		parts := strings.Split(tp, "/")
		if len(parts) == 5 && parts[1] == component && parts[3] == object {
			return decodeMap(t, p)
		}
	}
	t.Fatalf("no %s/%s among %v", component, object, sortedKeys(configs))
	return nil
}

func cmds(c ...any) []Command {
	var out []Command
	for i := 0; i < len(c); i += 2 {
		out = append(out, Command{Instance: c[i].(string), Value: capability.NormalizeValue(c[i+1])})
	}
	return out
}

func sameCommands(a, b []Command) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Instance != b[i].Instance || !capability.Equal(capability.NormalizeValue(a[i].Value), b[i].Value) {
			return false
		}
	}
	return true
}

// allConfigs returns every config of every device of every source, and the
// bridge's with a quota known (all its entities).
func allConfigs(t *testing.T) map[string][]byte {
	t.Helper()
	cfg := testConfig()
	bridge := cfg
	bridge.QuotaKnown = true
	all := BridgeConfigs(bridge)
	for _, src := range sources(t) {
		for _, d := range src.devices {
			for k, v := range Configs(cfg, d) {
				if _, dup := all[k]; dup {
					t.Errorf("config topic %s produced twice", k)
				}
				all[k] = v
			}
		}
	}
	return all
}

func TestEveryEntity(t *testing.T) {
	cfg := testConfig()
	l := cfg.Layout
	uids := map[string]string{}
	for tp, p := range allConfigs(t) {
		if len(p) == 0 {
			// a removal: only the quota sensor of a bridge without a limit
			if tp != cfg.ConfigTopic("sensor", cfg.withDefaults().BridgeID, "quota_left") {
				t.Errorf("%s has an empty payload", tp)
			}
			continue
		}
		c := decodeMap(t, p)
		parts := strings.Split(tp, "/")
		if len(parts) != 5 || parts[0] != "homeassistant" || parts[4] != "config" {
			t.Errorf("topic %s is not <prefix>/<component>/<node>/<object>/config", tp)
			continue
		}
		uid, _ := c["unique_id"].(string)
		if uid == "" {
			t.Errorf("%s has no unique_id", tp)
		}
		if other, dup := uids[uid]; dup {
			t.Errorf("unique_id %s of %s already used by %s", uid, tp, other)
		}
		uids[uid] = tp
		if c["availability_mode"] != "all" && parts[2] != cfg.withDefaults().BridgeID {
			t.Errorf("%s: availability_mode %v", tp, c["availability_mode"])
		}
		var topics []string
		for _, a := range c["availability"].([]any) {
			topics = append(topics, a.(map[string]any)["topic"].(string))
		}
		want := []string{l.BridgeState(), l.Availability(parts[2])}
		switch {
		case parts[2] == cfg.withDefaults().BridgeID, parts[3] == roleOnline,
			parts[3] == "poll_interval", parts[3] == "read_now":
			// These stay available while the device is offline.
			want = want[:1]
		}
		if strings.Join(topics, " ") != strings.Join(want, " ") {
			t.Errorf("%s: availability %v, want %v", tp, topics, want)
		}
		dev, _ := c["device"].(map[string]any)
		if dev == nil || dev["identifiers"] == nil || dev["name"] == "" {
			t.Errorf("%s: device block %v", tp, dev)
		}
		if parts[2] != cfg.withDefaults().BridgeID && dev["via_device"] != cfg.withDefaults().BridgeID {
			t.Errorf("%s: via_device %v", tp, dev["via_device"])
		}
		if o, _ := c["origin"].(map[string]any); o["name"] != "cloud2mqtt" || o["sw_version"] != "1.0.0-test" {
			t.Errorf("%s: origin %v", tp, o)
		}
		if opts, ok := c["options"].([]any); ok {
			seen := map[any]bool{}
			for _, o := range opts {
				if seen[o] {
					t.Errorf("%s: option %v twice", tp, o)
				}
				seen[o] = true
			}
		}
	}
}

func TestDeviceMapping(t *testing.T) {
	cfg := testConfig()
	byID := map[string]capability.Device{}
	for _, src := range sources(t) {
		for _, d := range src.devices {
			byID[topic.DeviceID(d.SKU, d.Device)] = d
		}
	}
	has := func(id, component, object string) bool {
		d, ok := byID[id]
		if !ok {
			t.Fatalf("no device %s in the sources", id)
		}
		_, ok = Configs(cfg, d)[cfg.ConfigTopic(component, id, object)]
		return ok
	}
	tests := []struct {
		id, component, object string
		want                  bool
	}{
		{"h7111_aabbccddeeff0011", "fan", "fan", true},                   // fan type
		{"h7111_aabbccddeeff0011", "switch", "oscillationToggle", false}, // owned by the fan
		{"h7111_aabbccddeeff0011", "switch", "powerSwitch", true},        // the fan's power as a switch too
		{"h7141_aabbccddeeff0001", "humidifier", "humidifier", true},
		{"h7141_aabbccddeeff0001", "event", "lackWaterEvent", true},
		{"h7131_aabbccddeeff0002", "climate", "targetTemperature", true},
		{"h7131_aabbccddeeff0002", "light", "nightlight", true}, // heater's coloured nightlight
		{"h7131_aabbccddeeff0002", "select", "workMode", true},
		{"h7121_aabbccddeeff0003", "sensor", "filterLifeTime", true},
		{"h7121_aabbccddeeff0003", "sensor", "airQuality", true},
		{"h6601_9dfa85ebd3008bff", "light", "light", true}, // no type: a light by its capabilities
		{"h6601_9dfa85ebd3008bff", "light", "segment_14", true},
		{"h6601_9dfa85ebd3008bff", "select", "musicMode", true},
		{"h6601_9dfa85ebd3008bff", "number", "musicMode_sensitivity", true},
		{"h6601_9dfa85ebd3008bff", "select", "lightScene", false}, // effects of the light
		{"h6072_aabbccddaabbccdd", "switch", "gradientToggle", true},
		{"h6072_aabbccddaabbccdd", "light", "segment_14", true},
		{"h6072_aabbccddaabbccdd", "light", "segment_15", false},
		{"h5082_aabbccddeeff1008", "switch", "socketToggle2", true},
		{"h5082_aabbccddeeff1008", "switch", "powerSwitch", true},
		{"h7171_aabbccddeeff1010", "climate", "sliderTemperature", true}, // kettle
		{"h7151_aabbccddeeff1012", "humidifier", "humidifier", true},
		{"h6604_aabbccddeeff1015", "select", "hdmiSource", true},
		{"h6604_aabbccddeeff1015", "number", "volume", true},
		{"h6604_aabbccddeeff1015", "select", "lightScene", true}, // scenes of a non-light
		{"h5106_aabbccddeeff1016", "sensor", "carbonDioxideConcentration", true},
	}
	for _, tt := range tests {
		if got := has(tt.id, tt.component, tt.object); got != tt.want {
			t.Errorf("%s %s/%s present %v, want %v", tt.id, tt.component, tt.object, got, tt.want)
		}
	}

	sock := configOf(t, Configs(cfg, byID["h5082_aabbccddeeff1008"]), "switch", "socketToggle1")
	if sock["name"] != "Socket 1" {
		t.Errorf("socket name %v", sock["name"])
	}
	hum := configOf(t, Configs(cfg, byID["h7151_aabbccddeeff1012"]), "humidifier", "humidifier")
	if hum["device_class"] != "dehumidifier" {
		t.Errorf("dehumidifier device_class %v", hum["device_class"])
	}
	fan := configOf(t, Configs(cfg, byID["h7111_aabbccddeeff0011"]), "fan", "fan")
	if fan["speed_range_max"] != 8.0 || fan["speed_range_min"] != 1.0 {
		t.Errorf("fan speed range %v..%v, want 1..8 (FanSpeed levels)", fan["speed_range_min"], fan["speed_range_max"])
	}
	presets, _ := json.Marshal(fan["preset_modes"])
	if string(presets) != `["Custom","Auto","Sleep","Nature","Storm"]` {
		t.Errorf("fan presets %s", presets)
	}
	cl := configOf(t, Configs(cfg, byID["h7131_aabbccddeeff0002"]), "climate", "targetTemperature")
	if cl["min_temp"] != 5.0 || cl["max_temp"] != 30.0 || cl["temperature_unit"] != "C" {
		t.Errorf("climate bounds %v..%v %v", cl["min_temp"], cl["max_temp"], cl["temperature_unit"])
	}
	// A heater ranged in Fahrenheit (its unit member's default): the
	// thermostat is in °F and its commands say so.
	fh := byID["h7131_aabbccddeeff0002"]
	fh.Capabilities = slices.Clone(fh.Capabilities)
	for i, c := range fh.Capabilities {
		if c.Instance != capability.InstanceTargetTemperature {
			continue
		}
		p := *c.Parameters
		p.Fields = slices.Clone(p.Fields)
		for j, f := range p.Fields {
			switch f.FieldName {
			case "temperature":
				p.Fields[j].Range = &capability.Range{Min: 41, Max: 86, Precision: 1}
			case "unit":
				p.Fields[j].DefaultValue = "Fahrenheit"
			}
		}
		fh.Capabilities[i].Parameters = &p
	}
	cl = configOf(t, Configs(cfg, fh), "climate", "targetTemperature")
	if cl["min_temp"] != 41.0 || cl["max_temp"] != 86.0 || cl["temperature_unit"] != "F" ||
		!strings.Contains(cl["temperature_command_template"].(string), `"unit": "Fahrenheit"`) {
		t.Errorf("Fahrenheit climate: %v..%v %v, %v", cl["min_temp"], cl["max_temp"], cl["temperature_unit"], cl["temperature_command_template"])
	}
}

// TestConfigsWhenCapabilitiesGo: the configs of a device that lost its
// segments and scenes lack the segment lights (the bridge publishes empty
// configs for them), and the light's own config changes (no effect list).
func TestConfigsWhenCapabilitiesGo(t *testing.T) {
	cfg := testConfig()
	before := Configs(cfg, colourLamp())
	d := colourLamp()
	d.Capabilities = d.Capabilities[:4] // scenes and segments gone
	after := Configs(cfg, d)
	removed := 0
	for tp := range before {
		if _, ok := after[tp]; !ok {
			removed++
			if !strings.Contains(tp, "segment_") {
				t.Errorf("unexpected removal %s", tp)
			}
		}
	}
	if removed != 15 {
		t.Errorf("%d removals, want the 15 segment lights", removed)
	}
	light := cfg.ConfigTopic("light", "h6072_aabb", "light")
	if bytes.Equal(before[light], after[light]) {
		t.Error("light config unchanged after its effect list went")
	}
	again := Configs(cfg, d)
	for tp, p := range after {
		if !bytes.Equal(again[tp], p) {
			t.Errorf("same device, different config for %s", tp)
		}
	}
}

func TestEventPayload(t *testing.T) {
	got := EventPayload("lackWaterEvent", capability.EventOption{Name: "lack", Value: int64(1), Message: "Lack of Water"})
	want := `{"event_type":"lack","instance":"lackWaterEvent","message":"Lack of Water","value":1}`
	if string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// validRange reports a command outside the capability's range.
func validRange(d capability.Device, c Command) string {
	cp, ok := d.Capability(c.Instance)
	if !ok {
		return "unknown instance " + c.Instance
	}
	if r := intRange(cp); r != nil {
		v, ok := c.Value.(int64)
		if !ok || v < int64(r.Min) || v > int64(r.Max) {
			return "value out of range for " + c.Instance
		}
	}
	return ""
}

// A scene select of a device without a light has object values, which its
// state template must find; anything else renders "None".
func TestSelectStateOfObjectValues(t *testing.T) {
	box := capability.Device{SKU: "H6604", Device: "CC", Type: "devices.types.box", Capabilities: []capability.Capability{
		onOffCap(capability.TypeOnOff, capability.InstancePower),
		enumCap(capability.TypeDynamicScene, capability.InstanceLightScene,
			capability.Option{Name: "Movie", Value: map[string]any{"paramId": int64(5001), "id": int64(2500)}},
			capability.Option{Name: "Game", Value: map[string]any{"paramId": int64(5008), "id": int64(2501)}}),
	}}
	c := configOf(t, Configs(testConfig(), box), "select", capability.InstanceLightScene)
	tpl, _ := c["value_template"].(string)
	want := `{% set s = [["Movie",{"id":2500,"paramId":5001}],["Game",{"id":2501,"paramId":5008}]] %}` +
		`{% for p in s if p[1] == value_json.get("lightScene") %}{% if loop.first %}{{ p[0] }}{% endif %}{% else %}None{% endfor %}`
	if tpl != want {
		t.Errorf("value_template\n got %s\nwant %s", tpl, want)
	}
}
