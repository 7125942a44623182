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
