package capability

// A value's canonical form: Normalize decodes JSON into it, NormalizeValue
// brings a hand-built value into it, and Equal compares two.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Normalize decodes a JSON value into the canonical Go form of every
// capability value: int64 for whole numbers, float64 for others, and
// string, bool, nil, []any and map[string]any. Such values compare with
// Equal and marshal back to the same JSON.
func Normalize(raw []byte) (any, error) {
	if v, ok := normalizeScalar(raw); ok {
		return v, nil
	}
	if v, ok := normalizeFlatObject(raw); ok {
		return v, nil
	}
	return normalizeFull(raw)
}

// normalizeFull is Normalize by a full JSON decoding.
func normalizeFull(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return normalizeDecoded(v), nil
}

// NormalizeValue brings a Go value built by hand (int, float64, map of ints…)
// into the canonical form of Normalize.
func NormalizeValue(v any) any {
	switch x := v.(type) {
	case nil, bool, string, int64, float64:
		return normalizeDecoded(x)
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case uint32:
		return int64(x)
	case float32:
		return normalizeDecoded(float64(x))
	case json.Number:
		return normalizeDecoded(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = NormalizeValue(e)
		}
		return out
	case []int:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = int64(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = NormalizeValue(e)
		}
		return out
	}
	// Anything else: round-trip through JSON.
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	n, err := Normalize(b)
	if err != nil {
		return v
	}
	return n
}

func normalizeDecoded(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, err := x.Float64()
		if err != nil {
			return x.String()
		}
		return normalizeDecoded(f)
	case float64:
		if x == float64(int64(x)) && x >= -9e15 && x <= 9e15 {
			return int64(x)
		}
		return x
	case []any:
		for i := range x {
			x[i] = normalizeDecoded(x[i])
		}
		return x
	case map[string]any:
		for k := range x {
			x[k] = normalizeDecoded(x[k])
		}
		return x
	}
	return v
}

// Equal reports whether two normalised values are the same.
func Equal(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && maps.EqualFunc(x, y, Equal)
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, Equal)
	}
	return a == b
}

// intCheck says whether a value is a usable integer.
type intCheck int

const (
	intOK intCheck = iota
	intNotNumber
	intFraction
	intTooLarge
)

// asWholeInt returns a whole number as an int64; floats with a fraction, NaN,
// infinities and numbers beyond int64 are reported as such.
func asWholeInt(v any) (int64, intCheck) {
	switch x := v.(type) {
	case int64:
		return x, intOK
	case int:
		return int64(x), intOK
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || x != math.Trunc(x) {
			return 0, intFraction
		}
		if x >= 9.2e18 || x <= -9.2e18 {
			return 0, intTooLarge
		}
		return int64(x), intOK
	}
	return 0, intNotNumber
}

// canonicalNumber turns whole floats into int64 so option values compare with Equal.
func canonicalNumber(v any) any {
	if f, ok := v.(float64); ok {
		if n, res := asWholeInt(f); res == intOK {
			return n
		}
	}
	return v
}

// normalizeScalar is Normalize's fast path for plain scalars; ok is false
// for anything else. FuzzNormalize checks it agrees with the full decoding.
func normalizeScalar(raw []byte) (v any, ok bool) {
	raw = trimJSONSpace(raw)
	if len(raw) == 0 {
		return nil, false
	}
	switch raw[0] {
	case 't':
		return true, string(raw) == "true"
	case 'f':
		return false, string(raw) == "false"
	case 'n':
		return nil, string(raw) == "null"
	case '"':
		s := raw[1:]
		if len(s) == 0 || s[len(s)-1] != '"' {
			return nil, false
		}
		s = s[:len(s)-1]
		for _, b := range s {
			if b < 0x20 || b == '"' || b == '\\' {
				return nil, false
			}
		}
		if !utf8.Valid(s) {
			return nil, false // the decoder would replace the bad bytes
		}
		return string(s), true
	}
	if !jsonNumber(raw) {
		return nil, false
	}
	// What the full decoding does with a json.Number, without its copies.
	if len(raw) <= 18 && bytes.IndexAny(raw, ".eE") < 0 {
		// At most 18 characters of digits cannot overflow an int64.
		var n int64
		digits := raw
		if raw[0] == '-' {
			digits = raw[1:]
		}
		for _, b := range digits {
			n = n*10 + int64(b-'0')
		}
		if raw[0] == '-' {
			n = -n
		}
		return n, true
	}
	s := string(raw)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s, true
	}
	return normalizeDecoded(f), true
}

// jsonNumber reports whether b is a number as JSON spells it:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func jsonNumber(b []byte) bool {
	digits := func(i int) int { // the index after a run of digits from i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i
	}
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(i + 1)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(b)
}

// trimJSONSpace trims the whitespace JSON allows around a value.
func trimJSONSpace(b []byte) []byte {
	for len(b) > 0 && isJSONSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isJSONSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// normalizeFlatObject is Normalize's fast path for objects of plain scalars,
// most struct values, avoiding a JSON decoder's buffer per value. ok is
// false for anything else; FuzzNormalize checks it agrees.
func normalizeFlatObject(raw []byte) (m map[string]any, ok bool) {
	rest := trimJSONSpace(raw)
	if len(rest) < 2 || rest[0] != '{' || rest[len(rest)-1] != '}' {
		return nil, false
	}
	rest = trimJSONSpace(rest[1 : len(rest)-1])
	m = make(map[string]any, 4)
	for len(rest) > 0 {
		key, after, ok := plainString(rest)
		if !ok {
			return nil, false
		}
		rest = trimJSONSpace(after)
		if len(rest) == 0 || rest[0] != ':' {
			return nil, false
		}
		rest = trimJSONSpace(rest[1:])
		end := 0
		if len(rest) > 0 && rest[0] == '"' {
			_, after, ok := plainString(rest)
			if !ok {
				return nil, false
			}
			end = len(rest) - len(after)
		} else {
			for end < len(rest) && !isJSONSpace(rest[end]) && rest[end] != ',' {
				end++
			}
		}
		v, ok := normalizeScalar(rest[:end])
		if !ok {
			return nil, false
		}
		m[key] = v // the last of a repeated key wins, as in the full decoding
		rest = trimJSONSpace(rest[end:])
		if len(rest) == 0 {
			break
		}
		if rest[0] != ',' {
			return nil, false
		}
		if rest = trimJSONSpace(rest[1:]); len(rest) == 0 {
			return nil, false // a trailing comma
		}
	}
	return m, true
}

// plainString reads the JSON string at the start of b when it has no escape
// and no control character and is valid UTF-8: its text and what follows.
func plainString(b []byte) (s string, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", nil, false
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			if !utf8.Valid(b[1:i]) {
				return "", nil, false
			}
			return string(b[1:i]), b[i+1:], true
		case c < 0x20 || c == '\\':
			return "", nil, false
		}
	}
	return "", nil, false
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
