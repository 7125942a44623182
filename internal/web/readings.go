package web

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"cloud2mqtt/internal/capability"
)

// Reading is one current value as a person reads it: a colour as hex beside a
// swatch, a level with its unit, a mode by its name. Scripts use DeviceDetail.Values.
type Reading struct {
	Instance string `json:"instance"`
	// Text is the value in words and units: "#FF8800", "21.5 °C",
	// "Sleep", "gearMode · Low", "on".
	Text string `json:"text"`
	// Color is the colour the value sets ("#FF8800"), for a swatch; ""
	// when it sets none.
	Color string `json:"color,omitempty"`
}

// readings are the values as a person reads them, by instance.
func readings(caps []capability.Capability, values map[string]any) []Reading {
	out := make([]Reading, 0, len(values))
	for _, in := range slices.Sorted(maps.Keys(values)) {
		var c capability.Capability
		if i := slices.IndexFunc(caps, func(c capability.Capability) bool { return c.Instance == in }); i >= 0 {
			c = caps[i]
		}
		out = append(out, reading(c, in, values[in]))
	}
	return out
}

// sensorUnits are the units Home Assistant shows the known sensor readings in,
// so that the page and Home Assistant read alike.
var sensorUnits = map[string]string{
	capability.InstanceSensorTemperature: "°C",
	capability.InstanceSensorHumidity:    "%",
	"carbonDioxideConcentration":         "ppm",
	"pm25":                               "µg/m³",
	"filterLifeTime":                     "%",
}

// reading is one value as a person reads it, by its capability c (the
// zero Capability when the device lists none for the instance).
func reading(c capability.Capability, instance string, v any) Reading {
	r := Reading{Instance: instance}
	p := c.Parameters
	if p == nil {
		p = &capability.Parameters{}
	}
	typ := capability.NormalizeType(c.Type)
	switch {
	case v == nil:
		r.Text = "–"
	case instance == capability.InstanceColorTemperatureK:
		r.Text = withUnit(v, "K")
	case instance == capability.InstanceColorRGB || typ == capability.TypeColorSetting:
		r.Text, r.Color = colour(v)
	case typ == capability.TypeTemperature:
		r.Text = temperature(c, v)
	case typ == capability.TypeWorkMode:
		r.Text = workMode(p, v)
	case typ == capability.TypeMusicSetting:
		r.Text, r.Color = music(p, v)
	case typ == capability.TypeOnline || instance == capability.InstanceOnline:
		r.Text = map[bool]string{true: "online", false: "offline"}[v == true]
	case typ == capability.TypeProperty || c.Type == "":
		r.Text = withUnit(v, sensorUnits[instance])
	default:
		if name, ok := optionName(p.Options, v); ok {
			r.Text = name
		} else if (typ == capability.TypeOnOff || typ == capability.TypeToggle) && (v == int64(0) || v == int64(1)) {
			r.Text = map[bool]string{true: "on", false: "off"}[v == int64(1)]
		} else {
			r.Text = withUnit(v, capability.UnitSymbol(p.Unit))
		}
	}
	return r
}

// colour is an RGB value (0 to 16777215) as its hex code, twice: the text
// and the swatch's colour; another value is shown as it is, without one.
func colour(v any) (text, swatch string) {
	n, ok := v.(int64)
	if !ok || n < 0 || n > 0xFFFFFF {
		return plain(v), ""
	}
	hex := fmt.Sprintf("#%06X", n)
	return hex, hex
}

// temperature is a temperature_setting's value, {"temperature":22,
// "unit":"Celsius","autoStop":0}: "22 °C · Maintain".
func temperature(c capability.Capability, v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return plain(v)
	}
	unit, _ := m["unit"].(string)
	if unit == "" {
		unit = capability.TemperatureUnit(c)
	}
	if unit == "" {
		unit = "Celsius" // the definition's default where it names none
	}
	parts := []string{withUnit(m["temperature"], capability.UnitSymbol(unit))}
	if f, ok := c.Parameters.Field("autoStop"); ok {
		if name, ok := optionName(f.Options, m["autoStop"]); ok {
			parts = append(parts, name)
		}
	}
	return strings.Join(parts, " · ")
}

// workMode writes a work_mode value by the definition's names: the mode, and
// its value where it has some ("gearMode · Low", "Sleep").
func workMode(p *capability.Parameters, v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return plain(v)
	}
	wf, _ := p.Field("workMode")
	mode, ok := optionName(wf.Options, m["workMode"])
	if !ok {
		mode = plain(m["workMode"])
	}
	mv, has := m["modeValue"]
	vf, _ := p.Field("modeValue")
	i := slices.IndexFunc(vf.Options, func(o capability.Option) bool { return o.Name == mode })
	switch {
	case !has || mv == nil:
		return mode
	case i >= 0 && len(vf.Options[i].Options) == 0:
		return mode // a mode without values: its modeValue is a placeholder
	case i >= 0:
		if name, ok := optionName(vf.Options[i].Options, mv); ok {
			return mode + " · " + name
		}
	}
	return mode + " · " + plain(mv)
}

// music writes a music_setting value ("Energic · sensitivity 80 % · #0000FF")
// and returns its colour for a swatch.
func music(p *capability.Parameters, v any) (text, swatch string) {
	m, ok := v.(map[string]any)
	if !ok {
		return plain(v), ""
	}
	f, _ := p.Field("musicMode")
	mode, ok := optionName(f.Options, m["musicMode"])
	if !ok {
		mode = plain(m["musicMode"])
	}
	parts := []string{mode}
	if s, ok := m["sensitivity"]; ok {
		parts = append(parts, "sensitivity "+withUnit(s, "%"))
	}
	if m["autoColor"] == int64(1) {
		parts = append(parts, "automatic colour")
	} else if rgb, ok := m["rgb"]; ok {
		text, swatch = colour(rgb)
		parts = append(parts, text)
	}
	return strings.Join(parts, " · "), swatch
}

// optionName is the name of the option whose value is v.
func optionName(opts []capability.Option, v any) (string, bool) {
	for _, o := range opts {
		if o.Name != "" && capability.Equal(o.Value, v) {
			return o.Name, true
		}
	}
	return "", false
}

// withUnit is a number with its unit ("21.5 °C"); a value that is no
// number is shown as it is, without it.
func withUnit(v any, unit string) string {
	switch v.(type) {
	case int64, float64:
		if unit != "" {
			return plain(v) + " " + unit
		}
	}
	return plain(v)
}

// plain is a value as it is: a number in digits, text as text, anything
// else as JSON.
func plain(v any) string {
	switch v := v.(type) {
	case nil:
		return "–"
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		if v > -1e15 && v < 1e15 {
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		if v == "" {
			return "(empty)"
		}
		return v
	case bool:
		return map[bool]string{true: "yes", false: "no"}[v]
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
