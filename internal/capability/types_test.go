package capability

import (
	"slices"
	"testing"
)

// TestTypesTable: the spec's types are known, with the rules their kind of
// value needs, and a struct instance belongs to one type only (structRules
// looks instances up in the map in any order).
func TestTypesTable(t *testing.T) {
	for _, tc := range []struct {
		typ                     string
		readOnly, pushed, onOff bool
	}{
		{TypeOnOff, false, false, true},
		{TypeToggle, false, false, true},
		{TypeColorSetting, false, false, false},
		{TypeMode, false, false, false},
		{TypeRange, false, false, false},
		{TypeWorkMode, false, false, false},
		{TypeSegmentColor, false, false, false},
		{TypeMusicSetting, false, false, false},
		{TypeDynamicScene, false, false, false},
		{TypeDIYColorSetting, false, false, false},
		{TypeTemperature, false, false, false},
		{TypeOnline, true, false, false},
		{TypeProperty, true, false, false},
		{TypeEvent, true, true, false},
	} {
		r, ok := types[tc.typ]
		if !ok || !KnownCapabilityType(tc.typ) {
			t.Errorf("%s is not in the table", tc.typ)
		}
		if r.readOnly != tc.readOnly || r.pushed != tc.pushed || r.onOff != tc.onOff {
			t.Errorf("%s: readOnly %v, pushed %v, onOff %v; want %v, %v, %v", tc.typ, r.readOnly, r.pushed, r.onOff, tc.readOnly, tc.pushed, tc.onOff)
		}
	}
	if len(types) != 14 {
		t.Errorf("the table has %d types, the test knows 14: add the new one above", len(types))
	}
	if KnownCapabilityType("devices.capabilities.dynamic_setting") {
		t.Error("a type the spec does not name is known")
	}
	owner := map[string]string{}
	for typ, r := range types {
		for _, in := range r.instances {
			if prev, dup := owner[in]; dup {
				t.Errorf("instance %s belongs to %s and %s", in, prev, typ)
			}
			owner[in] = typ
		}
	}
}

// TestStructFormsByInstance: a struct of a type without friendly forms of
// its own gets those of the type whose instance it has; one of a struct
// type keeps its type's. Defaults a type fills in go by the type alone.
func TestStructFormsByInstance(t *testing.T) {
	mode := fixtureFile(t, "work-mode-issue-93.json")
	music := fixtureCapability(t, "H6072", InstanceMusicMode)
	noDefaults := &Parameters{DataType: DataStruct, Fields: []Field{
		{FieldName: "autoStop", DataType: DataEnum, Options: []Option{{Name: "Auto Stop", Value: int64(1)}, {Name: "Maintain", Value: int64(0)}}},
		{FieldName: "temperature", DataType: DataInteger, Required: true, Range: &Range{Min: 5, Max: 30}},
		{FieldName: "unit", DataType: DataEnum, Required: true, Options: []Option{{Name: "Celsius", Value: "Celsius"}, {Name: "Fahrenheit", Value: "Fahrenheit"}}},
	}}
	heater := Capability{Type: TypeTemperature, Instance: InstanceTargetTemperature, Parameters: noDefaults}
	thermostat := Capability{Type: "devices.capabilities.thermostat", Instance: InstanceTargetTemperature, Parameters: noDefaults}
	retyped := func(c Capability, typ string) Capability { c.Type = typ; return c }
	runDecodeCases(t, []decodeCase{
		{"work mode listed as a mode", retyped(mode, TypeMode), "STORM", `{"workMode":7,"modeValue":0}`, "", ""},
		{"music of an unknown type", retyped(music, "devices.capabilities.sound"), "bounce", `{"musicMode":3,"sensitivity":100}`, "", ""},
		{"temperature setting: its defaults", heater, "22", `{"temperature":22,"autoStop":0,"unit":"Celsius"}`, "", ""},
		{"temperature of an unknown type: its forms", thermostat, "22C", `{"temperature":22,"unit":"Celsius"}`, "", ""},
		{"temperature of an unknown type: no defaults", thermostat, "22", ``, CategoryMissing, "unit"},
	})
	// The type wins over the instance: a music struct named workMode is music.
	c := music
	c.Instance = InstanceWorkMode
	if got := structRules(c); got.complete == nil || !slices.Equal(got.instances, []string{InstanceMusicMode}) {
		t.Errorf("structRules(music_setting named workMode) = %+v, want music's", got)
	}
}
