package capability

// temperature_setting is a struct of a temperature, its unit and autoStop;
// a plain number or "22C" is taken as the temperature. A temperature in the
// other unit than the device's range is converted and rounded before it is
// checked, so "90F" to a kettle ranged 40–100 °C is 32 °C, below its minimum.

import (
	"math"
	"strings"
)

var temperatureRules = typeRules{
	instances: []string{InstanceTargetTemperature, InstanceSliderTemperature},
	scalar:    valueChecker.temperatureScalar,
	unset:     temperatureUnset,
	units:     temperatureUnits,
	toDevice:  temperatureToDevice,
}

// The members of a temperature_setting value.
const (
	memberTemperature = "temperature"
	memberUnit        = "unit"
)

// tempUnit is a temperature unit the spec names.
type tempUnit uint8

const (
	unitUnknown tempUnit = iota
	unitCelsius
	unitFahrenheit
)

func (u tempUnit) String() string {
	switch u {
	case unitCelsius:
		return "Celsius"
	case unitFahrenheit:
		return "Fahrenheit"
	}
	return ""
}

// symbol is the unit in messages: °C, °F.
func (u tempUnit) symbol() string {
	switch u {
	case unitCelsius:
		return "°C"
	case unitFahrenheit:
		return "°F"
	}
	return ""
}

// tempUnitOf reads a unit as a definition or a person writes it:
// "Celsius", "unit.fahrenheit", "°F", "c".
func tempUnitOf(s string) tempUnit {
	k := strings.ToLower(strings.TrimSpace(s))
	k = strings.TrimPrefix(k, "unit.")
	k = strings.TrimPrefix(k, "°")
	switch k {
	case "c", "celsius":
		return unitCelsius
	case "f", "fahrenheit":
		return unitFahrenheit
	}
	return unitUnknown
}

// optionUnit is the unit an option of the unit member stands for: by its
// value when that is a string, else by its name.
func optionUnit(o Option) tempUnit {
	if s, ok := o.Value.(string); ok {
		if u := tempUnitOf(s); u != unitUnknown {
			return u
		}
	}
	return tempUnitOf(o.Name)
}

// unitAccepted reports whether the unit member takes u: one of its
// options is u, or it lists none (or there is no unit member).
func unitAccepted(fields []Field, u tempUnit) bool {
	uf, ok := fieldNamed(fields, memberUnit)
	if !ok || len(uf.Options) == 0 {
		return true
	}
	for _, o := range uf.Options {
		if optionUnit(o) == u {
			return true
		}
	}
	return false
}

// rangeUnit is the unit the temperature's range is in, as far as the
// definition states it, and one the unit member accepts; Celsius is the
// spec's default. unitUnknown when the unit member takes neither unit.
func rangeUnit(fields []Field) tempUnit {
	var stated []tempUnit
	if tf, ok := fieldNamed(fields, memberTemperature); ok {
		stated = append(stated, tempUnitOf(tf.Unit))
	}
	if uf, ok := fieldNamed(fields, memberUnit); ok {
		if s, ok := uf.DefaultValue.(string); ok {
			stated = append(stated, tempUnitOf(s))
		}
		if len(uf.Options) == 1 {
			stated = append(stated, optionUnit(uf.Options[0]))
		}
	}
	stated = append(stated, unitCelsius, unitFahrenheit)
	for _, u := range stated {
		if u != unitUnknown && unitAccepted(fields, u) {
			return u
		}
	}
	return unitUnknown
}

// TemperatureUnit is the unit of a temperature_setting's range, "Celsius"
// or "Fahrenheit", which is what a bare number means; "" if there is none.
func TemperatureUnit(c Capability) string {
	if c.Parameters == nil || c.Parameters.DataType != DataStruct {
		return ""
	}
	if _, ok := c.Parameters.Field(memberTemperature); !ok {
		return ""
	}
	return rangeUnit(c.Parameters.Fields).String()
}

// unitValue is the unit member's value for u: its option's value, or the
// unit's name when the member lists no options.
func unitValue(fields []Field, u tempUnit) any {
	if uf, ok := fieldNamed(fields, memberUnit); ok {
		for _, o := range uf.Options {
			if optionUnit(o) == u && o.Value != nil {
				return cloneValue(o.Value)
			}
		}
	}
	return u.String()
}

// sentUnit is the unit a value's unit member names (an option value, or
// the unit's name), unitUnknown when it names none the member takes.
func sentUnit(fields []Field, v any) tempUnit {
	if uf, ok := fieldNamed(fields, memberUnit); ok && len(uf.Options) > 0 {
		for _, o := range uf.Options {
			if Equal(canonicalNumber(o.Value), canonicalNumber(v)) {
				return optionUnit(o)
			}
		}
		return unitUnknown
	}
	s, _ := v.(string)
	return tempUnitOf(s)
}

// temperatureUnits names the unit of the temperature's range, for
// messages.
func temperatureUnits(fields []Field) (member, unit string) {
	return memberTemperature, rangeUnit(fields).symbol()
}

// temperatureToDevice converts a temperature sent in the other unit into
// the range's, rounded onto its steps; conv names what was sent, for
// messages. Anything else is returned as it is for Validate to judge.
func temperatureToDevice(fields []Field, v any) (any, *conversion) {
	m, ok := v.(map[string]any)
	if !ok {
		return v, nil
	}
	want := rangeUnit(fields)
	uv, hasUnit := m[memberUnit]
	if want == unitUnknown || !hasUnit {
		return v, nil
	}
	from := sentUnit(fields, uv)
	if from == unitUnknown || from == want {
		return v, nil
	}
	var x float64
	switch t := m[memberTemperature].(type) {
	case int64:
		x = float64(t)
	case float64:
		x = t
	default:
		return v, nil
	}
	var r *Range
	if tf, ok := fieldNamed(fields, memberTemperature); ok {
		r = tf.Range
	}
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[k] = e
	}
	out[memberTemperature] = onSteps(convertTemperature(x, from, want), r)
	out[memberUnit] = unitValue(fields, want)
	return out, &conversion{field: memberTemperature, sent: showValue(m[memberTemperature]) + " " + from.symbol()}
}

// convertTemperature converts x from one unit into the other.
func convertTemperature(x float64, from, to tempUnit) float64 {
	switch {
	case from == to:
		return x
	case to == unitFahrenheit:
		x = x*9/5 + 32
	default:
		x = (x - 32) * 5 / 9
	}
	if math.IsInf(x, 0) { // past the largest float: as large as there is
		x = math.Copysign(math.MaxFloat64, x)
	}
	return x
}

// onSteps rounds x to the nearest step of r counted from its minimum (to a
// whole number without a range), in normalised form.
func onSteps(x float64, r *Range) any {
	if r == nil {
		return normalizeDecoded(math.Round(x))
	}
	step, base := float64(r.Step()), float64(r.Min)
	return normalizeDecoded(math.Round((x-base)/step)*step + base)
}

// temperatureScalar turns 22, "22", "22C" or "72 °F" into a
// temperature_setting object.
func (ck valueChecker) temperatureScalar(fields []Field, v any) (any, error) {
	str, isString := v.(string)
	if !isString {
		return map[string]any{memberTemperature: v}, nil
	}
	str = strings.TrimSpace(str)
	if isDecimalNumber(str) {
		return map[string]any{memberTemperature: str}, nil
	}
	i := len(str)
	for i > 0 && !isNumberByte(str[i-1]) {
		i--
	}
	num, unit := strings.TrimSpace(str[:i]), strings.TrimSpace(str[i:])
	if num == "" || !isDecimalNumber(num) {
		unit := ""
		if u := rangeUnit(fields); u != unitUnknown {
			unit = " (in the device's unit, " + u.symbol() + ")"
		}
		return nil, ck.fail(CategoryFormat, "", "%q is not a temperature; send a number like 22%s, \"22C\", \"72F\" or an object {\"temperature\":22,\"unit\":\"Celsius\"}",
			str, unit)
	}
	m := map[string]any{memberTemperature: num}
	if unit != "" {
		m[memberUnit] = unit
	}
	return m, nil
}

func isNumberByte(b byte) bool { return b >= '0' && b <= '9' || b == '.' }

// unitOption matches temperature units written short: "C", "°F", "celsius".
func unitOption(field string, opts []Option, str string) (Option, bool) {
	if field != memberUnit && !strings.HasSuffix(field, "."+memberUnit) {
		return Option{}, false
	}
	u := tempUnitOf(str)
	if u == unitUnknown {
		return Option{}, false
	}
	for _, o := range opts {
		if optionUnit(o) == u {
			return o, true
		}
	}
	return Option{}, false
}

// temperatureUnset gives an omitted unit the range's, since a bare number
// means the device's unit, and an omitted autoStop 0.
func temperatureUnset(fields []Field, f Field, m map[string]any) bool {
	switch f.FieldName {
	case memberUnit:
		if u := rangeUnit(fields); u != unitUnknown {
			m[f.FieldName] = unitValue(fields, u)
			return true
		}
	case "autoStop":
		if f.DefaultValue == nil {
			m[f.FieldName] = int64(0)
			return true
		}
	}
	return false
}

// fieldNamed finds a struct member's definition by its exact name.
func fieldNamed(fields []Field, name string) (Field, bool) {
	for _, f := range fields {
		if f.FieldName == name {
			return f, true
		}
	}
	return Field{}, false
}
