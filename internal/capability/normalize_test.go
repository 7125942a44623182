package capability

import (
	"reflect"
	"testing"
)

func TestNormalizeScalar(t *testing.T) {
	for _, s := range []string{`0`, `-0`, `7`, `-42`, `123456789012345678`, `-123456789012345678`, ` 5 `, "\t1\n",
		`true`, `false`, `null`, `""`, `"abc"`, `"café"`, `"a b"`,
		`1.0`, `21.5`, `-0.25`, `1e2`, `1E-2`, `2.5e+3`, `1234567890123456789`, `-9223372036854775808`, `9223372036854775808`, `1e400`, `1e-400`} {
		v, ok := normalizeScalar([]byte(s))
		want, err := normalizeFull([]byte(s))
		if !ok || err != nil || !reflect.DeepEqual(v, want) {
			t.Errorf("normalizeScalar(%q) = %#v, %v; the full decoding %#v, %v", s, v, ok, want, err)
		}
	}
	for _, s := range []string{``, ` `, `01`, `-`, `1.`, `.5`, `1e`, `1e+`, `-01`, `0x1`, `1_0`, `Infinity`, `NaN`, `tru`, `nul`, `"a\"b"`, `"a\nb"`,
		"\"a\x01\"", "\"\xff\"", `"abc`, `"`, `[1]`, `{}`, `1 2`, `truex`, `+1`} {
		if v, ok := normalizeScalar([]byte(s)); ok {
			t.Errorf("normalizeScalar(%q) = %#v, want it left to the full decoding", s, v)
		}
	}
}

// FuzzNormalize: Normalize's shortcuts for plain scalars and flat objects
// give exactly what the full decoding gives, and Normalize never panics.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{`0`, `-0`, `12`, `-9223372036854775808`, `123456789012345678`, `1.5`, `1e3`, `true`, `false`,
		`null`, `""`, `"a"`, `"a\"b"`, "\"\xff\"", ` 7 `, `01`, `[1,2]`, `{"a":1}`, `1}`, `"x"]`,
		`{}`, `{ "workMode": 1, "modeValue": "x" }`, `{"a":1,"a":2}`, `{"a":1,}`, `{"a":{"b":1}}`, `{"a":1 2}`, `{"a":"\u00e9"}`, `{"a":1.5}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		full, fullErr := normalizeFull(raw)
		if v, ok := normalizeScalar(raw); ok && (fullErr != nil || !reflect.DeepEqual(v, full)) {
			t.Fatalf("normalizeScalar(%q) = %#v; the full decoding %#v, %v", raw, v, full, fullErr)
		}
		v, err := Normalize(raw)
		if (err == nil) != (fullErr == nil) || !reflect.DeepEqual(v, full) {
			t.Fatalf("Normalize(%q) = %#v, %v; the full decoding %#v, %v", raw, v, err, full, fullErr)
		}
	})
}
