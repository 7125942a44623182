package capability

// Friendly input (Decode): what a person or Home Assistant sends, turned
// into the cloud's form: option names and on/off words, numeric strings,
// colours, segment lists and struct members by name.

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Decode turns a value a person or Home Assistant sent, or one already in
// the cloud's form, into the cloud's form, fills defaults and validates it.
// Errors are *ValueError.
//
// Friendly forms include option and member names in any case and spacing
// ("night light" for "NIGHT_LIGHT"), numeric strings, on/off words, colours
// ("#RRGGBB"), segment lists ("0-4,7") and temperatures ("22C"), which come
// back in the unit of the device's range.
func Decode(c Capability, input any) (any, error) {
	if !c.Controllable() {
		return nil, readOnlyError(c)
	}
	ck := valueChecker{instance: c.Instance}
	v, err := ck.friendlyCapability(c, NormalizeValue(input))
	if err != nil {
		return nil, err
	}
	out, verr := check(c, WithDefaults(c, v))
	if verr != nil {
		return nil, verr
	}
	return out, nil
}

func (ck valueChecker) friendlyCapability(c Capability, v any) (any, error) {
	s := paramSpec(c)
	if s.dataType != DataStruct {
		return ck.friendly("", s, c.Instance == InstanceColorRGB, v)
	}
	r := structRules(c)
	switch v.(type) {
	case string, int64, float64:
		if v != "" && r.scalar != nil {
			// A scalar for a struct: the member (or members) it stands for.
			m, err := r.scalar(ck, s.fields, v)
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
	if m, ok := out.(map[string]any); ok && r.complete != nil {
		out = r.complete(s.fields, m)
	}
	return out, nil
}

// friendly converts v towards the cloud form of s; color marks an INTEGER
// holding an RGB colour. Unreadable values are left for Validate to name,
// unless a friendly form was clearly meant, such as a malformed colour.
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
		if n, ok := onOffWord(x); ok && onOff {
			return n, nil
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
		if n, ok := onOffWord(str); ok && onOff {
			return n, nil
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

// friendlyStruct maps member names onto the definition's (ignoring case,
// spaces and underscores) and converts each member; unknown members are
// kept for Validate to name.
func (ck valueChecker) friendlyStruct(field string, s valueSpec, m map[string]any) (any, error) {
	out := make(map[string]any, len(m))
	from := make(map[string]string, len(m)) // definition name → key sent
	// Exact names first, so {"unit":…,"Unit":…} reports the second.
	keys := slices.Sorted(maps.Keys(m))
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
	if err := ck.friendlyDependents(field, s.fields, out); err != nil {
		return nil, err
	}
	return out, nil
}
