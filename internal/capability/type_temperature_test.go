package capability

import "testing"

func TestDecodeTemperature(t *testing.T) {
	heater := fixtureCapability(t, "H7131", InstanceTargetTemperature)
	kettle := Capability{Type: "devices.capabilities.temperature_range", Instance: InstanceSliderTemperature}
	kettle.Type = NormalizeType(kettle.Type)
	kettle.Parameters = heater.Parameters
	runDecodeCases(t, []decodeCase{
		{"plain number", heater, "22", `{"temperature":22,"autoStop":0,"unit":"Celsius"}`, "", ""},
		{"numeric string", heater, `"22"`, `{"temperature":22,"autoStop":0,"unit":"Celsius"}`, "", ""},
		{"number with C", heater, "22C", `{"temperature":22,"autoStop":0,"unit":"Celsius"}`, "", ""},
		{"number with degree F", heater, "25 °F", `{"temperature":25,"autoStop":0,"unit":"Fahrenheit"}`, "", ""},
		{"object lower unit", heater, `{"temperature":20,"unit":"celsius"}`, `{"temperature":20,"autoStop":0,"unit":"Celsius"}`, "", ""},
		{"object unit F", heater, `{"temperature":20,"unit":"F"}`, `{"temperature":20,"autoStop":0,"unit":"Fahrenheit"}`, "", ""},
		{"object unit c", heater, `{"temperature":20,"unit":"c"}`, `{"temperature":20,"autoStop":0,"unit":"Celsius"}`, "", ""},
		{"object auto stop by name", heater, `{"temperature":20,"autoStop":"Auto Stop"}`, `{"temperature":20,"autoStop":1,"unit":"Celsius"}`, "", ""},
		{"kettle type spelling", kettle, "30", `{"temperature":30,"autoStop":0,"unit":"Celsius"}`, "", ""},
		{"too hot", heater, "31", ``, CategoryRange, "above the maximum 30"},
		{"fraction", heater, "21.5", ``, CategoryType, "not a whole number"},
		{"unknown unit", heater, `{"temperature":20,"unit":"Kelvin"}`, ``, CategoryRange, `"Celsius", "Fahrenheit"`},
		{"unknown unit letter", heater, "20K", ``, CategoryRange, ""},
		{"word", heater, "warm", ``, CategoryFormat, "not a temperature"},
		{"missing temperature", heater, `{"unit":"C"}`, ``, CategoryMissing, "temperature"},
		{"unknown member", heater, `{"temperature":20,"mode":1}`, ``, CategoryFormat, "autoStop, temperature, unit"},
	})
}
