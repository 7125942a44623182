package capability

import (
	"fmt"
	"strconv"
	"strings"
)

// Decode turns a value a person or Home Assistant sent (friendly form) or a
// value already in the cloud's form into the cloud's form, fills defaults
// (WithDefaults) and validates it (Validate). Errors are *ValueError.
//
// Friendly forms:
//   - any ENUM: an option name in any case, ignoring spaces, underscores and
//     dashes ("night light" == "NIGHT_LIGHT"), including scene names, which
//     become their {paramId,id} object; a numeric string ("40").
//   - on_off, toggles and any ENUM whose options are exactly on=1/off=0:
//     on/off, true/false, yes/no, 1/0 in any case and JSON booleans.
//   - colorRgb and every rgb struct member: "#RRGGBB", "RRGGBB", "r,g,b",
//     {"r":…,"g":…,"b":…} and [r,g,b] besides the integer.
//   - work_mode: the mode's name or value alone, or an object whose members
//     use names ({"workMode":"Manual","modeValue":3}).
//   - temperature_setting: a plain number (or "22C", "72 °F") for the
//     temperature, or an object whose unit is "celsius", "C", "F", … .
//   - music_setting: the mode's name or value alone, or an object with
//     friendly members; a missing sensitivity becomes 100 and a missing
//     required rgb white with autoColor on.
//   - segments: the segment member as a list, one integer, a string like
//     "0-4,7", or "all" for every index the definition allows.
//
// Struct member names match ignoring case, spaces and underscores.
func Decode(c Capability, input any) (any, error) {
	if !c.Controllable() {
		return nil, readOnlyError(c)
	}
	ck := valueChecker{c.Instance}
	v, err := ck.friendlyCapability(c, NormalizeValue(input))
	if err != nil {
		return nil, err
	}
	v = WithDefaults(c, v)
	if err := Validate(c, v); err != nil {
		return nil, err
	}
	return v, nil
}

// structKind tells the structs Decode has special friendly forms for.
type structKind int

const (
	structPlain structKind = iota
	structWorkMode
	structMusic
	structTemperature
)

func structKindOf(c Capability) structKind {
	switch {
	case c.Type == TypeWorkMode || c.Instance == InstanceWorkMode:
		return structWorkMode
	case c.Type == TypeMusicSetting || c.Instance == InstanceMusicMode:
		return structMusic
	case c.Type == TypeTemperature || c.Instance == InstanceTargetTemperature || c.Instance == InstanceSliderTemperature:
		return structTemperature
	}
	return structPlain
}

func (ck valueChecker) friendlyCapability(c Capability, v any) (any, error) {
	s := paramSpec(c)
	if s.dataType != DataStruct {
		return ck.friendly("", s, c.Instance == InstanceColorRGB, v)
	}
	k := structKindOf(c)
	scalar := false
	switch v.(type) {
	case string, int64, float64:
		scalar = v != ""
	}
	if scalar {
		// A scalar for a struct: the one member it stands for.
		switch k {
		case structWorkMode:
			if f, ok := primaryEnum(s.fields, InstanceWorkMode); ok {
				v = map[string]any{f.FieldName: v}
			}
		case structMusic:
			if f, ok := primaryEnum(s.fields, InstanceMusicMode); ok {
				v = map[string]any{f.FieldName: v}
			}
		case structTemperature:
			m, err := ck.temperatureScalar(s.fields, v)
			if err != nil {
				return nil, err
			}
			v = m
		}
	}
	out, err := ck.friendly("", s, false, v)
	if err != nil {
		return nil, err
	}
	if m, ok := out.(map[string]any); ok && k == structMusic {
		out = musicDefaults(s.fields, m)
	}
	return out, nil
}

// primaryEnum finds the ENUM member a bare scalar means: the one with that
// name, else the first required ENUM member.
func primaryEnum(fields []Field, name string) (Field, bool) {
	for _, f := range fields {
		if f.FieldName == name && f.DataType == DataEnum {
			return f, true
		}
	}
	for _, f := range fields {
		if f.Required && f.DataType == DataEnum && !isDependent(f) {
			return f, true
		}
	}
	return Field{}, false
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

// musicDefaults fills what a person rarely sends with a music mode: full
// sensitivity, and white with automatic colour when rgb is required.
func musicDefaults(fields []Field, m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+3)
	for k, e := range m {
		out[k] = e
	}
	has := func(name string) bool { e, ok := out[name]; return ok && e != nil }
	filledRGB := false
	for _, f := range fields {
		if has(f.FieldName) || f.DefaultValue != nil {
			continue
		}
		switch {
		case f.FieldName == "sensitivity" && f.DataType == DataInteger:
			top := int64(maxSensitivity)
			if f.Range != nil {
				top = int64(f.Range.Max)
			}
			out[f.FieldName] = top
		case f.FieldName == "rgb" && f.Required && f.DataType == DataInteger:
			out[f.FieldName] = int64(maxColor)
			filledRGB = true
		}
	}
	if filledRGB && !has("autoColor") {
		if f, ok := (&Parameters{Fields: fields}).Field("autoColor"); ok && onOffOptions(f.Options) {
			out["autoColor"] = int64(1)
		}
	}
	return out
}

// friendly converts v towards the cloud form of s. color marks an INTEGER
// that holds an RGB colour. Values it cannot read are returned unchanged
// for Validate to name, unless the friendly form is clearly meant and
// wrong (a malformed colour), which is reported here.
func (ck valueChecker) friendly(field string, s valueSpec, color bool, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch s.dataType {
	case DataEnum:
		return ck.friendlyEnum(field, s, v)
	case DataInteger:
		if color {
			return ck.friendlyColor(field, v)
		}
		return friendlyInteger(v), nil
	case DataArray:
		return ck.friendlyArray(field, s, v)
	case DataStruct:
		m, ok := v.(map[string]any)
		if !ok {
			return v, nil
		}
		return ck.friendlyStruct(field, s, m)
	}
	return v, nil
}

// friendlyInteger reads a numeric string; anything else is left for Validate.
func friendlyInteger(v any) any {
	if str, ok := v.(string); ok {
		if n, ok := parseFriendlyNumber(str); ok {
			return n
		}
	}
	return v
}

// isDecimalNumber reports whether s is a plain decimal number: optional sign,
// digits, optional fraction and exponent (no "NaN", "Inf", hex).
func isDecimalNumber(s string) bool {
	if s == "" {
		return false
	}
	digits := false
	for i, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits = true
		case r == '+' || r == '-':
			if i != 0 && s[i-1] != 'e' && s[i-1] != 'E' {
				return false
			}
		case r == '.' || r == 'e' || r == 'E':
		default:
			return false
		}
	}
	return digits
}

// parseFriendlyNumber reads a numeric string into normalised form (int64 when
// whole, else float64).
func parseFriendlyNumber(s string) (any, bool) {
	s = strings.TrimSpace(s)
	if !isDecimalNumber(s) {
		return nil, false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, false
	}
	return normalizeDecoded(f), true
}

var (
	onWords  = map[string]bool{"on": true, "true": true, "yes": true, "1": true}
	offWords = map[string]bool{"off": true, "false": true, "no": true, "0": true}
)

// onOffOptions reports whether an option list is exactly on=1 and off=0.
func onOffOptions(opts []Option) bool {
	if len(opts) != 2 {
		return false
	}
	seen := map[string]bool{}
	for _, o := range opts {
		n, res := asWholeInt(canonicalNumber(o.Value))
		if res != intOK {
			return false
		}
		name := strings.ToLower(strings.TrimSpace(o.Name))
		switch {
		case name == "on" && n == 1, name == "off" && n == 0:
			seen[name] = true
		default:
			return false
		}
	}
	return len(seen) == 2
}

// friendlyEnum reads an option by value, by name, a numeric string, or an
// on/off word for on/off ENUMs.
func (ck valueChecker) friendlyEnum(field string, s valueSpec, v any) (any, error) {
	onOff := s.onOff || onOffOptions(s.options)
	switch x := v.(type) {
	case bool:
		if onOff {
			if x {
				return int64(1), nil
			}
			return int64(0), nil
		}
		return v, nil
	case string:
		str := strings.TrimSpace(x)
		if str == "" {
			return "", nil
		}
		for _, o := range s.options {
			if ov, ok := o.Value.(string); ok && ov == str {
				return ov, nil
			}
		}
		if o, ok := optionByName(s.options, str); ok && o.Value != nil {
			return cloneValue(canonicalNumber(o.Value)), nil
		}
		if n, ok := parseFriendlyNumber(str); ok {
			return n, nil
		}
		lower := strings.ToLower(str)
		if onOff && onWords[lower] {
			return int64(1), nil
		}
		if onOff && offWords[lower] {
			return int64(0), nil
		}
		if o, ok := unitOption(field, s.options, str); ok {
			return cloneValue(o.Value), nil
		}
		if len(s.options) == 0 {
			if onOff {
				return nil, ck.fail(CategoryFormat, field, "%q is not on or off; send on, off, 1 or 0", str)
			}
			return nil, ck.fail(CategoryRange, field,
				"%q is not a known option: the option list is empty (scenes not loaded yet?); send an integer or a {paramId,id} object", str)
		}
		return nil, ck.fail(CategoryRange, field, "%q is not an option; send one of %s", str, describeNames(s.options, onOff))
	}
	return v, nil
}

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

// describeNames lists what a person may send for an ENUM: its option names
// (and on/off words).
func describeNames(opts []Option, onOff bool) string {
	if onOff {
		return "on, off, true, false, yes, no, 1 or 0"
	}
	named := false
	for _, o := range opts {
		named = named || o.Name != ""
	}
	if !named {
		return describeOptions(opts)
	}
	const most = 20
	var names []string
	for i, o := range opts {
		if i == most {
			names = append(names, fmt.Sprintf("… (%d more)", len(opts)-most))
			break
		}
		if o.Name != "" {
			names = append(names, fmt.Sprintf("%q", o.Name))
		} else {
			names = append(names, showValue(o.Value))
		}
	}
	return strings.Join(names, ", ") + " (names in any case) or the option value"
}
