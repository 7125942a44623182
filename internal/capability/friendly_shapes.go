package capability

// Friendly colours, segment lists and struct members.

import (
	"sort"
	"strconv"
	"strings"
)

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

// fieldFor finds the member definition a sent key means.
func (s valueSpec) fieldFor(key string) (Field, bool) {
	for _, f := range s.fields {
		if f.FieldName == key {
			return f, true
		}
	}
	k := nameKey(key)
	for _, f := range s.fields {
		if nameKey(f.FieldName) == k {
			return f, true
		}
	}
	return Field{}, false
}
