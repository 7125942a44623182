package capability

// Friendly input (Decode): what a person or Home Assistant sends, turned
// into the cloud's form: option names and on/off words, numeric strings,
// colours, segment lists and struct members by name.

import (
	"sort"
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

const colorForms = `send #RRGGBB, RRGGBB, "r,g,b", {"r":…,"g":…,"b":…}, [r,g,b] or an integer 0 to 16777215`

// friendlyColor reads the colour forms into one integer 0xRRGGBB.
func (ck valueChecker) friendlyColor(field string, v any) (any, error) {
	switch x := v.(type) {
	case string:
		str := strings.TrimSpace(x)
		if str == "" {
			return "", nil
		}
		hex := strings.TrimPrefix(str, "#")
		if len(hex) == 6 && (hex != str || isHexDigits(hex)) {
			if !isHexDigits(hex) {
				return nil, ck.fail(CategoryFormat, field, "%q is not a colour; %s", str, colorForms)
			}
			n, _ := strconv.ParseInt(hex, 16, 64)
			return n, nil
		}
		if strings.Contains(str, ",") {
			parts := strings.Split(str, ",")
			list := make([]any, len(parts))
			for i, p := range parts {
				n, ok := parseFriendlyNumber(p)
				if !ok {
					return nil, ck.fail(CategoryFormat, field, "%q is not a colour; %s", str, colorForms)
				}
				list[i] = n
			}
			return ck.rgbTriple(field, list)
		}
		if n, ok := parseFriendlyNumber(str); ok {
			return n, nil
		}
		return nil, ck.fail(CategoryFormat, field, "%q is not a colour; %s", str, colorForms)
	case []any:
		return ck.rgbTriple(field, x)
	case map[string]any:
		list := make([]any, 3)
		for k, e := range x {
			i := strings.Index("rgb", strings.ToLower(k))
			if len(k) != 1 || i < 0 {
				return nil, ck.fail(CategoryFormat, field, "colour member %q is not r, g or b; %s", k, colorForms)
			}
			if list[i] != nil {
				return nil, ck.fail(CategoryDuplicate, field, "colour member %c given twice", "rgb"[i])
			}
			list[i] = e
		}
		for i, e := range list {
			if e == nil {
				return nil, ck.fail(CategoryMissing, field, "colour member %c is missing; %s", "rgb"[i], colorForms)
			}
		}
		return ck.rgbTriple(field, list)
	}
	return v, nil
}

func isHexDigits(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return false
		}
	}
	return s != ""
}

// rgbTriple combines red, green and blue (0 to 255 each) into one integer.
func (ck valueChecker) rgbTriple(field string, list []any) (any, error) {
	if len(list) != 3 {
		return nil, ck.fail(CategoryLength, field, "a colour list has 3 elements (red, green, blue), got %d; %s", len(list), colorForms)
	}
	var out int64
	for i, e := range list {
		e = friendlyInteger(e)
		n, res := asWholeInt(e)
		if res == intNotNumber || res == intFraction {
			return nil, ck.fail(CategoryType, field, "colour component %c is %s %s, expected an integer 0 to 255", "rgb"[i], valueKind(e), showValue(e))
		}
		if res == intTooLarge || n < 0 || n > 255 {
			return nil, ck.fail(CategoryRange, field, "colour component %c is %s, expected 0 to 255", "rgb"[i], showValue(e))
		}
		out = out<<8 | n
	}
	return out, nil
}

// maxSegmentExpand bounds the lists "all" and "a-b" may produce.
const maxSegmentExpand = 1024

// friendlyArray reads a segment list given as a list, one integer, a
// string of indexes and ranges ("0-4,7") or "all".
func (ck valueChecker) friendlyArray(field string, s valueSpec, v any) (any, error) {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = friendlyInteger(e)
		}
		return out, nil
	case int64, float64:
		return []any{x}, nil
	case string:
		str := strings.TrimSpace(x)
		if str == "" {
			return []any{}, nil
		}
		if strings.EqualFold(str, "all") {
			return ck.allElements(field, s)
		}
		var out []any
		for _, part := range strings.Split(str, ",") {
			part = strings.TrimSpace(part)
			lo, hi, isRange := strings.Cut(part, "-")
			if !isRange {
				n, err := strconv.ParseInt(part, 10, 64)
				if err != nil {
					return nil, ck.fail(CategoryFormat, field, "%q is not a segment list; send a list, an index, indexes and ranges like \"0-4,7\", or \"all\"", str)
				}
				out = append(out, n)
				continue
			}
			a, err1 := strconv.ParseInt(strings.TrimSpace(lo), 10, 64)
			b, err2 := strconv.ParseInt(strings.TrimSpace(hi), 10, 64)
			if err1 != nil || err2 != nil || a < 0 || a > b {
				return nil, ck.fail(CategoryFormat, field, "%q is not a segment range; write the lower index first, like \"0-4\"", part)
			}
			if b-a >= maxSegmentExpand || len(out)+int(b-a) >= maxSegmentExpand {
				return nil, ck.fail(CategoryLength, field, "%q names more than %d segments; %s", part, maxSegmentExpand, ck.accepts(s))
			}
			for i := range b - a + 1 {
				out = append(out, a+i)
			}
		}
		return out, nil
	}
	return v, nil
}

// allElements lists every element value the definition allows.
func (ck valueChecker) allElements(field string, s valueSpec) (any, error) {
	var out []any
	switch {
	case s.elemRange != nil:
		lo, hi := int64(s.elemRange.Min), int64(s.elemRange.Max)
		if hi-lo >= maxSegmentExpand {
			return nil, ck.fail(CategoryLength, field, "\"all\" would name more than %d segments; send a list", maxSegmentExpand)
		}
		for i := range hi - lo + 1 {
			out = append(out, lo+i)
		}
	case len(s.options) > 0:
		for _, o := range s.options {
			out = append(out, cloneValue(canonicalNumber(o.Value)))
		}
	default:
		return nil, ck.fail(CategoryFormat, field, "\"all\" needs a definition that lists the allowed segments; send a list of indexes")
	}
	return out, nil
}

// friendlyStruct maps member names onto the definition's (ignoring case,
// spaces and underscores) and converts each member; unknown members are
// kept for Validate to name.
func (ck valueChecker) friendlyStruct(field string, s valueSpec, m map[string]any) (any, error) {
	out := make(map[string]any, len(m))
	from := make(map[string]string, len(m)) // definition name → key sent
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Exact names first, so {"unit":…,"Unit":…} reports the second.
	sort.Strings(keys)
	for _, pass := range []bool{true, false} {
		for _, k := range keys {
			f, ok := s.fieldFor(k)
			if !ok {
				if !pass {
					out[k] = m[k]
				}
				continue
			}
			if (f.FieldName == k) != pass {
				continue
			}
			if prev, dup := from[f.FieldName]; dup {
				return nil, ck.fail(CategoryDuplicate, memberPath(field, f.FieldName), "member %s given twice (as %q and %q)", f.FieldName, prev, k)
			}
			from[f.FieldName] = k
			out[f.FieldName] = m[k]
		}
	}
	for _, f := range s.fields {
		e, ok := out[f.FieldName]
		if !ok || isDependent(f) {
			continue
		}
		conv, err := ck.friendly(memberPath(field, f.FieldName), fieldSpec(f), f.FieldName == "rgb", e)
		if err != nil {
			return nil, err
		}
		out[f.FieldName] = conv
	}
	for _, f := range s.fields {
		e, ok := out[f.FieldName]
		if !ok || !isDependent(f) {
			continue
		}
		sub := valueSpec{dataType: DataInteger}
		if d, _, ok := chosenDependent(s.fields, f, out); ok && len(d.Options) > 0 {
			sub = valueSpec{dataType: DataEnum, options: d.Options}
		}
		conv, err := ck.friendly(memberPath(field, f.FieldName), sub, false, e)
		if err != nil {
			return nil, err
		}
		out[f.FieldName] = conv
	}
	return out, nil
}
