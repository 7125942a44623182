package capability

import "testing"

func TestDecodeOnOff(t *testing.T) {
	power := fixtureCapability(t, "H6601", InstancePower)
	toggle := fixtureCapability(t, "H7131", "nightlightToggle")
	noOptions := Capability{Type: TypeToggle, Instance: "socketToggle1", Parameters: &Parameters{DataType: DataEnum}}
	autoColor := Capability{Type: "devices.capabilities.custom", Instance: "autoThing", Parameters: &Parameters{DataType: DataEnum,
		Options: []Option{{Name: "off", Value: int64(0)}, {Name: "on", Value: int64(1)}}}}
	var cases []decodeCase
	for _, in := range []string{"on", "ON", "On", "true", "TRUE", "yes", "1", `"1"`, `"on"`, " on "} {
		cases = append(cases, decodeCase{"power " + in, power, in, `1`, "", ""})
	}
	for _, in := range []string{"off", "OFF", "false", "no", "0", `"off"`} {
		cases = append(cases, decodeCase{"power " + in, power, in, `0`, "", ""})
	}
	cases = append(cases,
		decodeCase{"toggle on", toggle, "ON", `1`, "", ""},
		decodeCase{"toggle false", toggle, "false", `0`, "", ""},
		decodeCase{"toggle without options yes", noOptions, "yes", `1`, "", ""},
		decodeCase{"toggle without options bad word", noOptions, "maybe", ``, CategoryFormat, "send on, off, 1 or 0"},
		decodeCase{"toggle without options 2", noOptions, "2", ``, CategoryRange, ""},
		decodeCase{"any on/off enum", autoColor, "true", `1`, "", ""},
		decodeCase{"power maybe", power, "maybe", ``, CategoryRange, "on, off, true, false"},
		decodeCase{"power 2", power, "2", ``, CategoryRange, "on (1), off (0)"},
		decodeCase{"power empty", power, "", ``, CategoryEmpty, ""},
		decodeCase{"power null", power, "null", ``, CategoryMissing, ""},
		decodeCase{"power object", power, `{"on":1}`, ``, CategoryType, ""},
	)
	runDecodeCases(t, cases)
}
