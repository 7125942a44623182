package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"cloud2mqtt/internal/capability"
)

// Colour temperature scheme: mireds, the unit every Home Assistant release
// reads in the JSON schema when a config does not set color_temp_kelvin
// (2025.1 does not know that flag and would take kelvin for mireds). Light
// configs carry min/max_mireds (rounded inwards, so every mired value Home
// Assistant may send is inside the device's range).
//   - LightState reports color_temp in mireds with three decimals, chosen so
//     that Home Assistant's conversion (floor(1e6/mireds)) gives back the
//     device's exact kelvin.
//   - Home Assistant sends whole mireds, floor(1e6/K) of the kelvin the user
//     chose; DecodeLight picks the roundest kelvin that gives those mireds
//     (4000 K → 250 → 4000 K, 2700 K → 370 → 2700 K).
//
// DecodeLight also takes kelvin from other publishers: a value above
// miredKelvinSplit is kelvin (no light reaches 1000 K, 1000 mireds).
const miredKelvinSplit = 1000

// Command is one control to send: the instance and its value, in cloud form
// (or a friendly form capability.Decode accepts).
type Command struct {
	Instance string
	Value    any
}

func lightEntity(cfg Config, id string, l *lightPlan) *entity {
	p := map[string]any{
		"name":                  l.name,
		"schema":                "json",
		"command_topic":         cfg.Layout.LightSet(id),
		"state_topic":           cfg.Layout.Light(id),
		"supported_color_modes": l.modes(),
		"brightness":            l.brightness != nil,
		"flash":                 false,
		"transition":            false,
	}
	if l.brightness != nil {
		// Home Assistant sends and reads brightness in 0..scale; the cloud's
		// maximum makes it the cloud value itself (DecodeLight clamps to the
		// minimum, which Home Assistant does not know).
		p["brightness_scale"] = l.brightness.Max
	}
	if r := l.ct; r != nil {
		p["min_mireds"] = int(math.Ceil(1e6 / float64(r.Max)))
		p["max_mireds"] = int(math.Floor(1e6 / float64(r.Min)))
	}
	if len(l.effects) > 0 {
		p["effect"] = true
		list := make([]any, len(l.effects))
		for i, e := range l.effects {
			list[i] = e.name
		}
		p["effect_list"] = list
	}
	return &entity{component: "light", role: l.role, payload: p}
}

// LightState projects a device's values (cloud form, keyed by instance) onto
// the JSON state of its Home Assistant light (<base>/<id>/light): state,
// brightness, color_mode, color, color_temp (mireds, see miredsOf) and
// effect. ok is false
// when the device has no JSON light. Offline, the values are historical and
// the state is unknown ({"state": null}).
//
// The colour mode is color_temp when the device reports a colour
// temperature above zero (the cloud reports 0 while a colour is shown), else
// rgb. The active scene is never reported by the cloud; the effect is the
// scene found in values (the bridge's optimistic record of the last one
// set) and null otherwise.
func LightState(dev capability.Device, values map[string]any, online bool) ([]byte, bool) {
	l := lightOf(dev)
	if l == nil {
		return nil, false
	}
	st := map[string]any{"state": nil}
	if !online {
		return marshal(st), true
	}
	switch toInt(values[l.power]) {
	case 1:
		st["state"] = "ON"
	case 0:
		if _, ok := values[l.power]; ok {
			st["state"] = "OFF"
		}
	}
	if l.brightness != nil {
		if v, ok := values[capability.InstanceBrightness].(int64); ok {
			st["brightness"] = v
		}
	}
	modes := l.modes()
	var mode string
	if len(modes) == 1 {
		mode = modes[0]
	}
	if l.ct != nil {
		if k, ok := values[capability.InstanceColorTemperatureK].(int64); ok && k > 0 {
			mode = "color_temp"
			st["color_temp"] = miredsOf(k)
		} else if mode == "color_temp" {
			mode = ""
		}
	}
	if l.rgb {
		if v, ok := values[capability.InstanceColorRGB].(int64); ok && v >= 0 && v <= 0xFFFFFF {
			st["color"] = map[string]any{"r": v >> 16 & 0xFF, "g": v >> 8 & 0xFF, "b": v & 0xFF}
			if mode != "color_temp" {
				mode = "rgb"
			}
		}
	}
	if mode != "" {
		st["color_mode"] = mode
	}
	if len(l.effects) > 0 {
		st["effect"] = nil
	scan:
		for _, inst := range []string{capability.InstanceLightScene, capability.InstanceDIYScene, capability.InstanceSnapshot} {
			v, ok := values[inst]
			if !ok {
				continue
			}
			for _, e := range l.effects {
				if e.instance == inst && capability.Equal(e.value, v) {
					st["effect"] = e.name
					break scan
				}
			}
		}
	}
	return marshal(st), true
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	case bool:
		if x {
			return 1
		}
		return 0
	}
	return -1
}

// lightCommand is Home Assistant's JSON light command. Numbers stay
// json.Number so that fractions and huge values are our error, not a panic.
type lightCommand struct {
	State      *string          `json:"state"`
	Brightness *json.Number     `json:"brightness"`
	Color      *map[string]any  `json:"color"`
	ColorTemp  *json.Number     `json:"color_temp"`
	Effect     *string          `json:"effect"`
	Transition *json.Number     `json:"transition"`
	Flash      *json.RawMessage `json:"flash"`
}

func parseLightCommand(payload []byte) (lightCommand, error) {
	var c lightCommand
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("payload is not a JSON light command (%w); send an object like {\"state\":\"ON\",\"brightness\":40}", err)
	}
	return c, nil
}

// DecodeLight turns a Home Assistant JSON light command into the controls to
// send, in order: power on first (when the command says ON), then
// brightness, colour or colour temperature, then the effect. "OFF" is
// power off alone, whatever else the command holds. Brightness and colour
// temperature are clamped to the device's range and rounded to its step;
// colour temperature is accepted in kelvin or mireds (see miredKelvinSplit).
// Transition and flash are ignored: the cloud has neither.
func DecodeLight(dev capability.Device, payload []byte) ([]Command, error) {
	l := lightOf(dev)
	if l == nil {
		return nil, fmt.Errorf("discovery: %s has no light; it has no %s or colour capability", dev, capability.InstancePower)
	}
	c, err := parseLightCommand(payload)
	if err != nil {
		return nil, fmt.Errorf("discovery: light command for %s: %w", dev, err)
	}
	var out []Command
	if c.State != nil {
		switch strings.ToUpper(strings.TrimSpace(*c.State)) {
		case "OFF":
			return []Command{{Instance: l.power, Value: int64(0)}}, nil
		case "ON":
			out = append(out, Command{Instance: l.power, Value: int64(1)})
		default:
			return nil, fmt.Errorf("discovery: light command for %s: state %q is neither ON nor OFF", dev, *c.State)
		}
	}
	if c.Brightness != nil {
		if l.brightness == nil {
			return nil, fmt.Errorf("discovery: light command for %s: the device has no brightness; leave it out", dev)
		}
		v, err := number(*c.Brightness, "brightness")
		if err != nil {
			return nil, fmt.Errorf("discovery: light command for %s: %w", dev, err)
		}
		out = append(out, Command{Instance: capability.InstanceBrightness, Value: clampStep(v, *l.brightness)})
	}
	switch {
	case c.Color != nil:
		if !l.rgb {
			return nil, fmt.Errorf("discovery: light command for %s: the device has no colour; leave \"color\" out", dev)
		}
		rgb, err := rgbOf(*c.Color)
		if err != nil {
			return nil, fmt.Errorf("discovery: light command for %s: %w", dev, err)
		}
		out = append(out, Command{Instance: capability.InstanceColorRGB, Value: rgb})
	case c.ColorTemp != nil:
		if l.ct == nil {
			return nil, fmt.Errorf("discovery: light command for %s: the device has no colour temperature; leave \"color_temp\" out", dev)
		}
		v, err := number(*c.ColorTemp, "color_temp")
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("discovery: light command for %s: color_temp must be a positive number of kelvin or mireds", dev)
		}
		if v <= miredKelvinSplit {
			v = kelvinOfMireds(v)
		}
		out = append(out, Command{Instance: capability.InstanceColorTemperatureK, Value: clampStep(v, *l.ct)})
	}
	if c.Effect != nil {
		e, ok := findEffect(l.effects, *c.Effect)
		if !ok {
			return nil, fmt.Errorf("discovery: light command for %s: unknown effect %q; use a name of the light's effect list", dev, *c.Effect)
		}
		out = append(out, Command{Instance: e.instance, Value: e.value})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("discovery: light command for %s: nothing to do; send \"state\", \"brightness\", \"color\", \"color_temp\" or \"effect\"", dev)
	}
	return out, nil
}

// miredsOf is the colour temperature k (kelvin) in mireds for the light
// state: 1e6/(k+0.5) with three decimals, so that Home Assistant's
// floor(1e6/mireds) is exactly k.
func miredsOf(k int64) float64 {
	return math.Round(1e9/(float64(k)+0.5)) / 1000
}

// kelvinOfMireds turns mireds from Home Assistant into kelvin. Whole mireds
// m come from floor(1e6/K), so K was in (1e6/(m+1), 1e6/m]: the result is
// the roundest kelvin of that interval (a multiple of 100, 50, 10, 5, else
// 1), which recovers what the user chose whenever that was a round number.
// Fractional mireds are converted exactly.
func kelvinOfMireds(m float64) float64 {
	if m != math.Trunc(m) {
		return 1e6 / m
	}
	lo, hi := 1e6/(m+1), 1e6/m
	for _, g := range []float64{100, 50, 10, 5, 1} {
		k := math.Floor(lo/g)*g + g // the first multiple of g above lo
		if k <= hi {
			return k
		}
	}
	return 1e6 / m
}

func findEffect(effects []effect, name string) (effect, bool) {
	for _, e := range effects {
		if e.name == name {
			return e, true
		}
	}
	n := strings.TrimSpace(name)
	for _, e := range effects {
		if strings.EqualFold(e.name, n) {
			return e, true
		}
	}
	return effect{}, false
}

func number(n json.Number, what string) (float64, error) {
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%s %q is not a number", what, n.String())
	}
	return f, nil
}

// clampStep rounds v into r: onto the step grid from the minimum, inside
// the bounds.
func clampStep(v float64, r capability.Range) int64 {
	step := float64(r.Step())
	v = math.Max(float64(r.Min), math.Min(float64(r.Max), v))
	n := math.Round((v-float64(r.Min))/step)*step + float64(r.Min)
	if n > float64(r.Max) {
		n -= step
	}
	return int64(n)
}

// rgbOf combines {"r","g","b"} (each 0..255) into the cloud's 0xRRGGBB.
func rgbOf(c map[string]any) (int64, error) {
	var rgb int64
	for _, k := range []string{"r", "g", "b"} {
		raw, ok := c[k]
		if !ok {
			return 0, fmt.Errorf("color needs r, g and b (0..255); %q is missing", k)
		}
		var f float64
		switch x := raw.(type) {
		case json.Number:
			v, err := number(x, "color."+k)
			if err != nil {
				return 0, err
			}
			f = v
		case float64:
			f = x
		default:
			return 0, fmt.Errorf("color.%s must be a number 0..255", k)
		}
		v := int64(math.Round(math.Max(0, math.Min(255, f))))
		rgb = rgb<<8 | v
	}
	return rgb, nil
}

// segmentPlan is how per-segment lights map onto segment capabilities.
type segmentPlan struct {
	indexes    []int
	rgb        *capability.Capability
	bright     *capability.Capability
	brightness *capability.Range
}

func (s *segmentPlan) modes() []string {
	if s.rgb != nil {
		return []string{"rgb"}
	}
	return []string{"brightness"}
}

func segmentPlanOf(dev capability.Device) *segmentPlan {
	sp := &segmentPlan{}
	if c, ok := dev.Capability(capability.InstanceSegmentedColorRGB); ok && c.Parameters != nil {
		if _, ok := c.Parameters.Field("rgb"); ok {
			sp.rgb = &c
		}
	}
	if c, ok := dev.Capability(capability.InstanceSegmentBrightness); ok && c.Parameters != nil {
		if f, ok := c.Parameters.Field("brightness"); ok && f.Range != nil && f.Range.Max > f.Range.Min {
			sp.bright = &c
			r := *f.Range
			sp.brightness = &r
		}
	}
	seen := map[int]bool{}
	for _, c := range []*capability.Capability{sp.rgb, sp.bright} {
		if c == nil {
			continue
		}
		for _, n := range segments(*c) {
			if !seen[n] && len(sp.indexes) < maxSegments {
				seen[n] = true
				sp.indexes = append(sp.indexes, n)
			}
		}
	}
	if len(sp.indexes) == 0 {
		return nil
	}
	return sp
}

func accepts(c *capability.Capability, segment int) bool {
	if c == nil {
		return false
	}
	for _, n := range segments(*c) {
		if n == segment {
			return true
		}
	}
	return false
}

// DecodeSegment turns a Home Assistant JSON light command for one segment
// (from <base>/<id>/segment/<n>/set) into segment controls:
// segmentedColorRgb {segment: [n], rgb} for a colour and segmentedBrightness
// {segment: [n], brightness} for a brightness. "OFF" is brightness 0 (or
// black where the device has no segment brightness); a bare "ON" is full
// brightness (or white): segments have no power of their own.
func DecodeSegment(dev capability.Device, segment int, payload []byte) ([]Command, error) {
	sp := segmentPlanOf(dev)
	if sp == nil {
		return nil, fmt.Errorf("discovery: %s has no segment capabilities", dev)
	}
	if !accepts(sp.rgb, segment) && !accepts(sp.bright, segment) {
		return nil, fmt.Errorf("discovery: %s has no segment %d; segments are %v", dev, segment, sp.indexes)
	}
	c, err := parseLightCommand(payload)
	if err != nil {
		return nil, fmt.Errorf("discovery: segment %d command for %s: %w", segment, dev, err)
	}
	seg := []any{int64(segment)}
	bright := func(v int64) Command {
		return Command{Instance: capability.InstanceSegmentBrightness,
			Value: map[string]any{"segment": seg, "brightness": v}}
	}
	colour := func(v int64) Command {
		return Command{Instance: capability.InstanceSegmentedColorRGB,
			Value: map[string]any{"segment": seg, "rgb": v}}
	}
	canBright := accepts(sp.bright, segment)
	canRGB := accepts(sp.rgb, segment)
	if c.State != nil {
		switch strings.ToUpper(strings.TrimSpace(*c.State)) {
		case "OFF":
			if canBright {
				return []Command{bright(int64(sp.brightness.Min))}, nil
			}
			return []Command{colour(0)}, nil
		case "ON":
		default:
			return nil, fmt.Errorf("discovery: segment %d command for %s: state %q is neither ON nor OFF", segment, dev, *c.State)
		}
	}
	var out []Command
	if c.Color != nil {
		if !canRGB {
			return nil, fmt.Errorf("discovery: segment %d of %s has no colour; leave \"color\" out", segment, dev)
		}
		rgb, err := rgbOf(*c.Color)
		if err != nil {
			return nil, fmt.Errorf("discovery: segment %d command for %s: %w", segment, dev, err)
		}
		out = append(out, colour(rgb))
	}
	if c.Brightness != nil {
		if !canBright {
			return nil, fmt.Errorf("discovery: segment %d of %s has no brightness; leave it out", segment, dev)
		}
		v, err := number(*c.Brightness, "brightness")
		if err != nil {
			return nil, fmt.Errorf("discovery: segment %d command for %s: %w", segment, dev, err)
		}
		out = append(out, bright(clampStep(v, *sp.brightness)))
	}
	if len(out) == 0 && c.State != nil {
		if canBright {
			out = append(out, bright(int64(sp.brightness.Max)))
		} else {
			out = append(out, colour(0xFFFFFF))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("discovery: segment %d command for %s: nothing to do; send \"state\", \"brightness\" or \"color\"", segment, dev)
	}
	return out, nil
}
