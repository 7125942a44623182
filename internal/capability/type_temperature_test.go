package capability

import (
	"slices"
	"strings"
	"testing"
)

// retemper is the recorded heater's targetTemperature (H7131: 5–30 °C,
// unit default Celsius) with another instance, range and unit default:
// how a device states the unit its range is in.
func retemper(t testing.TB, instance string, r Range, unitDefault string) Capability {
	t.Helper()
	c := fixtureCapability(t, "H7131", InstanceTargetTemperature)
	p := *c.Parameters
	p.Fields = slices.Clone(p.Fields)
	for i, f := range p.Fields {
		switch f.FieldName {
		case "temperature":
			p.Fields[i].Range = &r
		case "unit":
			p.Fields[i].DefaultValue = unitDefault
		}
	}
	c.Instance, c.Parameters = instance, &p
	return c
}

// fahrenheitHeater is a heater ranged 41–86 °F; celsiusKettle a kettle
// ranged 40–100 °C (the demo's H7171).
func fahrenheitHeater(t testing.TB) Capability {
	return retemper(t, InstanceTargetTemperature, Range{Min: 41, Max: 86, Precision: 1}, "Fahrenheit")
}

func celsiusKettle(t testing.TB) Capability {
	return retemper(t, InstanceSliderTemperature, Range{Min: 40, Max: 100, Precision: 1}, "Celsius")
}

func TestDecodeTemperature(t *testing.T) {
	heater := fixtureCapability(t, "H7131", InstanceTargetTemperature)
	kettle := Capability{Type: "devices.capabilities.temperature_range", Instance: InstanceSliderTemperature}
	kettle.Type = NormalizeType(kettle.Type)
	kettle.Parameters = heater.Parameters
	runDecodeCases(t, []decodeCase{
		{"plain number", heater, "22", `{"temperature":22,"autoStop":0,"unit":"Celsius"}`, "", ""},
		{"numeric string", heater, `"22"`, `{"temperature":22,"autoStop":0,"unit":"Celsius"}`, "", ""},
		{"number with C", heater, "22C", `{"temperature":22,"autoStop":0,"unit":"Celsius"}`, "", ""},
		{"number with degree F", heater, "72 °F", `{"temperature":22,"autoStop":0,"unit":"Celsius"}`, "", ""},
		{"object lower unit", heater, `{"temperature":20,"unit":"celsius"}`, `{"temperature":20,"autoStop":0,"unit":"Celsius"}`, "", ""},
		{"object unit F", heater, `{"temperature":68,"unit":"F"}`, `{"temperature":20,"autoStop":0,"unit":"Celsius"}`, "", ""},
		{"object unit c", heater, `{"temperature":20,"unit":"c"}`, `{"temperature":20,"autoStop":0,"unit":"Celsius"}`, "", ""},
		{"object auto stop by name", heater, `{"temperature":20,"autoStop":"Auto Stop"}`, `{"temperature":20,"autoStop":1,"unit":"Celsius"}`, "", ""},
		{"kettle type spelling", kettle, "30", `{"temperature":30,"autoStop":0,"unit":"Celsius"}`, "", ""},
		{"too hot", heater, "31", ``, CategoryRange, "31 °C is above the maximum 30 °C"},
		{"fraction", heater, "21.5", ``, CategoryType, "not a whole number"},
		{"unknown unit", heater, `{"temperature":20,"unit":"Kelvin"}`, ``, CategoryRange, `"Celsius", "Fahrenheit"`},
		{"unknown unit letter", heater, "20K", ``, CategoryRange, ""},
		{"word", heater, "warm", ``, CategoryFormat, "not a temperature"},
		{"missing temperature", heater, `{"unit":"C"}`, ``, CategoryMissing, "send an integer from 5 °C to 30 °C"},
		{"unknown member", heater, `{"temperature":20,"mode":1}`, ``, CategoryFormat, "autoStop, temperature, unit"},
	})
}

// TestTemperatureInTheDevicesUnit: a temperature is checked in the unit of
// the device's range, converted and rounded to its precision, and sent in
// that unit; a bare number is in the device's unit; every range message
// names the unit.
func TestTemperatureInTheDevicesUnit(t *testing.T) {
	heater, kettle := fahrenheitHeater(t), celsiusKettle(t)
	stepped := retemper(t, InstanceTargetTemperature, Range{Min: 40, Max: 90, Precision: 5}, "Fahrenheit")
	const hF, kC = `,"autoStop":0,"unit":"Fahrenheit"}`, `,"autoStop":0,"unit":"Celsius"}`
	runDecodeCases(t, []decodeCase{
		{"heater: 22C is 72 °F", heater, "22C", `{"temperature":72` + hF, "", ""},
		{"heater: 72F as it is", heater, "72F", `{"temperature":72` + hF, "", ""},
		{"heater: Celsius object", heater, `{"temperature":22,"unit":"Celsius"}`, `{"temperature":72` + hF, "", ""},
		{"heater: a bare number is Fahrenheit", heater, "60", `{"temperature":60` + hF, "", ""},
		{"heater: an object without a unit is Fahrenheit", heater, `{"temperature":70}`, `{"temperature":70` + hF, "", ""},
		{"heater: a fraction of a degree Celsius", heater, "21.5C", `{"temperature":71` + hF, "", ""},
		{"heater: the README's -m 22", heater, "22", ``, CategoryRange, "22 °F is below the minimum 41 °F"},
		{"heater: too cold in Celsius", heater, "0C", ``, CategoryRange, "0 °C (32 °F) is below the minimum 41 °F"},
		{"heater: too hot in Celsius", heater, "31C", ``, CategoryRange, "31 °C (88 °F) is above the maximum 86 °F"},
		{"heater: no temperature names the range's unit", heater, `{"unit":"C"}`, ``, CategoryMissing, "send an integer from 41 °F to 86 °F"},
		{"stepped: rounded onto the steps", stepped, "22C", `{"temperature":70` + hF, "", ""},
		{"kettle: 90F is 32 °C, below its minimum", kettle, "90F", ``, CategoryRange, "90 °F (32 °C) is below the minimum 40 °C"},
		{"kettle: 72F", kettle, "72F", ``, CategoryRange, "72 °F (22 °C) is below the minimum 40 °C"},
		{"kettle: 22C", kettle, "22C", ``, CategoryRange, "22 °C is below the minimum 40 °C"},
		{"kettle: Celsius object", kettle, `{"temperature":22,"unit":"Celsius"}`, ``, CategoryRange, "22 °C is below the minimum 40 °C"},
		{"kettle: 200F is 93 °C", kettle, "200F", `{"temperature":93` + kC, "", ""},
		{"kettle: a bare number is Celsius", kettle, "90", `{"temperature":90` + kC, "", ""},
		{"kettle: boiling in Fahrenheit", kettle, `{"temperature":212,"unit":"Fahrenheit","autoStop":1}`, `{"temperature":100,"autoStop":1,"unit":"Celsius"}`, "", ""},
		{"kettle: too large to convert", kettle, `{"temperature":1e308,"unit":"F"}`, ``, CategoryRange, "1e+308 °F"},
	})

	// Validate checks a cloud-form value in the range's unit too.
	for _, tc := range []struct {
		name string
		cap  Capability
		in   string
		msg  string // "" when valid
	}{
		{"heater: 22 °C fits 41–86 °F", heater, `{"temperature":22,"unit":"Celsius","autoStop":0}`, ""},
		{"heater: 22 °F does not", heater, `{"temperature":22,"unit":"Fahrenheit","autoStop":0}`, "22 °F is below the minimum 41 °F"},
		{"kettle: 90 °F is 32 °C", kettle, `{"temperature":90,"unit":"Fahrenheit","autoStop":0}`, "90 °F (32 °C) is below the minimum 40 °C"},
	} {
		err := Validate(tc.cap, js(t, tc.in))
		if tc.msg == "" && err != nil || tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("%s: Validate(%s) = %v, want %q", tc.name, tc.in, err, tc.msg)
		}
	}
}

// TestTemperatureUnit: how a definition states its range's unit, and that
// it is always one the unit member accepts.
func TestTemperatureUnit(t *testing.T) {
	fields := func(tempUnit string, unitDefault any, opts ...string) Capability {
		u := Field{FieldName: "unit", DataType: DataEnum, Required: true, DefaultValue: unitDefault}
		for _, o := range opts {
			u.Options = append(u.Options, Option{Name: o, Value: o})
		}
		return Capability{Type: TypeTemperature, Instance: InstanceTargetTemperature, Parameters: &Parameters{DataType: DataStruct, Fields: []Field{
			{FieldName: "temperature", DataType: DataInteger, Required: true, Unit: tempUnit, Range: &Range{Min: 41, Max: 86}}, u}}}
	}
	for _, tc := range []struct {
		name string
		cap  Capability
		want string
	}{
		{"recorded heater", fixtureCapability(t, "H7131", InstanceTargetTemperature), "Celsius"},
		{"default Fahrenheit", fahrenheitHeater(t), "Fahrenheit"},
		{"the temperature's own unit first", fields("unit.fahrenheit", "Celsius", "Celsius", "Fahrenheit"), "Fahrenheit"},
		{"the only option", fields("", nil, "Fahrenheit"), "Fahrenheit"},
		{"a unit the member does not take is not the range's", fields("unit.fahrenheit", nil, "Celsius"), "Celsius"},
		{"no options: the spec's default", fields("", nil), "Celsius"},
		{"neither unit taken", fields("", nil, "Kelvin"), ""},
		{"not a temperature", fixtureCapability(t, "H6601", InstanceBrightness), ""},
	} {
		if got := TemperatureUnit(tc.cap); got != tc.want {
			t.Errorf("%s: TemperatureUnit = %q, want %q", tc.name, got, tc.want)
		}
	}
}
