package discovery

import (
	"strconv"
	"strings"

	"cloud2mqtt/internal/capability"
)

// entities builds every entity of a device, without the common members.
func entities(cfg Config, dev capability.Device, id string) []*entity {
	p := analyse(dev)
	l := cfg.Layout
	b := &builder{cfg: cfg, p: p, id: id, state: l.State(id)}

	if p.light != nil {
		b.add(lightEntity(cfg, id, p.light))
	}
	switch p.kind {
	case roleHumidifier:
		b.humidifier()
	case roleFan:
		b.fan()
	}
	for _, c := range dev.Capabilities {
		if p.owned[c.Instance] {
			// Automations and dashboards toggle appliances as switches, so a
			// power folded into another entity gets a switch too.
			if c.Instance == capability.InstancePower && p.powerOwner != "" && p.powerOwner != roleLight {
				b.powerSwitch(c)
			}
			continue
		}
		switch c.Type {
		case capability.TypeOnOff:
			b.powerSwitch(c)
		case capability.TypeToggle:
			b.toggle(c)
		case capability.TypeTemperature:
			b.climate(c)
		case capability.TypeWorkMode:
			b.workModeSelect(c)
		case capability.TypeMusicSetting:
			b.music(c)
		case capability.TypeSegmentColor:
			// all segment capabilities together, once
			if c.Instance == firstSegmentInstance(dev) {
				b.segments()
			}
		case capability.TypeProperty:
			b.sensor(c)
		case capability.TypeEvent:
			b.event(c)
		case capability.TypeOnline:
			// the connectivity sensor below covers it
		default:
			b.generic(c)
		}
	}
	b.operate()
	b.connectivity()
	if cfg.Local && capability.LocalEligible(dev) {
		b.connection() // local.go
	}
	return b.out
}

func firstSegmentInstance(dev capability.Device) string {
	for _, c := range dev.Capabilities {
		if c.Type == capability.TypeSegmentColor {
			return c.Instance
		}
	}
	return ""
}

type builder struct {
	cfg   Config
	p     *plan
	id    string
	state string
	out   []*entity
	roles map[string]bool
}

// add appends e unless its role is taken (two capabilities with the same
// instance under different types): the first one wins.
func (b *builder) add(e *entity) {
	if b.roles == nil {
		b.roles = map[string]bool{}
	}
	key := e.component + "/" + e.role
	if b.roles[key] || b.roles["*/"+e.role] {
		return
	}
	b.roles[key] = true
	b.roles["*/"+e.role] = true
	b.out = append(b.out, e)
}

func (b *builder) set(instance string) string { return b.cfg.Layout.SetInstance(b.id, instance) }

// onOffEntity is a switch-like payload over a 1/0 instance.
func (b *builder) onOff(instance string, p map[string]any) map[string]any {
	p["command_topic"] = b.set(instance)
	p["state_topic"] = b.state
	p["value_template"] = "{{ " + stateGet(instance) + " }}"
	p["payload_on"] = "1"
	p["payload_off"] = "0"
	p["state_on"] = "1"
	p["state_off"] = "0"
	return p
}

// powerSwitch: the main switch of a device no richer entity powers.
func (b *builder) powerSwitch(c capability.Capability) {
	if c.Parameters == nil {
		return
	}
	name := any("Power")
	if b.p.light == nil && b.p.kind == "" && !b.p.climate {
		name = nil // the device is a switch
	}
	b.add(&entity{component: "switch", role: c.Instance,
		payload: b.onOff(c.Instance, map[string]any{"name": name})})
}

func (b *builder) toggle(c capability.Capability) {
	if c.Parameters == nil {
		return
	}
	p := map[string]any{"name": instanceName(c.Instance)}
	if strings.HasPrefix(c.Instance, "socketToggle") {
		p["device_class"] = "outlet"
	}
	b.add(&entity{component: "switch", role: c.Instance, payload: b.onOff(c.Instance, p)})
}

func (b *builder) humidifier() {
	dev := b.p.dev
	hum, _ := dev.Capability(capability.InstanceHumidity)
	r := intRange(hum)
	dc := "humidifier"
	if dev.Type == capability.DeviceDehumidifier {
		dc = "dehumidifier"
	}
	p := map[string]any{
		"name":                           nil,
		"device_class":                   dc,
		"command_topic":                  b.set(capability.InstancePower),
		"state_topic":                    b.state,
		"state_value_template":           "{{ " + stateGet(capability.InstancePower) + " }}",
		"payload_on":                     "1",
		"payload_off":                    "0",
		"target_humidity_command_topic":  b.set(capability.InstanceHumidity),
		"target_humidity_state_topic":    b.state,
		"target_humidity_state_template": "{{ " + stateGet(capability.InstanceHumidity) + " }}",
		"min_humidity":                   r.Min,
		"max_humidity":                   r.Max,
	}
	if c, ok := dev.Capability(capability.InstanceWorkMode); ok {
		if wm, ok := workModeOf(c); ok {
			p["modes"] = labels(wm.choices)
			p["mode_command_topic"] = b.set(c.Instance)
			p["mode_command_template"] = enumCommandTemplate(wm.choices)
			p["mode_state_topic"] = b.state
			p["mode_state_template"] = workModeStateTemplate(c.Instance, wm.choices)
		}
	}
	if b.p.has(capability.InstanceSensorHumidity) {
		p["current_humidity_topic"] = b.state
		p["current_humidity_template"] = "{{ " + stateGet(capability.InstanceSensorHumidity) + " }}"
	}
	b.add(&entity{component: "humidifier", role: roleHumidifier, payload: p})
}

func (b *builder) fan() {
	dev := b.p.dev
	p := map[string]any{
		"name":                 nil,
		"command_topic":        b.set(capability.InstancePower),
		"state_topic":          b.state,
		"state_value_template": "{{ " + stateGet(capability.InstancePower) + " }}",
		"payload_on":           "1",
		"payload_off":          "0",
	}
	if c, ok := dev.Capability(capability.InstanceWorkMode); ok {
		if wm, ok := workModeOf(c); ok {
			if wm.hasSpeed {
				n := len(wm.speedValues)
				levels := map[string]any{}    // level (1..n) → modeValue
				positions := map[string]any{} // modeValue → level
				for i, v := range wm.speedValues {
					levels[strconv.Itoa(i+1)] = v
					if k, ok := scalarKey(v); ok {
						positions[k] = i + 1
					}
				}
				mode := strconv.FormatInt(wm.speedMode, 10)
				p["speed_range_min"] = 1
				p["speed_range_max"] = n
				p["percentage_command_topic"] = b.set(c.Instance)
				p["percentage_command_template"] = "{% set m = " + jval(levels) + " %}" +
					"{{ {\"workMode\": " + mode + ", \"modeValue\": m[value | string]} | tojson }}"
				p["percentage_state_topic"] = b.state
				p["percentage_value_template"] = "{% set s = " + jval(positions) + " %}" +
					"{% set v = " + stateGet(c.Instance) + " %}" +
					"{% if v is mapping and v.get(\"workMode\") == " + mode + " %}" +
					"{{ s.get(v.get(\"modeValue\") | string, \"None\") }}{% else %}None{% endif %}"
			}
			if presets := wm.withoutSpeed(); len(presets) > 0 {
				p["preset_modes"] = labels(presets)
				p["preset_mode_command_topic"] = b.set(c.Instance)
				p["preset_mode_command_template"] = enumCommandTemplate(presets)
				p["preset_mode_state_topic"] = b.state
				p["preset_mode_value_template"] = workModeStateTemplate(c.Instance, presets)
			}
		}
	}
	if b.p.has("oscillationToggle") {
		p["oscillation_command_topic"] = b.set("oscillationToggle")
		p["oscillation_state_topic"] = b.state
		p["oscillation_value_template"] = "{{ " + stateGet("oscillationToggle") + " }}"
		p["payload_oscillation_on"] = "1"
		p["payload_oscillation_off"] = "0"
	}
	b.add(&entity{component: "fan", role: roleFan, payload: p})
}

// climate: a temperature_setting capability as a thermostat whose modes
// off/heat are the device's power.
func (b *builder) climate(c capability.Capability) {
	if c.Parameters == nil {
		return
	}
	tf, ok := c.Parameters.Field("temperature")
	if !ok {
		return
	}
	// The unit of the range, which the bridge sends in (a command in
	// another unit is converted into it).
	unit := capability.TemperatureUnit(c)
	if unit == "" {
		unit = "Celsius"
	}
	haUnit := "C"
	if unit == "Fahrenheit" {
		haUnit = "F"
	}
	name := any(nil)
	if b.p.light != nil && b.p.light.role == roleLight || b.p.kind != "" || b.countType(capability.TypeTemperature) > 1 {
		name = instanceName(c.Instance)
	}
	// The command is the whole cloud value: defaults of the other members,
	// the temperature rounded to a whole number and the declared unit.
	obj := []string{}
	for _, f := range c.Parameters.Fields {
		switch f.FieldName {
		case "temperature":
			obj = append(obj, "\"temperature\": value | round(0) | int")
		case "unit":
			obj = append(obj, "\"unit\": "+jstr(unit))
		default:
			if f.DefaultValue != nil {
				obj = append(obj, jstr(f.FieldName)+": "+jval(f.DefaultValue))
			}
		}
	}
	p := map[string]any{
		"name":                         name,
		"temperature_unit":             haUnit,
		"temperature_command_topic":    b.set(c.Instance),
		"temperature_command_template": "{{ {" + strings.Join(obj, ", ") + "} | tojson }}",
		"temperature_state_topic":      b.state,
		"temperature_state_template": "{% set v = " + stateGet(c.Instance) + " %}" +
			"{{ v.get(\"temperature\") if v is mapping else \"None\" }}",
		"precision": 1.0,
	}
	if r := tf.Range; r != nil && r.Max > r.Min {
		p["min_temp"] = r.Min
		p["max_temp"] = r.Max
		p["temp_step"] = r.Step()
	}
	if b.p.powerOwner == "climate" {
		p["modes"] = []any{"off", "heat"}
		p["mode_command_topic"] = b.set(capability.InstancePower)
		p["mode_command_template"] = "{{ 1 if value == \"heat\" else 0 }}"
		p["mode_state_topic"] = b.state
		p["mode_state_template"] = "{% set v = " + stateGet(capability.InstancePower) + " %}" +
			"{{ \"None\" if v is none else (\"heat\" if v == 1 else \"off\") }}"
	} else {
		p["modes"] = []any{"heat"}
	}
	if b.p.has(capability.InstanceSensorTemperature) {
		p["current_temperature_topic"] = b.state
		p["current_temperature_template"] = "{{ " + stateGet(capability.InstanceSensorTemperature) + " }}"
		// Home Assistant rounds the current temperature to the precision
		// too; the sensors report tenths.
		p["precision"] = 0.1
	}
	b.add(&entity{component: "climate", role: c.Instance, payload: p})
}

func (b *builder) countType(t string) int {
	n := 0
	for _, c := range b.p.dev.Capabilities {
		if c.Type == t {
			n++
		}
	}
	return n
}

func (b *builder) workModeSelect(c capability.Capability) {
	if c.Parameters == nil {
		return
	}
	wm, ok := workModeOf(c)
	if !ok {
		return
	}
	b.add(&entity{component: "select", role: c.Instance, payload: map[string]any{
		"name":             instanceName(c.Instance),
		"options":          labels(wm.choices),
		"command_topic":    b.set(c.Instance),
		"command_template": enumCommandTemplate(wm.choices),
		"state_topic":      b.state,
		"value_template":   workModeStateTemplate(c.Instance, wm.choices),
	}})
}

// segments: one optimistic light per segment, disabled until the user
// enables it.
func (b *builder) segments() {
	sp := segmentPlanOf(b.p.dev)
	if sp == nil {
		return
	}
	for _, n := range sp.indexes {
		p := map[string]any{
			"name":                  "Segment " + strconv.Itoa(n+1),
			"schema":                "json",
			"command_topic":         b.cfg.Layout.SegmentSet(b.id, n),
			"optimistic":            true,
			"enabled_by_default":    false,
			"supported_color_modes": sp.modes(),
			"brightness":            sp.brightness != nil,
			"flash":                 false,
			"transition":            false,
		}
		if sp.brightness != nil {
			p["brightness_scale"] = sp.brightness.Max
		}
		b.add(&entity{component: "light", role: "segment_" + strconv.Itoa(n), payload: p})
	}
}

// sensorSpec is Home Assistant's view of a known property.
type sensorSpec struct {
	deviceClass, unit, category string
}

var sensorSpecs = map[string]sensorSpec{
	capability.InstanceSensorTemperature: {"temperature", "°C", ""},
	capability.InstanceSensorHumidity:    {"humidity", "%", ""},
	"carbonDioxideConcentration":         {"carbon_dioxide", "ppm", ""},
	"pm25":                               {"pm25", "µg/m³", ""},
	"filterLifeTime":                     {"", "%", "diagnostic"},
	"airQuality":                         {"", "", ""},
}

func (b *builder) sensor(c capability.Capability) {
	spec := sensorSpecs[c.Instance]
	p := map[string]any{
		"name":           instanceName(c.Instance),
		"state_topic":    b.state,
		"value_template": "{{ " + stateGet(c.Instance) + " }}",
		"state_class":    "measurement",
	}
	if spec.deviceClass != "" {
		p["device_class"] = spec.deviceClass
	}
	if spec.unit != "" {
		p["unit_of_measurement"] = spec.unit
	}
	if spec.category != "" {
		p["entity_category"] = spec.category
	}
	b.add(&entity{component: "sensor", role: c.Instance, payload: p})
}

// event: an event entity per event capability. Every event of the device
// arrives on one topic (EventPayload); the template keeps this instance's.
func (b *builder) event(c capability.Capability) {
	if c.EventState == nil {
		return
	}
	used := map[string]bool{}
	var types []any
	for _, o := range c.EventState.Options {
		if n := strings.TrimSpace(o.Name); n != "" && !used[n] {
			used[n] = true
			types = append(types, n)
		}
	}
	if len(types) == 0 {
		return
	}
	b.add(&entity{component: "event", role: c.Instance, payload: map[string]any{
		"name":           instanceName(c.Instance),
		"state_topic":    b.cfg.Layout.Event(b.id),
		"event_types":    types,
		"value_template": "{{ value if value_json.get(\"instance\") == " + jstr(c.Instance) + " else \"\" }}",
	}})
}

// generic maps what no rule above claims by its definition: ENUM → select,
// INTEGER with a range → number. Scene lists of devices without a light
// land here too, as selects.
func (b *builder) generic(c capability.Capability) {
	if c.Parameters == nil {
		return
	}
	switch c.Parameters.DataType {
	case capability.DataEnum:
		cs := enumChoices(c.Parameters.Options)
		if len(cs) == 0 {
			return
		}
		b.add(&entity{component: "select", role: c.Instance, payload: map[string]any{
			"name":             instanceName(c.Instance),
			"options":          labels(cs),
			"command_topic":    b.set(c.Instance),
			"command_template": enumCommandTemplate(cs),
			"state_topic":      b.state,
			"value_template":   enumStateTemplate(c.Instance, cs),
		}})
	case capability.DataInteger:
		r := intRange(c)
		if r == nil {
			return
		}
		p := map[string]any{
			"name":           instanceName(c.Instance),
			"command_topic":  b.set(c.Instance),
			"state_topic":    b.state,
			"value_template": "{{ " + stateGet(c.Instance) + " }}",
			"min":            r.Min,
			"max":            r.Max,
			"step":           r.Step(),
			"mode":           "auto",
		}
		u := capability.UnitSymbol(c.Parameters.Unit)
		if c.Instance == capability.InstanceColorTemperatureK {
			u = "K"
		}
		if u != "" {
			p["unit_of_measurement"] = u
		}
		if u == "%" {
			p["mode"] = "slider"
		}
		if c.Instance == capability.InstanceColorRGB {
			p["mode"] = "box"
		}
		b.add(&entity{component: "number", role: c.Instance, payload: p})
	}
}

// connectivity: whether the cloud reports the device online. It stays
// available while the device is offline, so it can say so.
func (b *builder) connectivity() {
	b.add(&entity{component: "binary_sensor", role: roleOnline, bridgeOnly: true, payload: map[string]any{
		"name":            "Connectivity",
		"device_class":    "connectivity",
		"entity_category": "diagnostic",
		"state_topic":     b.state,
		"value_template": "{% set v = " + stateGet(capability.InstanceOnline) + " %}" +
			"{{ \"None\" if v is none else (\"ON\" if v else \"OFF\") }}",
		"payload_on":  "ON",
		"payload_off": "OFF",
	}})
}

// operate adds the device's poll interval and "Read now" controls. They are
// disabled by default because most users never need them, and stay
// available while the device is offline because a read is how to find out
// it is back.
func (b *builder) operate() {
	l := b.cfg.Layout
	id := jstr(b.id)
	b.add(&entity{component: "number", role: "poll_interval", bridgeOnly: true, payload: pollNumber(map[string]any{
		"name":               "Poll interval",
		"enabled_by_default": false,
		"state_topic":        l.BridgeInfo(),
		"value_template": "{% set ds = value_json.get(\"devices\") %}" +
			"{% set d = ds.get(" + id + ") if ds is mapping else none %}" +
			"{% set own = d.get(\"poll_interval_seconds\") if d is mapping else none %}" +
			"{% set p = value_json.get(\"poll\") %}" +
			"{% set common = p.get(\"interval_seconds\") if p is mapping else none %}" +
			"{{ own if own else common }}",
		"command_topic":    l.BridgeDeviceOptions(),
		"command_template": "{{ {\"device\": " + id + ", \"options\": {\"poll_interval\": " + pollValue + "}} | tojson }}",
	})})
	b.add(&entity{component: "button", role: "read_now", bridgeOnly: true, payload: map[string]any{
		"name":               "Read now",
		"enabled_by_default": false,
		"command_topic":      l.Get(b.id),
		"payload_press":      "{}",
		"entity_category":    "diagnostic",
		"icon":               "mdi:download",
	}})
}
