package capability

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
)

var (
	fuzzCapsOnce sync.Once
	fuzzCaps     []Capability
)

// distinctFixtureCapabilities lists each distinct definition of the
// fixtures once, plus a few hand-written ones the fixtures lack.
func distinctFixtureCapabilities(t testing.TB) []Capability {
	fuzzCapsOnce.Do(func() {
		seen := map[string]bool{}
		for _, fc := range allFixtureCapabilities(t) {
			b, _ := json.Marshal(fc.cap)
			if !seen[string(b)] {
				seen[string(b)] = true
				fuzzCaps = append(fuzzCaps, fc.cap)
			}
		}
		fuzzCaps = append(fuzzCaps,
			Capability{Type: TypeToggle, Instance: "socketToggle1", Parameters: &Parameters{DataType: DataEnum}},
			Capability{Type: TypeRange, Instance: "volume", Parameters: &Parameters{DataType: DataInteger, Range: &Range{Min: 10, Max: 50, Precision: 5}}},
			Capability{Type: TypeColorSetting, Instance: InstanceColorRGB, Parameters: &Parameters{DataType: DataInteger}},
			Capability{Type: "devices.capabilities.new_thing", Instance: "thing", Parameters: &Parameters{DataType: "FLOAT"}},
			fahrenheitHeater(t), celsiusKettle(t),
		)
	})
	return fuzzCaps
}

func pickCapability(t testing.TB, i uint16) Capability {
	caps := distinctFixtureCapabilities(t)
	return caps[int(i)%len(caps)]
}

var knownCategories = map[Category]bool{
	CategoryMissing: true, CategoryEmpty: true, CategoryFormat: true, CategoryType: true,
	CategoryRange: true, CategoryLength: true, CategoryDuplicate: true, CategoryUnknown: true,
}

// checkValueError fails unless err is a *ValueError of a known category
// with a message.
func checkValueError(t *testing.T, err error) {
	t.Helper()
	var ve *ValueError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v (%T) is not a *ValueError", err, err)
	}
	if !knownCategories[ve.Category] || ve.Msg == "" {
		t.Fatalf("error %#v has an unknown category or no message", ve)
	}
}

// FuzzValidate: Validate never panics and fails only with a *ValueError,
// and Decode accepts whatever it accepts.
func FuzzValidate(f *testing.F) {
	caps := distinctFixtureCapabilities(f)
	for i, c := range caps {
		if v, ok := Example(c); ok {
			b, _ := json.Marshal(v)
			f.Add(uint16(i), b)
		}
	}
	for _, s := range []string{`null`, `""`, `1`, `-1`, `1.5`, `1e300`, `true`, `[]`, `{}`, `[1,1]`,
		`{"workMode":1,"modeValue":null}`, `{"segment":[0,0],"rgb":1}`, `{"paramId":1,"id":2}`,
		`{"temperature":22}`, `{"musicMode":1,"sensitivity":100}`} {
		f.Add(uint16(len(s)*7), []byte(s))
	}
	f.Fuzz(func(t *testing.T, i uint16, b []byte) {
		c := pickCapability(t, i)
		v, err := Normalize(b)
		if err != nil {
			return
		}
		if err := Validate(c, v); err != nil {
			checkValueError(t, err)
			return
		}
		got, err := Decode(c, v)
		if err != nil {
			t.Fatalf("%s: Validate accepts %s but Decode says %v", c.Instance, b, err)
		}
		want, verr := check(c, WithDefaults(c, v))
		if verr != nil || !Equal(got, want) {
			t.Fatalf("%s: Decode(%s) = %s, want the value with defaults %s (%v)", c.Instance, b, showValue(got), showValue(want), verr)
		}
	})
}

// FuzzDecodeInput: any MQTT payload for any fixture capability. Decode never
// panics, fails only with a *ValueError, leaves its input alone, and what it
// returns passes Validate, survives JSON, and decodes to itself.
func FuzzDecodeInput(f *testing.F) {
	caps := distinctFixtureCapabilities(f)
	for i := range caps {
		for _, s := range []string{"on", "OFF", "Sunrise", "#ff0000", "255,0,0", "Auto", "22C", "0-4,7", "all", "40"} {
			f.Add(uint16(i), []byte(s))
		}
	}
	for _, s := range []string{`{"segment":"all","rgb":[1,2,3]}`, `{"workMode":"Manual","modeValue":"3"}`,
		`{"temperature":"20","unit":"f"}`, `{"temperature":90,"unit":"Fahrenheit"}`, `{"temperature":22,"unit":"Celsius"}`, "72F", "21.5C",
		`{"musicMode":"rhythm","autoColor":"yes"}`, `{"r":1,"g":2,"b":3}`,
		`{"segment":"0-99999999999","rgb":1}`, `{"segment":"9223372036854775806-9223372036854775807","rgb":1}`} {
		f.Add(uint16(len(s)), []byte(s))
	}
	f.Fuzz(func(t *testing.T, i uint16, b []byte) {
		c := pickCapability(t, i)
		in := payload(b)
		out, err := Decode(c, in)
		if !Equal(in, payload(b)) {
			t.Fatalf("%s: Decode changed its input %q", c.Instance, b)
		}
		if err != nil {
			checkValueError(t, err)
			return
		}
		if err := Validate(c, out); err != nil {
			t.Fatalf("%s: Decode(%q) = %s which Validate refuses: %v", c.Instance, b, showValue(out), err)
		}
		raw, err := json.Marshal(out)
		if err != nil {
			t.Fatalf("%s: Decode(%q) = %#v does not marshal: %v", c.Instance, b, out, err)
		}
		if back, err := Normalize(raw); err != nil || !Equal(back, out) {
			t.Fatalf("%s: Decode(%q) = %s does not survive JSON (%v)", c.Instance, b, raw, err)
		}
		again, err := Decode(c, out)
		if err != nil || !Equal(again, out) {
			t.Fatalf("%s: Decode(%s) = %s, %v; want the cloud form unchanged", c.Instance, raw, showValue(again), err)
		}
	})
}
