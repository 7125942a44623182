package capability

import (
	"bytes"
	"strings"
	"testing"
)

// payload is what the bridge makes of an MQTT payload: the JSON value when
// it is one, else the trimmed text as valid UTF-8 (the bridge's own parsing
// is tested in internal/bridge).
func payload(b []byte) any {
	t := bytes.TrimSpace(b)
	if v, err := Normalize(t); err == nil && len(t) > 0 {
		return v
	}
	return strings.ToValidUTF8(string(t), "\uFFFD")
}

type decodeCase struct {
	name  string
	cap   Capability
	input string // MQTT payload, through payload
	want  string // JSON of the cloud value when valid
	cat   Category
	msg   string // substring of the error
}

func runDecodeCases(t *testing.T, cases []decodeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.cap, payload([]byte(tc.input)))
			if tc.cat != "" {
				if c := categoryOf(t, err); c != tc.cat {
					t.Fatalf("Decode(%s) = %s, %v; want category %q", tc.input, showValue(got), err, tc.cat)
				}
				if tc.msg != "" && !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("Decode(%s) error %q does not contain %q", tc.input, err, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode(%s) = %v", tc.input, err)
			}
			if want := js(t, tc.want); !Equal(got, want) {
				t.Fatalf("Decode(%s) = %s, want %s", tc.input, showValue(got), tc.want)
			}
		})
	}
}

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

func TestDecodeEnumNames(t *testing.T) {
	night := fixtureCapability(t, "H7131", "nightlightScene")
	named := Capability{Type: TypeMode, Instance: "presetScene", Parameters: &Parameters{DataType: DataEnum,
		Options: []Option{{Name: "Night Light", Value: int64(7)}, {Name: "Reading", Value: int64(8)}}}}
	scenes := fixtureScenes(t)
	emptyScenes := fixtureCapability(t, "H6072", InstanceLightScene)
	snapshot := fixtureCapability(t, "H6601", InstanceSnapshot)
	diy := fixtureCapability(t, "H605C", InstanceDIYScene)
	diyColor := Capability{Type: TypeDIYColorSetting, Instance: InstanceDIYScene, Parameters: &Parameters{DataType: DataEnum,
		Options: []Option{{Name: "Morning", Value: int64(42)}, {Name: "Evening", Value: int64(44)}}}}
	runDecodeCases(t, []decodeCase{
		{"mode by name", night, "Rainbow", `2`, "", ""},
		{"mode by lower name", night, "rainbow", `2`, "", ""},
		{"mode by value", night, "4", `4`, "", ""},
		{"mode by numeric string", night, `"4"`, `4`, "", ""},
		{"mode unknown name lists names", night, "Disco", ``, CategoryRange, `"Flame", "Rainbow"`},
		{"mode unknown value", night, "6", ``, CategoryRange, "Sleep (5)"},
		{"name with space", named, "night light", `7`, "", ""},
		{"name in capitals with underscore", named, "NIGHT_LIGHT", `7`, "", ""},
		{"name exact", named, "Night Light", `7`, "", ""},
		{"scene by name", scenes, "Sunrise", `{"paramId":1681,"id":1606}`, "", ""},
		{"scene by name with spaces", scenes, "sunset glow", `{"paramId":1685,"id":1610}`, "", ""},
		{"scene by object", scenes, `{"paramId":1681,"id":1606}`, `{"paramId":1681,"id":1606}`, "", ""},
		{"scene unknown name", scenes, "Disco Inferno", ``, CategoryRange, "rainbow B"},
		{"scene before list loaded by name", emptyScenes, "Sunrise", ``, CategoryRange, "scenes not loaded"},
		{"scene before list loaded by value", emptyScenes, "12", `12`, "", ""},
		{"snapshot by name", snapshot, "sunset", `1`, "", ""},
		{"diy on a non-spec type", diy, "FADE", `8216567`, "", ""},
		{"diy scene from the diy endpoint", diyColor, "evening", `44`, "", ""},
		{"float for enum", night, "2.5", ``, CategoryType, "not a whole number"},
	})
}

func TestDecodeIntegersAndColours(t *testing.T) {
	bright := fixtureCapability(t, "H6601", InstanceBrightness)
	rgb := fixtureCapability(t, "H6601", InstanceColorRGB)
	kelvin := fixtureCapability(t, "H6601", InstanceColorTemperatureK)
	runDecodeCases(t, []decodeCase{
		{"brightness number", bright, "40", `40`, "", ""},
		{"brightness numeric string", bright, `"40"`, `40`, "", ""},
		{"brightness whole float", bright, "40.0", `40`, "", ""},
		{"brightness fraction", bright, "40.5", ``, CategoryType, "not a whole number"},
		{"brightness too high", bright, "150", ``, CategoryRange, "150 is above the maximum 100"},
		{"brightness word", bright, "bright", ``, CategoryType, "expected an integer"},
		{"kelvin", kelvin, "2700", `2700`, "", ""},
		{"colour hash", rgb, "#ff0000", `16711680`, "", ""},
		{"colour hash upper", rgb, "#00FF00", `65280`, "", ""},
		{"colour bare hex", rgb, "0000ff", `255`, "", ""},
		{"colour bare hex digits only", rgb, `"000100"`, `256`, "", ""},
		{"colour triple", rgb, "255,0,0", `16711680`, "", ""},
		{"colour triple spaces", rgb, "0, 255, 0", `65280`, "", ""},
		{"colour object", rgb, `{"r":0,"g":0,"b":255}`, `255`, "", ""},
		{"colour object capitals", rgb, `{"R":1,"G":2,"B":3}`, `66051`, "", ""},
		{"colour list", rgb, `[255,255,255]`, `16777215`, "", ""},
		{"colour integer", rgb, "16711680", `16711680`, "", ""},
		{"colour integer too big", rgb, "16777216", ``, CategoryRange, ""},
		{"colour component too big", rgb, "256,0,0", ``, CategoryRange, "component r"},
		{"colour component negative", rgb, `[0,-1,0]`, ``, CategoryRange, "component g"},
		{"colour component fraction", rgb, `[0,0,0.5]`, ``, CategoryType, "component b"},
		{"colour two components", rgb, `[1,2]`, ``, CategoryLength, "3 elements"},
		{"colour object missing b", rgb, `{"r":1,"g":2}`, ``, CategoryMissing, "member b"},
		{"colour object extra", rgb, `{"r":1,"g":2,"b":3,"w":4}`, ``, CategoryFormat, `"w"`},
		{"colour object r twice", rgb, `{"r":1,"R":2,"g":2,"b":3}`, ``, CategoryDuplicate, ""},
		{"colour bad hex", rgb, "#gg0000", ``, CategoryFormat, "#RRGGBB"},
		{"colour word", rgb, "red", ``, CategoryFormat, "#RRGGBB"},
		{"colour short hex", rgb, "#fff", ``, CategoryFormat, ""},
	})
}

func TestDecodeWorkMode(t *testing.T) {
	humid := fixtureFile(t, "work-mode-issue-81.json")
	kettle := fixtureFile(t, "work-mode-issue-100.json")
	fan := fixtureFile(t, "work-mode-issue-93.json")
	heater := fixtureCapability(t, "H7131", InstanceWorkMode)
	purifier := fixtureCapability(t, "H7121", InstanceWorkMode)
	runDecodeCases(t, []decodeCase{
		{"name with default modeValue", humid, "Custom", `{"workMode":2,"modeValue":0}`, "", ""},
		{"name needing a value", humid, "Auto", ``, CategoryMissing, "from 40 to 80"},
		{"object with names", humid, `{"workMode":"Manual","modeValue":3}`, `{"workMode":1,"modeValue":3}`, "", ""},
		{"object in lower case", humid, `{"workmode":"auto","ModeValue":"60"}`, `{"workMode":3,"modeValue":60}`, "", ""},
		{"cloud form", humid, `{"workMode":3,"modeValue":60}`, `{"workMode":3,"modeValue":60}`, "", ""},
		{"auto out of range", humid, `{"workMode":"Auto","modeValue":90}`, ``, CategoryRange, "above the maximum 80"},
		{"unknown mode name", humid, "Turbo", ``, CategoryRange, `"Manual", "Custom", "Auto"`},
		{"member twice", humid, `{"workMode":1,"work_mode":2}`, ``, CategoryDuplicate, "given twice"},
		{"unknown member", humid, `{"workMode":1,"speed":2}`, ``, CategoryFormat, "allowed members are workMode, modeValue"},
		{"kettle tea", kettle, `{"workMode":"tea","modeValue":2}`, `{"workMode":3,"modeValue":2}`, "", ""},
		{"kettle DIY without value", kettle, "DIY", `{"workMode":1}`, "", ""},
		{"kettle boiling", kettle, "boiling", `{"workMode":2,"modeValue":0}`, "", ""},
		{"fan storm", fan, "STORM", `{"workMode":7,"modeValue":0}`, "", ""},
		{"fan speed needs a value", fan, "FanSpeed", ``, CategoryMissing, "modeValue"},
		{"fan speed by value", fan, `{"workMode":"fan speed","modeValue":8}`, `{"workMode":1,"modeValue":8}`, "", ""},
		{"mode by number", fan, "3", `{"workMode":3,"modeValue":0}`, "", ""},
		{"heater gear by names", heater, `{"workMode":"gearMode","modeValue":"High"}`, `{"workMode":1,"modeValue":3}`, "", ""},
		{"heater gear unknown name", heater, `{"workMode":"gearMode","modeValue":"Turbo"}`, ``, CategoryRange, `"Low", "Medium", "High"`},
		{"purifier sleep", purifier, "sleep", `{"workMode":16,"modeValue":0}`, "", ""},
		{"list is no work mode", purifier, `[1]`, ``, CategoryType, "expected an object"},
	})
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

func TestDecodeMusic(t *testing.T) {
	music := fixtureCapability(t, "H6601", InstanceMusicMode) // rgb required
	music2 := fixtureCapability(t, "H6072", InstanceMusicMode)
	runDecodeCases(t, []decodeCase{
		{"by name, rgb required", music, "Rhythm", `{"musicMode":3,"sensitivity":100,"rgb":16777215,"autoColor":1}`, "", ""},
		{"by name", music2, "bounce", `{"musicMode":3,"sensitivity":100}`, "", ""},
		{"by value", music2, "2", `{"musicMode":2,"sensitivity":100}`, "", ""},
		{"object friendly", music2, `{"musicMode":"Strike","sensitivity":"40","autoColor":"off","rgb":"#00ff00"}`,
			`{"musicMode":5,"sensitivity":40,"autoColor":0,"rgb":65280}`, "", ""},
		{"object rgb list", music, `{"musicMode":"Energic","sensitivity":10,"rgb":[0,0,255]}`, `{"musicMode":5,"sensitivity":10,"rgb":255}`, "", ""},
		{"cloud form", music2, `{"musicMode":1,"sensitivity":5}`, `{"musicMode":1,"sensitivity":5}`, "", ""},
		{"sensitivity too high", music2, `{"musicMode":1,"sensitivity":120}`, ``, CategoryRange, "above the maximum 100"},
		{"unknown mode", music2, "Polka", ``, CategoryRange, `"Energic"`},
		{"missing mode", music2, `{"sensitivity":5}`, ``, CategoryMissing, "musicMode"},
	})
}

func TestDecodeSegments(t *testing.T) {
	seg := fixtureCapability(t, "H6072", InstanceSegmentedColorRGB)     // size 1..8, elements 0..14
	segWide := fixtureCapability(t, "H6052", InstanceSegmentBrightness) // size 1..15
	segOpts := fixtureCapability(t, "H6601", InstanceSegmentedColorRGB) // option list 0..14
	runDecodeCases(t, []decodeCase{
		{"list", seg, `{"segment":[0,1],"rgb":"#ff0000"}`, `{"segment":[0,1],"rgb":16711680}`, "", ""},
		{"single index", seg, `{"segment":3,"rgb":255}`, `{"segment":[3],"rgb":255}`, "", ""},
		{"range string", seg, `{"segment":"0-4,7","rgb":"255,0,0"}`, `{"segment":[0,1,2,3,4,7],"rgb":16711680}`, "", ""},
		{"numeric strings in list", seg, `{"segment":["1","2"],"rgb":1}`, `{"segment":[1,2],"rgb":1}`, "", ""},
		{"all on a wide strip", segWide, `{"segment":"all","brightness":"50"}`, `{"segment":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14],"brightness":50}`, "", ""},
		{"all from options", segOpts, `{"segment":"ALL","rgb":1}`, `{"segment":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14],"rgb":1}`, "", ""},
		{"all exceeds size", seg, `{"segment":"all","rgb":1}`, ``, CategoryLength, "allowed are 1 to 8"},
		{"reversed range", seg, `{"segment":"4-0","rgb":1}`, ``, CategoryFormat, "lower index first"},
		{"garbage", seg, `{"segment":"a,b","rgb":1}`, ``, CategoryFormat, "0-4,7"},
		{"huge range", seg, `{"segment":"0-99999999999","rgb":1}`, ``, CategoryLength, "more than 1024"},
		{"duplicate", seg, `{"segment":"1,1","rgb":1}`, ``, CategoryDuplicate, "1 appears more than once"},
		{"out of range", seg, `{"segment":"14-15","rgb":1}`, ``, CategoryRange, "above the maximum 14"},
		{"empty string", seg, `{"segment":"","rgb":1}`, ``, CategoryEmpty, ""},
		{"missing colour", seg, `{"segment":[1]}`, ``, CategoryMissing, "rgb"},
		{"scalar for a segment struct", seg, `5`, ``, CategoryType, "members segment, rgb"},
	})
}

func TestDecodeReadOnly(t *testing.T) {
	c := fixtureCapability(t, "H7121", "airQuality")
	_, err := Decode(c, "5")
	if categoryOf(t, err) != CategoryUnknown || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("Decode on a property = %v, want a read-only instance-not-found error", err)
	}
}

// TestDecodeDoesNotModifyInput: the caller's value (maybe shared state) is
// never changed.
func TestDecodeDoesNotModifyInput(t *testing.T) {
	c := fixtureCapability(t, "H7131", InstanceTargetTemperature)
	in := js(t, `{"Temperature":"22","unit":"c"}`)
	if _, err := Decode(c, in); err != nil {
		t.Fatal(err)
	}
	if !Equal(in, js(t, `{"Temperature":"22","unit":"c"}`)) {
		t.Fatalf("Decode changed its input to %s", showValue(in))
	}
}

// TestDecodeCloudFormIsFixedPoint: every example value, the cloud form,
// decodes to itself for every fixture capability.
func TestDecodeCloudFormIsFixedPoint(t *testing.T) {
	for _, fc := range allFixtureCapabilities(t) {
		v, ok := Example(fc.cap)
		if !ok {
			continue
		}
		got, err := Decode(fc.cap, v)
		if err != nil {
			t.Errorf("%s: Decode(%s) = %v", fc.name, showValue(v), err)
			continue
		}
		if !Equal(got, v) {
			t.Errorf("%s: Decode(%s) = %s, want it unchanged", fc.name, showValue(v), showValue(got))
		}
	}
}
