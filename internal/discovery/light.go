package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"cloud2mqtt/internal/capability"
)

// Colour temperature is in mireds, because Home Assistant 2025.1 takes
// kelvin for mireds. DecodeLight also takes kelvin from other publishers:
// no light reaches 1000 K or 1000 mireds, so a larger value is kelvin.
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
		// With the cloud's maximum as the scale, Home Assistant's brightness is
		// the cloud value itself.
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

// LightState projects a device's values onto the JSON state of its Home
// Assistant light; ok is false when the device has no light. Offline, the
// state is unknown. The colour mode is color_temp while the colour
// temperature is above zero, because the cloud reports 0 while a colour
// shows. The cloud never reports the active scene, so the effect is the
// last one the bridge set.
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

// DecodeLight turns a Home Assistant JSON light command into the controls
// to send: power on, then brightness, colour or colour temperature, then
// the effect; "OFF" is power off alone. Values are rounded to the device's
// step. A value out of range refuses the whole command, because Home
// Assistant never sends one and whoever did should be told the range
// rather than have it changed quietly. Transition and flash are ignored.
func DecodeLight(dev capability.Device, payload []byte) ([]Command, error) {
	l := lightOf(dev)
	if l == nil {
		return nil, fmt.Errorf("this device has no light: it has no %s or colour capability", capability.InstancePower)
	}
	c, err := parseLightCommand(payload)
	if err != nil {
		return nil, err
	}
	var out []Command
	if c.State != nil {
		switch strings.ToUpper(strings.TrimSpace(*c.State)) {
		case "OFF":
			return []Command{{Instance: l.power, Value: int64(0)}}, nil
		case "ON":
			out = append(out, Command{Instance: l.power, Value: int64(1)})
		default:
			return nil, fmt.Errorf("state %q is neither ON nor OFF", *c.State)
		}
	}
	if c.Brightness != nil {
		if l.brightness == nil {
			return nil, errors.New("the device has no brightness; leave it out")
		}
		v, err := number(*c.Brightness, "brightness")
		if err != nil {
			return nil, err
		}
		b, err := rangeValue(dev, capability.InstanceBrightness, v, *l.brightness, "")
		if err != nil {
			return nil, err
		}
		out = append(out, Command{Instance: capability.InstanceBrightness, Value: b})
	}
	switch {
	case c.Color != nil:
		if !l.rgb {
			return nil, errors.New("the device has no colour; leave \"color\" out")
		}
		rgb, err := rgbOf(*c.Color)
		if err != nil {
			return nil, err
		}
		out = append(out, Command{Instance: capability.InstanceColorRGB, Value: rgb})
	case c.ColorTemp != nil:
		if l.ct == nil {
			return nil, errors.New("the device has no colour temperature; leave \"color_temp\" out")
		}
		v, err := number(*c.ColorTemp, "color_temp")
		if err != nil || v <= 0 {
			return nil, errors.New("color_temp must be a positive number of kelvin or mireds")
		}
		shown := ""
		if v <= miredKelvinSplit {
			shown = strconv.FormatFloat(v, 'f', -1, 64) + " mireds"
			v = kelvinIn(v, *l.ct)
		}
		k, err := rangeValue(dev, capability.InstanceColorTemperatureK, v, *l.ct, shown)
		if err != nil {
			return nil, err
		}
		out = append(out, Command{Instance: capability.InstanceColorTemperatureK, Value: k})
	}
	if c.Effect != nil {
		e, ok := findEffect(l.effects, *c.Effect)
		if !ok {
			return nil, fmt.Errorf("unknown effect %q; use a name of the light's effect list", *c.Effect)
		}
		out = append(out, Command{Instance: e.instance, Value: e.value})
	}
	if len(out) == 0 {
		return nil, errors.New("nothing to do; send \"state\", \"brightness\", \"color\", \"color_temp\" or \"effect\"")
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
// stand for an interval of kelvin, and its roundest value is most likely
// what the user chose; fractional mireds are converted exactly.
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

// kelvinIn is kelvinOfMireds kept within r: when the mireds' interval
// reaches into r but its roundest kelvin lies outside, r's bound is meant.
func kelvinIn(m float64, r capability.Range) float64 {
	k := kelvinOfMireds(m)
	if m != math.Trunc(m) {
		return k
	}
	lo, hi := 1e6/(m+1), 1e6/m
	switch {
	case k < float64(r.Min) && hi >= float64(r.Min):
		return float64(r.Min)
	case k > float64(r.Max) && lo < float64(r.Max):
		return float64(r.Max)
	}
	return k
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

// rangeValue is v, a number Home Assistant sent, on the nearest step of r.
// Outside r it is refused in set/<instance>'s words, naming what was sent
// when v was converted from it.
func rangeValue(dev capability.Device, instance string, v float64, r capability.Range, shown string) (any, error) {
	if k, ok := stepped(v, r); ok {
		return k, nil
	}
	n := math.Round(v)
	c, _ := dev.Capability(instance)
	if shown == "" {
		if err := capability.Validate(c, capability.NormalizeValue(n)); err != nil {
			return nil, err
		}
	}
	unit := ""
	if c.Parameters != nil {
		unit = c.Parameters.Unit
	}
	if unit == "" && instance == capability.InstanceColorTemperatureK {
		unit = "K"
	}
	if err := capability.RangeError(instance, "", shown, int64(math.Max(-1e15, math.Min(1e15, n))), r, unit); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%s %v is outside %d..%d", instance, v, r.Min, r.Max) // not reached: n is outside r
}

// stepped is v on the nearest step of r; ok is false when v is outside r.
func stepped(v float64, r capability.Range) (n int64, ok bool) {
	v = math.Round(v)
	if v < float64(r.Min) || v > float64(r.Max) {
		return 0, false
	}
	step := float64(r.Step())
	v = math.Round((v-float64(r.Min))/step)*step + float64(r.Min)
	if v > float64(r.Max) {
		v -= step
	}
	return int64(v), true
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
		v := math.Round(f)
		if v < -1e15 || v > 1e15 {
			return 0, fmt.Errorf("color.%s must be a number 0..255", k)
		}
		if err := capability.RangeError("", "color."+k, "", int64(v), capability.Range{Min: 0, Max: 255}, ""); err != nil {
			return 0, err
		}
		rgb = rgb<<8 | int64(v)
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
// into segment colour and brightness controls. Segments have no power of
// their own, so "OFF" is brightness 0 (or black) and a bare "ON" full
// brightness (or white).
func DecodeSegment(dev capability.Device, segment int, payload []byte) ([]Command, error) {
	sp := segmentPlanOf(dev)
	if sp == nil {
		return nil, errors.New("this device has no segments")
	}
	if !accepts(sp.rgb, segment) && !accepts(sp.bright, segment) {
		return nil, fmt.Errorf("the device has no segment %d; its segments are %v", segment, sp.indexes)
	}
	c, err := parseLightCommand(payload)
	if err != nil {
		return nil, fmt.Errorf("segment %d: %w", segment, err)
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
			return nil, fmt.Errorf("segment %d: state %q is neither ON nor OFF", segment, *c.State)
		}
	}
	var out []Command
	if c.Color != nil {
		if !canRGB {
			return nil, fmt.Errorf("segment %d has no colour; leave \"color\" out", segment)
		}
		rgb, err := rgbOf(*c.Color)
		if err != nil {
			return nil, err
		}
		out = append(out, colour(rgb))
	}
	if c.Brightness != nil {
		if !canBright {
			return nil, fmt.Errorf("segment %d has no brightness; leave it out", segment)
		}
		v, err := number(*c.Brightness, "brightness")
		if err != nil {
			return nil, err
		}
		n, err := segmentBrightness(*sp.bright, *sp.brightness, v, seg)
		if err != nil {
			return nil, err
		}
		out = append(out, bright(n))
	}
	if len(out) == 0 && c.State != nil {
		if canBright {
			out = append(out, bright(int64(sp.brightness.Max)))
		} else {
			out = append(out, colour(0xFFFFFF))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("segment %d: nothing to do; send \"state\", \"brightness\" or \"color\"", segment)
	}
	return out, nil
}

// segmentBrightness is v on the nearest step of r, or refused as
// set/segmentedBrightness refuses it.
func segmentBrightness(c capability.Capability, r capability.Range, v float64, seg []any) (int64, error) {
	if n, ok := stepped(v, r); ok {
		return n, nil
	}
	err := capability.Validate(c, map[string]any{"segment": seg, "brightness": capability.NormalizeValue(math.Round(v))})
	if err == nil {
		err = fmt.Errorf("brightness %v is outside %d..%d", v, r.Min, r.Max) // not reached: n is outside r
	}
	return 0, err
}
