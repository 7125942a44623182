package capability

import "unicode/utf8"

// normalizeScalar is Normalize for the plain scalars most values are: whole
// numbers that fit an int64 without question, booleans, null and strings
// without escapes. ok is false for anything else, which Normalize decodes in
// full. Its results are those of the full decoding (FuzzNormalize checks).
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
	digits, neg := raw, false
	if digits[0] == '-' {
		digits, neg = digits[1:], true
	}
	// At most 18 digits cannot overflow an int64; JSON allows no leading zero.
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && len(digits) > 1) {
		return nil, false
	}
	var n int64
	for _, b := range digits {
		if b < '0' || b > '9' {
			return nil, false
		}
		n = n*10 + int64(b-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// trimJSONSpace trims the whitespace JSON allows around a value.
func trimJSONSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
