package capability

import "testing"

func TestDecodeIntegersAndColours(t *testing.T) {
	bright := fixtureCapability(t, "H6601", InstanceBrightness)
	rgb := fixtureCapability(t, "H6601", InstanceColorRGB)
	kelvin := fixtureCapability(t, "H6601", InstanceColorTemperatureK)
	runDecodeCases(t, []decodeCase{
		{"brightness number", bright, "40", `40`, "", ""},
		{"brightness numeric string", bright, `"40"`, `40`, "", ""},
		{"brightness whole float", bright, "40.0", `40`, "", ""},
		{"brightness fraction", bright, "40.5", ``, CategoryType, "not a whole number"},
		{"brightness too high: the unit named", bright, "150", ``, CategoryRange, "150% is above the maximum 100%"},
		{"kelvin too low: in kelvin", kelvin, "1500", ``, CategoryRange, "1500 K is below the minimum 2000 K"},
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
