package discovery

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/topic"
)

// templateKeys returns the keys a template reads with value_json.get("key") or
// p.get("key"), in order.
func templateKeys(tpl string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`\.get\("([^"]+)"`).FindAllStringSubmatch(tpl, -1) {
		out = append(out, m[1])
	}
	return out
}

// jsonObject marshals v and decodes it as an object, the way a template's
// value_json sees it.
func jsonObject(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return decodeMap(t, b)
}

func TestBridgeStatsJSON(t *testing.T) {
	left := 420
	tests := []struct {
		name string
		s    BridgeStats
		want string
	}{
		{"no daily limit", BridgeStats{Version: "1"},
			`{"version":"1","requests_today":0,"last_429":null,"queue_depth":0,"devices_online":0,"devices_total":0,"rate_limited":false,"quota_left":null,"cloud_connected":null,"quota_limit":null,"quota_remaining":null,"quota_reset":null,"quota_source":null,"quota_fits":null,"quota_runs_out":null}`},
		{"rate limited with quota", BridgeStats{Version: "1", RateLimited: true, QuotaLeft: &left},
			`{"version":"1","requests_today":0,"last_429":null,"queue_depth":0,"devices_online":0,"devices_total":0,"rate_limited":true,"quota_left":420,"cloud_connected":null,"quota_limit":null,"quota_remaining":null,"quota_reset":null,"quota_source":null,"quota_fits":null,"quota_runs_out":null}`},
		{"a learned quota running short", BridgeStats{Version: "1", QuotaLimit: new(45), QuotaRemaining: new(12),
			QuotaReset: new(time.Date(2026, 11, 25, 18, 3, 0, 0, time.UTC)), QuotaSource: new("learned"), QuotaFits: new(false),
			QuotaRunsOut: new(time.Date(2026, 11, 25, 18, 1, 0, 0, time.UTC))},
			`{"version":"1","requests_today":0,"last_429":null,"queue_depth":0,"devices_online":0,"devices_total":0,"rate_limited":false,"quota_left":null,"cloud_connected":null,"quota_limit":45,"quota_remaining":12,"quota_reset":"2026-11-25T18:03:00Z","quota_source":"learned","quota_fits":false,"quota_runs_out":"2026-11-25T18:01:00Z"}`},
		{"cloud away", BridgeStats{Version: "1", CloudConnected: new(false)},
			`{"version":"1","requests_today":0,"last_429":null,"queue_depth":0,"devices_online":0,"devices_total":0,"rate_limited":false,"quota_left":null,"cloud_connected":false,"quota_limit":null,"quota_remaining":null,"quota_reset":null,"quota_source":null,"quota_fits":null,"quota_runs_out":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.s)
			if err != nil || string(b) != tt.want {
				t.Errorf("got %s (%v), want %s", b, err, tt.want)
			}
		})
	}
}

func TestBridgeInfoJSON(t *testing.T) {
	info := BridgeInfo{Version: "1", LogLevel: "info",
		Poll:    PollInfo{IntervalSeconds: 60, RequestsToday: 12},
		Devices: map[string]DeviceInfo{"h6072_aabb": {PollIntervalSeconds: 120, Name: "Hall light"}, "h1_01": {Disabled: true}}}
	b, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":"1","log_level":"info","poll":{"interval_seconds":60,"daily_limit":0,"requests_today":12,"quota_left":null},` +
		`"devices":{"h1_01":{"disabled":true},"h6072_aabb":{"poll_interval_seconds":120,"disabled":false,"name":"Hall light"}}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

// TestBridgeOperateEntities: the controls and sensors of the bridge's own
// device read the keys BridgeInfo and BridgeStats publish, and command the
// request topics of the contract.
func TestBridgeOperateEntities(t *testing.T) {
	cfg := testConfig()
	l := cfg.Layout
	configs := BridgeConfigs(cfg)
	info := jsonObject(t, BridgeInfo{Poll: PollInfo{}})
	stats := jsonObject(t, BridgeStats{})

	sel := configOf(t, configs, "select", "log_level")
	opts, _ := json.Marshal(sel["options"])
	if string(opts) != `["trace","debug","info","warn","error"]` {
		t.Errorf("log levels %s", opts)
	}
	if sel["state_topic"] != l.BridgeInfo() || sel["command_topic"] != "cloud2mqtt/bridge/request/options" ||
		sel["command_template"] != `{{ {"options": {"log_level": value}} | tojson }}` || sel["entity_category"] != "config" {
		t.Errorf("log level select %v", sel)
	}
	if k := templateKeys(sel["value_template"].(string)); !slices.Equal(k, []string{"log_level"}) || info["log_level"] == nil {
		t.Errorf("log level select reads %v of %v", k, info)
	}

	num := configOf(t, configs, "number", "poll_interval")
	for k, want := range map[string]any{"min": 2.0, "max": 86400.0, "step": 1.0, "mode": "box", "unit_of_measurement": "s",
		"entity_category": "config", "state_topic": l.BridgeInfo(), "command_topic": "cloud2mqtt/bridge/request/options",
		"command_template": `{{ {"options": {"poll_interval": ((value | round(0) | int) ~ "s")}} | tojson }}`} {
		if num[k] != want {
			t.Errorf("poll interval %s = %v, want %v", k, num[k], want)
		}
	}
	if k := templateKeys(num["value_template"].(string)); !slices.Equal(k, []string{"poll", "interval_seconds"}) {
		t.Errorf("poll interval reads %v", k)
	}
	if _, ok := info["poll"].(map[string]any)["interval_seconds"]; !ok {
		t.Errorf("BridgeInfo has no poll.interval_seconds: %v", info)
	}

	for _, b := range []struct{ object, topic, category string }{
		{"refresh", "cloud2mqtt/bridge/request/refresh", "config"},
		{"read_all", "cloud2mqtt/bridge/request/read_all", "diagnostic"},
		{"republish", "cloud2mqtt/bridge/request/republish", "config"},
	} {
		c := configOf(t, configs, "button", b.object)
		if c["command_topic"] != b.topic || c["payload_press"] != "{}" || c["entity_category"] != b.category || c["name"] == nil {
			t.Errorf("button %s: %v", b.object, c)
		}
	}

	rl := configOf(t, configs, "binary_sensor", "rate_limited")
	if rl["state_topic"] != l.BridgeStats() || rl["device_class"] != "problem" || rl["entity_category"] != "diagnostic" ||
		rl["payload_on"] != "ON" || rl["payload_off"] != "OFF" {
		t.Errorf("rate limited %v", rl)
	}
	if k := templateKeys(rl["value_template"].(string)); !slices.Equal(k, []string{"rate_limited"}) {
		t.Errorf("rate limited reads %v", k)
	}
	if _, ok := stats["rate_limited"]; !ok {
		t.Errorf("BridgeStats has no rate_limited: %v", stats)
	}

	// Every sensor reads a key BridgeStats has.
	for tp, p := range configs {
		if !strings.Contains(tp, "/sensor/") || len(p) == 0 {
			continue
		}
		c := decodeMap(t, p)
		for _, k := range templateKeys(c["value_template"].(string)) {
			if _, ok := stats[k]; !ok {
				t.Errorf("%s reads %q, which BridgeStats does not have", tp, k)
			}
		}
	}
}

// TestQuotaSensorOnlyWithDailyLimit: without a limit the quota sensor is
// removed with an empty payload; with one it is a diagnostic measurement.
func TestQuotaSensorOnlyWithDailyLimit(t *testing.T) {
	cfg := testConfig()
	tp := cfg.ConfigTopic("sensor", "cloud2mqtt_bridge", "quota_left")
	if p, ok := BridgeConfigs(cfg)[tp]; !ok || len(p) != 0 {
		t.Errorf("without a daily limit %s = %q (present %v), want an empty payload", tp, p, ok)
	}
	cfg.DailyLimit = 10000
	q := decodeMap(t, BridgeConfigs(cfg)[tp])
	if q["state_topic"] != cfg.Layout.BridgeStats() || q["state_class"] != "measurement" || q["entity_category"] != "diagnostic" ||
		q["value_template"] != `{{ value_json.get("quota_left") }}` || q["name"] != "Quota left today" {
		t.Errorf("quota sensor %v", q)
	}
}

// TestDeviceOperateEntities: every device has a poll-interval number and a
// "Read now" button, disabled by default, available while the bridge is.
func TestDeviceOperateEntities(t *testing.T) {
	cfg := testConfig()
	l := cfg.Layout
	for _, d := range []capability.Device{colourLamp(), dimmer(), heater()} {
		id := topic.DeviceID(d.SKU, d.Device)
		configs := Configs(cfg, d)
		num := configOf(t, configs, "number", "poll_interval")
		for k, want := range map[string]any{"enabled_by_default": false, "min": 2.0, "max": 86400.0, "mode": "box",
			"unit_of_measurement": "s", "entity_category": "config", "state_topic": l.BridgeInfo(),
			"command_topic":    "cloud2mqtt/bridge/request/device/options",
			"command_template": `{{ {"device": "` + id + `", "options": {"poll_interval": ((value | round(0) | int) ~ "s")}} | tojson }}`,
			"unique_id":        id + "_poll_interval"} {
			if num[k] != want {
				t.Errorf("%s: poll interval %s = %v, want %v", id, k, num[k], want)
			}
		}
		tpl := num["value_template"].(string)
		if k := templateKeys(tpl); !slices.Equal(k, []string{"devices", id, "poll_interval_seconds", "poll", "interval_seconds"}) {
			t.Errorf("%s: poll interval reads %v", id, k)
		}
		if !strings.HasSuffix(tpl, "{{ own if own else common }}") {
			t.Errorf("%s: poll interval does not fall back to the bridge's: %s", id, tpl)
		}
		btn := configOf(t, configs, "button", "read_now")
		if btn["enabled_by_default"] != false || btn["command_topic"] != l.Get(id) || btn["entity_category"] != "diagnostic" {
			t.Errorf("%s: read now %v", id, btn)
		}
		for _, c := range []map[string]any{num, btn} {
			if a, _ := json.Marshal(c["availability"]); string(a) != `[{"topic":"cloud2mqtt/bridge/state"}]` {
				t.Errorf("%s: %s availability %s", id, c["name"], a)
			}
		}
	}
	// The template's keys match what BridgeInfo publishes.
	info := jsonObject(t, BridgeInfo{Devices: map[string]DeviceInfo{"x": {PollIntervalSeconds: 5}}})
	if _, ok := info["devices"].(map[string]any)["x"].(map[string]any)["poll_interval_seconds"]; !ok {
		t.Errorf("BridgeInfo devices: %v", info)
	}
}

// heater: a climate appliance whose power is the climate's off/heat mode.
func heater() capability.Device {
	return capability.Device{SKU: "H7131", Device: "02", Name: "Heater", Type: capability.DeviceHeater,
		Capabilities: []capability.Capability{
			onOffCap(capability.TypeOnOff, capability.InstancePower),
			{Type: capability.TypeTemperature, Instance: capability.InstanceTargetTemperature, Parameters: &capability.Parameters{
				DataType: capability.DataStruct, Fields: []capability.Field{
					{FieldName: "temperature", DataType: capability.DataInteger, Range: &capability.Range{Min: 5, Max: 30}},
				}}},
		}}
}

// TestFoldedPowerIsAlsoASwitch: an appliance whose power is the mode of its
// climate, humidifier or fan entity also gets a "Power" switch; a light's
// power stays the light's, and a plain switch stays the device itself.
func TestFoldedPowerIsAlsoASwitch(t *testing.T) {
	cfg := testConfig()
	humidifier := capability.Device{SKU: "H7141", Device: "01", Type: capability.DeviceHumidifier, Capabilities: []capability.Capability{
		onOffCap(capability.TypeOnOff, capability.InstancePower),
		rangeCap(capability.TypeRange, capability.InstanceHumidity, 30, 80),
	}}
	purifier := capability.Device{SKU: "H7121", Device: "03", Type: capability.DeviceAirPurifier, Capabilities: []capability.Capability{
		onOffCap(capability.TypeOnOff, capability.InstancePower),
	}}
	plug := capability.Device{SKU: "H5080", Device: "04", Type: capability.DeviceSocket, Capabilities: []capability.Capability{
		onOffCap(capability.TypeOnOff, capability.InstancePower),
	}}
	tests := []struct {
		name      string
		dev       capability.Device
		owner     string // the entity that keeps the power as its on/off
		switchNow bool
		wantName  any
	}{
		{"heater", heater(), "climate/targetTemperature", true, "Power"},
		{"humidifier", humidifier, "humidifier/humidifier", true, "Power"},
		{"purifier", purifier, "fan/fan", true, "Power"},
		{"light", colourLamp(), "light/light", false, nil},
		{"plug", plug, "", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			configs := Configs(cfg, tt.dev)
			id := topic.DeviceID(tt.dev.SKU, tt.dev.Device)
			if tt.owner != "" {
				component, object, _ := strings.Cut(tt.owner, "/")
				configOf(t, configs, component, object)
			}
			p, ok := configs[cfg.ConfigTopic("switch", id, capability.InstancePower)]
			if ok != tt.switchNow {
				t.Fatalf("power switch present %v, want %v", ok, tt.switchNow)
			}
			if !ok {
				return
			}
			sw := decodeMap(t, p)
			if sw["name"] != tt.wantName || sw["command_topic"] != cfg.Layout.SetInstance(id, capability.InstancePower) ||
				sw["value_template"] != `{{ value_json.get("powerSwitch") }}` || sw["payload_on"] != "1" || sw["state_on"] != "1" {
				t.Errorf("power switch %v", sw)
			}
		})
	}
}

func musicCap(auto, rgb bool) capability.Capability {
	fields := []capability.Field{
		{FieldName: "musicMode", DataType: capability.DataEnum, Required: true,
			Options: []capability.Option{{Name: "Energic", Value: int64(1)}, {Name: "Rhythm", Value: int64(2)}}},
		{FieldName: "sensitivity", DataType: capability.DataInteger, Required: true, Unit: "unit.percent",
			Range: &capability.Range{Min: 0, Max: 100, Precision: 1}},
	}
	if auto {
		fields = append(fields, capability.Field{FieldName: "autoColor", DataType: capability.DataEnum,
			Options: []capability.Option{{Name: "on", Value: int64(1)}, {Name: "off", Value: int64(0)}}})
	}
	if rgb {
		fields = append(fields, capability.Field{FieldName: "rgb", DataType: capability.DataInteger,
			Range: &capability.Range{Min: 0, Max: 0xFFFFFF, Precision: 1}})
	}
	return capability.Capability{Type: capability.TypeMusicSetting, Instance: capability.InstanceMusicMode,
		Parameters: &capability.Parameters{DataType: capability.DataStruct, Fields: fields}}
}

// TestMusicAutoColourAndColour: the autoColor member is a switch and the rgb
// member a template light; both send partial music modes on <id>/set, which
// the bridge completes (Complete) into values the definition accepts.
func TestMusicAutoColourAndColour(t *testing.T) {
	cfg := testConfig()
	lamp := func(auto, rgb bool) capability.Device {
		d := dimmer()
		d.Capabilities = append(slices.Clone(d.Capabilities), musicCap(auto, rgb))
		return d
	}
	id := "h1_01"
	set := cfg.Layout.Set(id)

	configs := Configs(cfg, lamp(true, true))
	sw := configOf(t, configs, "switch", "musicMode_autoColor")
	for k, want := range map[string]any{"name": "Music auto colour", "command_topic": set, "state_topic": cfg.Layout.State(id),
		"payload_on": `{"musicMode":{"autoColor":1}}`, "payload_off": `{"musicMode":{"autoColor":0}}`,
		"state_on": "1", "state_off": "0", "entity_category": "config",
		"value_template": `{% set v = value_json.get("musicMode") %}{% set a = v.get("autoColor") if v is mapping else none %}{{ "None" if a is none else a }}`} {
		if sw[k] != want {
			t.Errorf("switch %s = %v, want %v", k, sw[k], want)
		}
	}
	light := configOf(t, configs, "light", "musicMode_rgb")
	for k, want := range map[string]any{"name": "Music colour", "schema": "template", "command_topic": set,
		"state_topic": cfg.Layout.State(id), "entity_category": "config",
		"command_off_template": `{{ {"musicMode": {"autoColor": 1}} | tojson }}`,
		"command_on_template": `{% if red is defined and green is defined and blue is defined %}` +
			`{{ {"musicMode": {"autoColor": 0, "rgb": (red | int) * 65536 + (green | int) * 256 + (blue | int)}} | tojson }}` +
			`{% else %}{{ {"musicMode": {"autoColor": 0}} | tojson }}{% endif %}`,
		"state_template": `{% set v = value_json.get("musicMode") %}{% set a = v.get("autoColor") if v is mapping else none %}` +
			`{{ "None" if a is none else ("off" if a == 1 else "on") }}`,
		"red_template":   `{% set v = value_json.get("musicMode") %}{% set c = v.get("rgb") if v is mapping else none %}{{ ((c // 65536) % 256) if c is number else "None" }}`,
		"green_template": `{% set v = value_json.get("musicMode") %}{% set c = v.get("rgb") if v is mapping else none %}{{ ((c // 256) % 256) if c is number else "None" }}`,
		"blue_template":  `{% set v = value_json.get("musicMode") %}{% set c = v.get("rgb") if v is mapping else none %}{{ (c % 256) if c is number else "None" }}`,
	} {
		if light[k] != want {
			t.Errorf("light %s = %v\nwant %v", k, light[k], want)
		}
	}
	// The main light is untouched: still the device's only nameless light.
	if main := configOf(t, configs, "light", "light"); main["name"] != nil || main["schema"] != "json" {
		t.Errorf("main light %v", main)
	}

	// What the bridge makes of the commands: the partial struct laid over
	// the last known value is a value the definition accepts.
	c := musicCap(true, true)
	last := map[string]any{"musicMode": int64(2), "sensitivity": int64(40), "autoColor": int64(1), "rgb": int64(0)}
	for _, cmd := range []string{sw["payload_on"].(string), sw["payload_off"].(string),
		`{"musicMode":{"autoColor":0,"rgb":16744448}}`, `{"musicMode":{"autoColor":1}}`} {
		var obj map[string]any
		if err := json.Unmarshal([]byte(cmd), &obj); err != nil {
			t.Fatal(err)
		}
		partial := capability.NormalizeValue(obj["musicMode"])
		v, err := capability.Decode(c, capability.Overlay(last, partial))
		if err != nil {
			t.Errorf("%s: %v", cmd, err)
			continue
		}
		if got := v.(map[string]any); !capability.Equal(got["sensitivity"], int64(40)) || !capability.Equal(got["musicMode"], int64(2)) {
			t.Errorf("%s lost the other members: %v", cmd, got)
		}
	}

	tests := []struct {
		name        string
		auto, rgb   bool
		swit, light bool
	}{
		{"auto colour without rgb", true, false, true, false},
		{"rgb without auto colour", false, true, false, false},
		{"neither", false, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			configs := Configs(cfg, lamp(tt.auto, tt.rgb))
			_, sw := configs[cfg.ConfigTopic("switch", id, "musicMode_autoColor")]
			_, li := configs[cfg.ConfigTopic("light", id, "musicMode_rgb")]
			if sw != tt.swit || li != tt.light {
				t.Errorf("switch %v light %v, want %v %v", sw, li, tt.swit, tt.light)
			}
			configOf(t, configs, "select", "musicMode") // the mode select stays
		})
	}
}

// TestDisplayName: a device passed with the name the user chose shows that
// name in Home Assistant's device registry; topics, unique ids and entity
// ids do not change.
func TestDisplayName(t *testing.T) {
	cfg := testConfig()
	cloudName := Configs(cfg, colourLamp())
	renamed := colourLamp()
	renamed.Name = "Hall light"
	shown := Configs(cfg, renamed)
	if len(shown) != len(cloudName) {
		t.Fatalf("%d configs renamed, %d before", len(shown), len(cloudName))
	}
	for tp, p := range cloudName {
		q, ok := shown[tp]
		if !ok {
			t.Errorf("%s gone after the rename", tp)
			continue
		}
		a, b := decodeMap(t, p), decodeMap(t, q)
		if b["device"].(map[string]any)["name"] != "Hall light" || a["device"].(map[string]any)["name"] != "Lamp" {
			t.Errorf("%s: device names %v → %v", tp, a["device"], b["device"])
		}
		delete(a, "device")
		delete(b, "device")
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("%s: more than the device name changed:\n%s\n%s", tp, ja, jb)
		}
	}
}
