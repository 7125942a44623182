package capability

import "testing"

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
