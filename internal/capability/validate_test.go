package capability

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cloud2mqtt/internal/testkit"
)

const fixtureDir = "../../testdata"

// fixtureCapability returns the first capability of that instance on a
// device of that SKU.
func fixtureCapability(t testing.TB, sku, instance string) Capability {
	t.Helper()
	for _, d := range testkit.Devices[Device](t, fixtureDir) {
		if d.SKU != sku {
			continue
		}
		if c, ok := d.Capability(instance); ok {
			return c
		}
	}
	t.Fatalf("no capability %s on %s in the fixtures", instance, sku)
	return Capability{}
}

// fixtureFile decodes a file holding one capability definition.
func fixtureFile(t testing.TB, name string) Capability {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	var c Capability
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
	return c
}

// fixtureScenes returns the dynamic scene capability of scenes.json.
func fixtureScenes(t testing.TB) Capability {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, "scenes.json"))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	var body struct {
		Payload struct{ Capabilities []Capability }
	}
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("decode scenes.json: %v", err)
	}
	return body.Payload.Capabilities[0]
}

// js parses a JSON literal into normalised form.
func js(t testing.TB, s string) any {
	t.Helper()
	v, err := Normalize([]byte(s))
	if err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return v
}

// categoryOf returns the ValueError's category, "" for nil.
func categoryOf(t *testing.T, err error) Category {
	t.Helper()
	if err == nil {
		return ""
	}
	var ve *ValueError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v (%T) is not a *ValueError", err, err)
	}
	return ve.Category
}

type valueCase struct {
	name  string
	cap   Capability
	value string   // JSON
	want  Category // "" for valid
	msg   string   // substring of the message, when set
}

func runValueCases(t *testing.T, cases []valueCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.cap, js(t, tc.value))
			if got := categoryOf(t, err); got != tc.want {
				t.Fatalf("Validate(%s) = %v, want category %q", tc.value, err, tc.want)
			}
			if tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)) {
				t.Fatalf("Validate(%s) = %v, want a message containing %q", tc.value, err, tc.msg)
			}
		})
	}
}

func TestValueErrorText(t *testing.T) {
	e := &ValueError{Category: CategoryRange, Instance: "brightness", Msg: "150 is above the maximum 100"}
	if got, want := e.Error(), "brightness: parameter value out of range: 150 is above the maximum 100"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e = &ValueError{Category: CategoryDuplicate, Instance: "segmentedColorRgb", Field: "segment", Msg: "3 appears more than once"}
	if got, want := e.Error(), "segmentedColorRgb.segment: duplicate parameter value: 3 appears more than once"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if e.Code() != 400 {
		t.Errorf("Code() = %d for %s, want 400", e.Code(), e.Category)
	}
	if c := (&ValueError{Category: CategoryUnknown}).Code(); c != 404 {
		t.Errorf("Code() = %d for instance not found, want 404", c)
	}
}

func TestValidateBrightnessMessage(t *testing.T) {
	c := fixtureCapability(t, "H6601", InstanceBrightness)
	err := Validate(c, int64(150))
	if err == nil || err.Error() != "brightness: parameter value out of range: 150% is above the maximum 100%" {
		t.Fatalf("Validate(150) = %v", err)
	}
}

func TestValidateShapes(t *testing.T) {
	power := fixtureCapability(t, "H6601", InstancePower)
	toggle := fixtureCapability(t, "H7111", "oscillationToggle")
	rgb := fixtureCapability(t, "H6601", InstanceColorRGB)
	rgbNoRange := Capability{Type: TypeColorSetting, Instance: InstanceColorRGB, Parameters: &Parameters{DataType: DataInteger}}
	ct := fixtureCapability(t, "H6601", InstanceColorTemperatureK)
	nightScene := fixtureCapability(t, "H7131", "nightlightScene")
	bright := fixtureCapability(t, "H6601", InstanceBrightness)
	humidity := fixtureCapability(t, "H7141", InstanceHumidity)
	wmKettle := fixtureFile(t, "work-mode-issue-100.json")
	wm93 := fixtureFile(t, "work-mode-issue-93.json")
	wmHumid := fixtureFile(t, "work-mode-issue-81.json")
	wmGear := fixtureCapability(t, "H7131", InstanceWorkMode)
	wmPurifier := fixtureCapability(t, "H7121", InstanceWorkMode)
	segRGB := fixtureCapability(t, "H6072", InstanceSegmentedColorRGB)
	segRGBOpts := fixtureCapability(t, "H6601", InstanceSegmentedColorRGB)
	segBright := fixtureCapability(t, "H6052", InstanceSegmentBrightness)
	scenes := fixtureScenes(t)
	emptyScene := fixtureCapability(t, "H6072", InstanceLightScene)
	snapshot := fixtureCapability(t, "H6601", InstanceSnapshot)
	diy := fixtureCapability(t, "H605C", InstanceDIYScene) // type dynamic_setting: generic ENUM
	diyDynamic := fixtureCapability(t, "H6601", InstanceDIYScene)
	diyColor := Capability{Type: TypeDIYColorSetting, Instance: InstanceDIYScene, Parameters: &Parameters{DataType: DataEnum,
		Options: []Option{{Name: "Morning", Value: int64(42)}, {Name: "Evening", Value: int64(44)}}}}
	temp := fixtureCapability(t, "H7131", InstanceTargetTemperature)
	music := fixtureCapability(t, "H6601", InstanceMusicMode)
	music2 := fixtureCapability(t, "H6072", InstanceMusicMode)
	stepped := Capability{Type: TypeRange, Instance: "volume", Parameters: &Parameters{DataType: DataInteger, Range: &Range{Min: 10, Max: 50, Precision: 5}}}
	unknownType := Capability{Type: "devices.capabilities.something_new", Instance: "thing", Parameters: &Parameters{DataType: DataInteger, Range: &Range{Min: 0, Max: 3}}}

	runValueCases(t, []valueCase{
		// on_off / toggle
		{"power on", power, `1`, "", ""},
		{"power off", power, `0`, "", ""},
		{"power 2", power, `2`, CategoryRange, "on (1), off (0)"},
		{"power string", power, `"on"`, CategoryType, ""},
		{"power bool", power, `true`, CategoryType, ""},
		{"power null", power, `null`, CategoryMissing, ""},
		{"power empty string", power, `""`, CategoryEmpty, ""},
		{"toggle on", toggle, `1`, "", ""},
		{"toggle 5", toggle, `5`, CategoryRange, ""},
		{"toggle fraction", toggle, `0.5`, CategoryType, ""},
		// color_setting
		{"rgb red", rgb, `16711680`, "", ""},
		{"rgb max", rgb, `16777215`, "", ""},
		{"rgb above", rgb, `16777216`, CategoryRange, "above the maximum 16777215"},
		{"rgb negative", rgb, `-1`, CategoryRange, "below the minimum 0"},
		{"rgb no range still bounded", rgbNoRange, `16777216`, CategoryRange, ""},
		{"rgb no range ok", rgbNoRange, `255`, "", ""},
		{"rgb string", rgb, `"#ff0000"`, CategoryType, ""},
		{"rgb whole float", rgb, `5.0`, "", ""},
		{"kelvin in range", ct, `4000`, "", ""},
		{"kelvin below", ct, `1000`, CategoryRange, "below the minimum 2000"},
		{"kelvin fraction", ct, `4000.5`, CategoryType, "not a whole number"},
		// mode
		{"night scene", nightScene, `3`, "", ""},
		{"night scene unknown", nightScene, `9`, CategoryRange, "Flame (1)"},
		// range
		{"brightness", bright, `50`, "", ""},
		{"brightness zero", bright, `0`, CategoryRange, "below the minimum 1"},
		{"humidity", humidity, `55`, "", ""},
		{"humidity high", humidity, `71`, CategoryRange, ""},
		{"stepped on step", stepped, `25`, "", ""},
		{"stepped off step", stepped, `27`, CategoryRange, "step 5"},
		{"stepped huge float", stepped, `1e300`, CategoryRange, "too large"},
		{"range object", bright, `{"v":1}`, CategoryType, ""},
		{"range list", bright, `[1]`, CategoryType, ""},
		// unknown capability type: by dataType
		{"unknown type ok", unknownType, `2`, "", ""},
		{"unknown type range", unknownType, `4`, CategoryRange, ""},
		// work_mode
		{"kettle tea", wmKettle, `{"workMode":3,"modeValue":2}`, "", ""},
		{"kettle tea bad value", wmKettle, `{"workMode":3,"modeValue":7}`, CategoryRange, "mode Tea"},
		{"kettle boiling default", wmKettle, `{"workMode":2,"modeValue":0}`, "", ""},
		{"kettle boiling omitted", wmKettle, `{"workMode":2}`, "", ""},
		{"kettle boiling other", wmKettle, `{"workMode":2,"modeValue":3}`, CategoryRange, "mode Boiling takes only modeValue 0"},
		{"kettle unknown mode", wmKettle, `{"workMode":9,"modeValue":1}`, CategoryRange, "DIY (1)"},
		{"kettle no workMode", wmKettle, `{"modeValue":1}`, CategoryMissing, "workMode"},
		{"kettle extra member", wmKettle, `{"workMode":1,"speed":2}`, CategoryFormat, "allowed members are workMode, modeValue"},
		{"kettle not object", wmKettle, `3`, CategoryType, "expected an object"},
		{"kettle modeValue string", wmKettle, `{"workMode":3,"modeValue":"x"}`, CategoryType, ""},
		{"kettle modeValue null", wmKettle, `{"workMode":3,"modeValue":null}`, CategoryEmpty, ""},
		{"humidifier manual", wmHumid, `{"workMode":1,"modeValue":9}`, "", ""},
		{"humidifier manual missing value", wmHumid, `{"workMode":1}`, CategoryMissing, "mode Manual"},
		{"humidifier auto range", wmHumid, `{"workMode":3,"modeValue":60}`, "", ""},
		{"humidifier auto below", wmHumid, `{"workMode":3,"modeValue":39}`, CategoryRange, "below the minimum 40"},
		{"humidifier auto above", wmHumid, `{"workMode":3,"modeValue":81}`, CategoryRange, "above the maximum 80"},
		{"humidifier auto missing", wmHumid, `{"workMode":3}`, CategoryMissing, ""},
		{"humidifier custom omitted", wmHumid, `{"workMode":2}`, "", ""},
		{"fan speed", wm93, `{"workMode":1,"modeValue":8}`, "", ""},
		{"fan speed 9", wm93, `{"workMode":1,"modeValue":9}`, CategoryRange, ""},
		{"fan speed missing", wm93, `{"workMode":1}`, CategoryMissing, ""},
		{"fan storm default omitted", wm93, `{"workMode":7}`, "", ""},
		{"fan storm zero", wm93, `{"workMode":7,"modeValue":0}`, "", ""},
		{"heater gear", wmGear, `{"workMode":1,"modeValue":2}`, "", ""},
		{"heater fan mode", wmGear, `{"workMode":9,"modeValue":0}`, "", ""},
		{"purifier sleep", wmPurifier, `{"workMode":16}`, "", ""},
		// segment_color_setting
		{"segments rgb", segRGB, `{"segment":[0,1,2],"rgb":255}`, "", ""},
		{"segments rgb missing rgb", segRGB, `{"segment":[0]}`, CategoryMissing, "rgb"},
		{"segments missing segment", segRGB, `{"rgb":255}`, CategoryMissing, "segment"},
		{"segments not a list", segRGB, `{"segment":3,"rgb":255}`, CategoryType, "expected a list"},
		{"segments empty", segRGB, `{"segment":[],"rgb":255}`, CategoryEmpty, ""},
		{"segments too many", segRGB, `{"segment":[0,1,2,3,4,5,6,7,8],"rgb":255}`, CategoryLength, "allowed are 1 to 8"},
		{"segments element range", segRGB, `{"segment":[0,15],"rgb":255}`, CategoryRange, "element 1"},
		{"segments duplicate", segRGB, `{"segment":[2,2],"rgb":255}`, CategoryDuplicate, "2 appears more than once"},
		{"segments element string", segRGB, `{"segment":["a"],"rgb":255}`, CategoryType, ""},
		{"segments rgb too big", segRGB, `{"segment":[1],"rgb":16777216}`, CategoryRange, ""},
		{"segments options ok", segRGBOpts, `{"segment":[14],"rgb":1}`, "", ""},
		{"segments options out", segRGBOpts, `{"segment":[15],"rgb":1}`, CategoryRange, "not one of"},
		{"segment brightness", segBright, `{"segment":[0,14],"brightness":100}`, "", ""},
		{"segment brightness 101", segBright, `{"segment":[0],"brightness":101}`, CategoryRange, ""},
		{"segment brightness 15 ok", segBright, `{"segment":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14],"brightness":1}`, "", ""},
		// dynamic_scene
		{"scene object", scenes, `{"paramId":1681,"id":1606}`, "", ""},
		{"scene object unknown", scenes, `{"paramId":1,"id":2}`, CategoryRange, "Sunrise"},
		{"scene integer", scenes, `5`, CategoryType, ""},
		{"scene before list integer", emptyScene, `5`, "", ""},
		{"scene before list object", emptyScene, `{"paramId":1,"id":2}`, "", ""},
		{"scene before list string", emptyScene, `"Sunrise"`, CategoryType, ""},
		{"scene before list bad object", emptyScene, `{"id":2}`, CategoryType, ""},
		{"snapshot", snapshot, `1`, "", ""},
		{"snapshot unknown", snapshot, `2`, CategoryRange, "Sunset (1)"},
		{"diy scene other type", diy, `8216567`, "", ""},
		{"diy scene of a dynamic_scene", diyDynamic, `8216567`, "", ""},
		{"diy scene of a dynamic_scene unknown", diyDynamic, `8216568`, CategoryRange, "Fade (8216567)"},
		{"diy_color_setting from the diy endpoint", diyColor, `42`, "", ""},
		{"diy_color_setting unknown", diyColor, `43`, CategoryRange, "Morning (42)"},
		{"diy_color_setting object", diyColor, `{"paramId":1,"id":42}`, CategoryType, ""},
		{"diy scene wrong", diy, `1`, CategoryRange, ""},
		// temperature_setting
		{"temperature full", temp, `{"autoStop":0,"temperature":22,"unit":"Celsius"}`, "", ""},
		{"temperature only", temp, `{"temperature":22}`, "", ""},
		{"temperature high", temp, `{"temperature":31}`, CategoryRange, "above the maximum 30"},
		{"temperature unit wrong", temp, `{"temperature":22,"unit":"Kelvin"}`, CategoryRange, "Fahrenheit"},
		{"temperature unit int", temp, `{"temperature":22,"unit":1}`, CategoryType, ""},
		{"temperature missing", temp, `{"unit":"Celsius"}`, CategoryMissing, "temperature"},
		{"temperature autoStop 2", temp, `{"temperature":22,"autoStop":2}`, CategoryRange, ""},
		{"temperature empty member", temp, `{"temperature":""}`, CategoryEmpty, ""},
		// music_setting
		{"music full", music, `{"musicMode":3,"sensitivity":50,"autoColor":1,"rgb":255}`, "", ""},
		{"music no rgb required", music, `{"musicMode":3,"sensitivity":50}`, CategoryMissing, "rgb"},
		{"music no rgb optional", music2, `{"musicMode":3,"sensitivity":50}`, "", ""},
		{"music sensitivity high", music2, `{"musicMode":3,"sensitivity":101}`, CategoryRange, "above the maximum 100"},
		{"music mode unknown", music2, `{"musicMode":9,"sensitivity":1}`, CategoryRange, "Energic (1)"},
		{"music sensitivity missing", music2, `{"musicMode":1}`, CategoryMissing, "sensitivity"},
		{"music empty object", music2, `{}`, CategoryMissing, ""},
	})
}

func TestValidateReadOnly(t *testing.T) {
	for _, c := range []Capability{
		fixtureCapability(t, "H7131", InstanceSensorTemperature),
		fixtureCapability(t, "H7141", "lackWaterEvent"),
		{Type: TypeOnline, Instance: InstanceOnline},
		{Type: TypeOnOff, Instance: InstancePower}, // no parameters
	} {
		err := Validate(c, int64(1))
		if got := categoryOf(t, err); got != CategoryUnknown {
			t.Errorf("Validate(%s) = %v, want %q", c.Instance, err, CategoryUnknown)
			continue
		}
		if !strings.Contains(err.Error(), "read-only") {
			t.Errorf("Validate(%s) = %v, want it to say read-only", c.Instance, err)
		}
		if code := err.(*ValueError).Code(); code != 404 {
			t.Errorf("Code() = %d, want 404", code)
		}
	}
}

// TestValidateAcceptsHandBuiltValues: ints and whole floats as callers may
// build them without Normalize.
func TestValidateAcceptsHandBuiltValues(t *testing.T) {
	c := fixtureCapability(t, "H6072", InstanceSegmentedColorRGB)
	v := map[string]any{"segment": []int{0, 1}, "rgb": 255}
	if err := Validate(c, v); err != nil {
		t.Fatalf("Validate(%v) = %v", v, err)
	}
	if err := Validate(fixtureCapability(t, "H6601", InstanceBrightness), 50.0); err != nil {
		t.Fatalf("Validate(50.0) = %v", err)
	}
}

// TestExampleEveryFixtureCapability: every controllable capability of every
// recorded device yields a value that its own definition accepts, the same
// each time; read-only ones and empty scene lists yield none.
func TestExampleEveryFixtureCapability(t *testing.T) {
	caps := allFixtureCapabilities(t)
	withExample := 0
	for _, fc := range caps {
		c := fc.cap
		v, ok := Example(c)
		if !ok {
			emptyEnum := c.Parameters != nil && c.Parameters.DataType == DataEnum && len(c.Parameters.Options) == 0
			if c.Controllable() && !emptyEnum {
				t.Errorf("%s: no exampleFor for controllable %s", fc.name, c.Type)
			}
			continue
		}
		withExample++
		if err := Validate(c, v); err != nil {
			t.Errorf("%s: exampleFor %s rejected: %v", fc.name, showValue(v), err)
		}
		again, _ := Example(c)
		if !Equal(v, again) {
			t.Errorf("%s: exampleFor not deterministic: %s then %s", fc.name, showValue(v), showValue(again))
		}
		// The value marshals and reads back the same.
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: marshal exampleFor: %v", fc.name, err)
		}
		if back := js(t, string(b)); !Equal(back, v) {
			t.Errorf("%s: exampleFor %s does not survive JSON", fc.name, b)
		}
	}
	if withExample < 100 {
		t.Errorf("only %d capabilities had an exampleFor; the fixtures hold far more", withExample)
	}
}

func TestExampleValues(t *testing.T) {
	cases := []struct {
		name string
		cap  Capability
		want string
	}{
		{"power first option", fixtureCapability(t, "H6601", InstancePower), `1`},
		{"brightness minimum", fixtureCapability(t, "H6601", InstanceBrightness), `1`},
		{"kelvin minimum", fixtureCapability(t, "H6601", InstanceColorTemperatureK), `2000`},
		{"segments smallest size", fixtureCapability(t, "H6072", InstanceSegmentedColorRGB), `{"segment":[0],"rgb":0}`},
		{"temperature with defaults", fixtureCapability(t, "H7131", InstanceTargetTemperature), `{"autoStop":0,"temperature":5,"unit":"Celsius"}`},
		{"kettle first mode DIY optional value", fixtureFile(t, "work-mode-issue-100.json"), `{"workMode":1}`},
		{"humidifier manual required value", fixtureFile(t, "work-mode-issue-81.json"), `{"workMode":1,"modeValue":1}`},
		{"purifier default modeValue", fixtureCapability(t, "H7121", InstanceWorkMode), `{"workMode":3,"modeValue":0}`},
		{"music required members", fixtureCapability(t, "H6601", InstanceMusicMode), `{"musicMode":5,"sensitivity":0,"rgb":0}`},
		{"scene object", fixtureScenes(t), `{"paramId":11837,"id":7691}`},
		{"stepped", Capability{Type: TypeRange, Instance: "v", Parameters: &Parameters{DataType: DataInteger, Range: &Range{Min: 3, Max: 20, Precision: 5}}}, `3`},
		{"array min size 3", Capability{Type: "x", Instance: "y", Parameters: &Parameters{DataType: DataStruct, Fields: []Field{
			{FieldName: "segment", DataType: DataArray, Required: true, Size: &Range{Min: 3, Max: 5}, ElementRange: &Range{Min: 2, Max: 9}}}}}, `{"segment":[2,3,4]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := Example(tc.cap)
			if !ok || !Equal(v, js(t, tc.want)) {
				t.Fatalf("Example = %s, %v; want %s", showValue(v), ok, tc.want)
			}
		})
	}
	for _, c := range []Capability{
		fixtureCapability(t, "H6072", InstanceLightScene),
		fixtureCapability(t, "H7131", InstanceSensorTemperature),
		{Type: "x", Instance: "y", Parameters: &Parameters{DataType: DataStruct, Fields: []Field{
			{FieldName: "segment", DataType: DataArray, Required: true, Size: &Range{Min: 3, Max: 5}, ElementRange: &Range{Min: 0, Max: 1}}}}},
	} {
		if v, ok := Example(c); ok {
			t.Errorf("Example(%s) = %s, want none", c.Instance, showValue(v))
		}
	}
}

func TestWithDefaults(t *testing.T) {
	temp := fixtureCapability(t, "H7131", InstanceTargetTemperature)
	tempNoDefaults := Capability{Type: TypeTemperature, Instance: InstanceTargetTemperature, Parameters: &Parameters{DataType: DataStruct, Fields: []Field{
		{FieldName: "autoStop", DataType: DataEnum, Options: []Option{{Name: "Auto Stop", Value: int64(1)}, {Name: "Maintain", Value: int64(0)}}},
		{FieldName: "temperature", DataType: DataInteger, Required: true, Range: &Range{Min: 5, Max: 30}},
		{FieldName: "unit", DataType: DataEnum, Required: true, Options: []Option{{Name: "Celsius", Value: "Celsius"}, {Name: "Fahrenheit", Value: "Fahrenheit"}}},
	}}}
	cases := []struct {
		name      string
		cap       Capability
		in, want  string
		validates bool
	}{
		{"temperature from definition defaults", temp, `{"temperature":20}`, `{"temperature":20,"autoStop":0,"unit":"Celsius"}`, true},
		{"temperature valueSpec defaults", tempNoDefaults, `{"temperature":20}`, `{"temperature":20,"autoStop":0,"unit":"Celsius"}`, true},
		{"temperature keeps given", temp, `{"temperature":72,"unit":"Fahrenheit","autoStop":1}`, `{"temperature":72,"unit":"Fahrenheit","autoStop":1}`, true},
		{"null member takes default", temp, `{"temperature":20,"unit":null}`, `{"temperature":20,"autoStop":0,"unit":"Celsius"}`, true},
		{"work mode dependent default", fixtureCapability(t, "H7121", InstanceWorkMode), `{"workMode":16}`, `{"workMode":16,"modeValue":0}`, true},
		{"work mode custom default", fixtureFile(t, "work-mode-issue-81.json"), `{"workMode":2}`, `{"workMode":2,"modeValue":0}`, true},
		{"work mode options no default", fixtureFile(t, "work-mode-issue-81.json"), `{"workMode":1}`, `{"workMode":1}`, false},
		{"null without default dropped", fixtureCapability(t, "H6072", InstanceMusicMode), `{"musicMode":1,"sensitivity":3,"rgb":null}`, `{"musicMode":1,"sensitivity":3}`, true},
		{"not an object untouched", temp, `22`, `22`, false},
		{"plain capability untouched", fixtureCapability(t, "H6601", InstanceBrightness), `7`, `7`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := js(t, tc.in)
			before := js(t, tc.in)
			got := WithDefaults(tc.cap, in)
			if !Equal(got, js(t, tc.want)) {
				t.Fatalf("WithDefaults(%s) = %s, want %s", tc.in, showValue(got), tc.want)
			}
			if !Equal(in, before) {
				t.Fatalf("WithDefaults modified its input: %s", showValue(in))
			}
			if err := Validate(tc.cap, got); (err == nil) != tc.validates {
				t.Fatalf("Validate(%s) = %v, want valid=%v", showValue(got), err, tc.validates)
			}
		})
	}
}

type namedCap struct {
	name string
	cap  Capability
}

// allFixtureCapabilities lists every capability of the fixtures: device
// lists, the single work-mode files and the scene list.
func allFixtureCapabilities(t testing.TB) []namedCap {
	t.Helper()
	var out []namedCap
	for _, d := range testkit.Devices[Device](t, fixtureDir) {
		for _, c := range d.Capabilities {
			out = append(out, namedCap{d.SKU + "/" + d.Device + "/" + c.Instance, c})
		}
	}
	for _, f := range []string{"work-mode-issue-81.json", "work-mode-issue-93.json", "work-mode-issue-100.json"} {
		out = append(out, namedCap{f, fixtureFile(t, f)})
	}
	out = append(out, namedCap{"scenes.json", fixtureScenes(t)})
	return out
}

func TestOverlay(t *testing.T) {
	cur := map[string]any{"musicMode": int64(1), "sensitivity": int64(60), "rgb": int64(5)}
	got := Overlay(cur, map[string]any{"musicMode": int64(3)})
	want := map[string]any{"musicMode": int64(3), "sensitivity": int64(60), "rgb": int64(5)}
	if !Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if !Equal(cur["musicMode"], int64(1)) {
		t.Error("Overlay modified the current value")
	}
	if !Equal(Overlay(nil, int64(4)), int64(4)) {
		t.Error("a partial value that is not an object must pass through")
	}
	if !Equal(Overlay(int64(7), map[string]any{"a": int64(1)}), map[string]any{"a": int64(1)}) {
		t.Error("an object over a non-object must pass through")
	}
}
