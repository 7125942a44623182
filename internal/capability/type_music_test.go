package capability

import "testing"

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

func TestValidateSensitivityBoundWithoutRange(t *testing.T) {
	c := Capability{Type: TypeMusicSetting, Instance: InstanceMusicMode, Parameters: &Parameters{DataType: DataStruct, Fields: []Field{
		{FieldName: "musicMode", DataType: DataEnum, Required: true, Options: []Option{{Name: "A", Value: int64(1)}}},
		{FieldName: "sensitivity", DataType: DataInteger, Required: true},
		{FieldName: "rgb", DataType: DataInteger},
	}}}
	runValueCases(t, []valueCase{
		{"sensitivity 100", c, `{"musicMode":1,"sensitivity":100}`, "", ""},
		{"sensitivity 101", c, `{"musicMode":1,"sensitivity":101}`, CategoryRange, ""},
		{"rgb bounded", c, `{"musicMode":1,"sensitivity":1,"rgb":16777216}`, CategoryRange, ""},
	})
}
