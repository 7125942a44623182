package capability

// temperature_setting: a struct of a temperature, its unit and autoStop. A
// plain number (or "22C", "72 °F") sent for it is the temperature, a unit
// may be written short, and an omitted unit is Celsius and autoStop 0.

import "strings"

var temperatureRules = typeRules{
	instances: []string{InstanceTargetTemperature, InstanceSliderTemperature},
	scalar:    valueChecker.temperatureScalar,
	unset:     temperatureUnset,
}

// temperatureScalar turns 22, "22", "22C" or "72 °F" into a
// temperature_setting object.
func (ck valueChecker) temperatureScalar(fields []Field, v any) (any, error) {
	str, isString := v.(string)
	if !isString {
		return map[string]any{"temperature": v}, nil
	}
	str = strings.TrimSpace(str)
	if isDecimalNumber(str) {
		return map[string]any{"temperature": str}, nil
	}
	i := len(str)
	for i > 0 && !isNumberByte(str[i-1]) {
		i--
	}
	num, unit := strings.TrimSpace(str[:i]), strings.TrimSpace(str[i:])
	if num == "" || !isDecimalNumber(num) {
		return nil, ck.fail(CategoryFormat, "", "%q is not a temperature; send a number like 22, \"22C\" or an object {\"temperature\":22,\"unit\":\"Celsius\"}", str)
	}
	m := map[string]any{"temperature": num}
	if unit != "" {
		m["unit"] = unit
	}
	return m, nil
}

func isNumberByte(b byte) bool { return b >= '0' && b <= '9' || b == '.' }

// unitOption matches temperature units written short: "C", "°F", "celsius".
func unitOption(field string, opts []Option, str string) (Option, bool) {
	if field != "unit" && !strings.HasSuffix(field, ".unit") {
		return Option{}, false
	}
	key := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(str), "°"))
	if key != "c" && key != "f" {
		return Option{}, false
	}
	for _, o := range opts {
		name, _ := o.Value.(string)
		if name == "" {
			name = o.Name
		}
		if strings.HasPrefix(strings.ToLower(name), key) {
			return o, true
		}
	}
	return Option{}, false
}

// temperatureUnset gives an omitted unit Celsius (when the options have it,
// or list none) and an omitted autoStop 0 (WithDefaults, by type only).
func temperatureUnset(f Field, m map[string]any) bool {
	switch f.FieldName {
	case "unit":
		if o, ok := optionByName(f.Options, "Celsius"); ok && o.Value != nil {
			m[f.FieldName] = cloneValue(o.Value)
		} else if len(f.Options) == 0 {
			m[f.FieldName] = "Celsius"
		}
		return true
	case "autoStop":
		m[f.FieldName] = int64(0)
		return true
	}
	return false
}
