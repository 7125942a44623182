package cloudsim

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"cloud2mqtt/internal/capability"
)

const fixtures = "../../testdata"

func fixtureFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(fixtures, "list_devices*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixture catalogues under %s: %v", fixtures, err)
	}
	return files
}

// Every real device list loads, and the device-list endpoint serves it back
// unchanged: unknown types (devices.types.fan, dynamic_setting) included.
func TestFixtureCataloguesLoadAndRoundTrip(t *testing.T) {
	for _, path := range fixtureFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			cat, err := LoadCatalogue(path)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var want struct{ Data []any }
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			if len(cat.Devices) != len(want.Data) || len(cat.Devices) == 0 {
				t.Fatalf("loaded %d devices, file has %d", len(cat.Devices), len(want.Data))
			}
			h := start(t, Options{Catalogue: cat})
			r := h.list()
			if r.status != 200 || r.code() != 200 || r.msg() != "success" {
				t.Fatalf("list: %d %s", r.status, r.raw)
			}
			var got struct{ Data []any }
			if err := json.Unmarshal(r.raw, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Data, want.Data) {
				t.Fatalf("device list differs from the catalogue file")
			}
			// Every device answers a state query, with online first.
			for _, d := range cat.Devices {
				st := h.state(d.SKU, d.Device.Device)
				if st.code() != 200 {
					t.Fatalf("state of %s: %s", d.Device.Device, st.raw)
				}
				if v := stateValues(t, st)["online"]; v != true {
					t.Fatalf("state of %s: online = %v", d.Device.Device, v)
				}
			}
		})
	}
}

func TestCatalogueUnknownTypesKept(t *testing.T) {
	cat, err := LoadCatalogue(filepath.Join(fixtures, "list_devices_issue4.json"))
	if err != nil {
		t.Fatal(err)
	}
	fan := cat.Devices[0]
	if fan.Type != "devices.types.fan" {
		t.Fatalf("fan type = %q", fan.Type)
	}
	cat, err = LoadCatalogue(filepath.Join(fixtures, "list_devices.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, ok := cat.Devices[1].Capability("diyScene")
	if !ok || c.Type != "devices.capabilities.dynamic_setting" {
		t.Fatalf("H605C diyScene = %+v", c)
	}
}

func TestParseCatalogueErrors(t *testing.T) {
	cases := map[string]string{
		"empty":        ``,
		"not json":     `{"data":[`,
		"no data":      `{"code":200,"message":"success"}`,
		"no device id": `{"data":[{"sku":"H1","capabilities":[]}]}`,
		"no sku":       `[{"device":"A","capabilities":[]}]`,
		"duplicate":    `[{"sku":"H1","device":"A","capabilities":[]},{"sku":"H2","device":"A","capabilities":[]}]`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseCatalogue([]byte(in)); err == nil || !strings.HasPrefix(err.Error(), "cloudsim: ") {
				t.Fatalf("err = %v, want a cloudsim error", err)
			}
		})
	}
	if _, err := LoadCatalogue(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("missing file loaded")
	}
	cat, err := ParseCatalogue([]byte(`[{"sku":"H1","device":"A","capabilities":[]}]`))
	if err != nil || len(cat.Devices) != 1 {
		t.Fatalf("bare array: %v %v", cat, err)
	}
}

func TestParseSceneList(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(fixtures, "scenes.json"))
	if err != nil {
		t.Fatal(err)
	}
	opts, err := ParseSceneList(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(opts) != 65 {
		t.Fatalf("%d scenes, want 65", len(opts))
	}
	if m, ok := opts[0].Value.(map[string]any); !ok || m["paramId"] != int64(11837) || m["id"] != int64(7691) {
		t.Fatalf("first scene = %+v", opts[0])
	}
	if _, err := ParseSceneList([]byte(`{"code":200}`)); err == nil {
		t.Fatal("answer without payload accepted")
	}
	bare, err := ParseSceneList([]byte(`[{"name":"A","value":1}]`))
	if err != nil || len(bare) != 1 {
		t.Fatalf("bare array: %v %v", bare, err)
	}
}

// The demo catalogue has every device type of the spec and every capability
// family the bridge must handle.
func TestDemoCatalogueCoverage(t *testing.T) {
	cat := DemoCatalogue()
	types := map[string]bool{}
	ids := map[string]bool{}
	skus := map[string]bool{}
	for _, d := range cat.Devices {
		types[d.Type] = true
		if d.Name == "" {
			t.Errorf("%s has no deviceName", d.Device.Device)
		}
		if !strings.HasPrefix(d.Device.Device, "AA:BB:CC:DD:EE:FF:10:") {
			t.Errorf("id %s does not follow AA:BB:CC:DD:EE:FF:10:nn", d.Device.Device)
		}
		if skus[d.SKU] {
			t.Errorf("sku %s used twice", d.SKU)
		}
		ids[d.Device.Device], skus[d.SKU] = true, true
		if len(d.Problems) > 0 {
			t.Errorf("%s: %v", d.Device.Device, d.Problems)
		}
	}
	for _, typ := range []string{
		capability.DeviceLight, capability.DeviceAirPurifier, capability.DeviceThermometer, capability.DeviceSocket,
		capability.DeviceSensor, capability.DeviceHeater, capability.DeviceHumidifier, capability.DeviceDehumidifier,
		capability.DeviceIceMaker, capability.DeviceAromaDiffuser, capability.DeviceBox, capability.DeviceAirQualityMonitor,
		"devices.types.fan",
	} {
		if !types[typ] {
			t.Errorf("no demo device of type %s", typ)
		}
	}

	// has reports whether a device of the type has every instance listed
	// (type:instance, or instance alone), with a check on the capability.
	type want struct {
		deviceType string
		caps       []string
		check      func(map[string]capability.Capability) bool
	}
	nonEmptyOptions := func(inst string) func(map[string]capability.Capability) bool {
		return func(m map[string]capability.Capability) bool {
			p := m[inst].Parameters
			return p != nil && len(p.Options) > 0
		}
	}
	families := map[string]want{
		"segmented light":     {capability.DeviceLight, []string{"segment_color_setting:segmentedColorRgb", "segment_color_setting:segmentedBrightness", "color_setting:colorRgb", "color_setting:colorTemperatureK", "toggle:gradientToggle", "music_setting:musicMode", "dynamic_scene:diyScene", "dynamic_scene:snapshot"}, nil},
		"static light scenes": {capability.DeviceLight, []string{"dynamic_scene:lightScene"}, nonEmptyOptions("lightScene")},
		"snapshots":           {capability.DeviceLight, []string{"dynamic_scene:snapshot"}, nonEmptyOptions("snapshot")},
		"DIY in the list":     {capability.DeviceLight, []string{"dynamic_scene:diyScene"}, nonEmptyOptions("diyScene")},
		"dynamic scenes only": {capability.DeviceLight, []string{"dynamic_scene:lightScene"}, func(m map[string]capability.Capability) bool { return len(m["lightScene"].Parameters.Options) == 0 }},
		"segments as options": {capability.DeviceLight, []string{"segment_color_setting:segmentedColorRgb"}, func(m map[string]capability.Capability) bool {
			f, _ := m["segmentedColorRgb"].Parameters.Field("segment")
			return len(f.Options) > 0
		}},
		"two-socket plug":     {capability.DeviceSocket, []string{"on_off:powerSwitch", "toggle:socketToggle1", "toggle:socketToggle2"}, nil},
		"humidifier":          {capability.DeviceHumidifier, []string{"work_mode:workMode", "range:humidity", "toggle:nightlightToggle", "event:lackWaterEvent", "mode:nightlightScene"}, dependentModeValue},
		"dehumidifier":        {capability.DeviceDehumidifier, []string{"on_off:powerSwitch", "work_mode:workMode", "range:humidity"}, nil},
		"heater":              {capability.DeviceHeater, []string{"temperature_setting:targetTemperature", "property:sensorTemperature", "toggle:oscillationToggle"}, nil},
		"kettle":              {capability.DeviceHeater, []string{"temperature_setting:sliderTemperature"}, nil},
		"air purifier":        {capability.DeviceAirPurifier, []string{"work_mode:workMode", "mode:fanSpeed", "property:filterLifeTime", "property:airQuality", "property:pm25"}, nil},
		"ice maker":           {capability.DeviceIceMaker, []string{"toggle:iceMakingToggle", "work_mode:workMode", "event:iceFullEvent", "event:lackWaterEvent"}, nil},
		"aroma diffuser":      {capability.DeviceAromaDiffuser, []string{"mode:presetScene"}, nil},
		"box":                 {capability.DeviceBox, []string{"mode:hdmiSource", "range:volume"}, nil},
		"thermometer":         {capability.DeviceThermometer, []string{"property:sensorTemperature", "property:sensorHumidity"}, nil},
		"sensor":              {capability.DeviceSensor, []string{"property:sensorTemperature", "property:sensorHumidity"}, nil},
		"air quality monitor": {capability.DeviceAirQualityMonitor, []string{"property:carbonDioxideConcentration", "property:pm25", "property:sensorTemperature", "property:sensorHumidity"}, nil},
		"fan":                 {"devices.types.fan", []string{"toggle:oscillationToggle", "work_mode:workMode"}, nil},
	}
	for name, w := range families {
		t.Run(name, func(t *testing.T) {
			for _, d := range cat.Devices {
				if d.Type != w.deviceType {
					continue
				}
				m := map[string]capability.Capability{}
				for _, c := range d.Capabilities {
					m[c.Instance] = c
				}
				ok := true
				for _, tc := range w.caps {
					typ, inst, _ := strings.Cut(tc, ":")
					if c, has := m[inst]; !has || c.Type != "devices.capabilities."+typ {
						ok = false
						break
					}
				}
				if ok && (w.check == nil || w.check(m)) {
					return
				}
			}
			t.Fatalf("no %s device with %v", w.deviceType, w.caps)
		})
	}
	if !skus["H7171"] {
		t.Error("no kettle H7171")
	}
	// Every controllable capability of the demo gets an initial value or is a
	// scene (queried as "").
	for _, d := range cat.Devices {
		for _, c := range d.Capabilities {
			if !c.Controllable() || unqueryable(c) {
				continue
			}
			if _, ok := capability.Example(c); !ok {
				t.Errorf("%s %s: no example value", d.Device.Device, c.Instance)
			}
		}
	}
}

// dependentModeValue: the work mode's modeValue has options depending on the
// mode (nested options, a default, a range).
func dependentModeValue(m map[string]capability.Capability) bool {
	f, ok := m["workMode"].Parameters.Field("modeValue")
	if !ok {
		return false
	}
	var nested, def, rng bool
	for _, o := range f.Options {
		nested = nested || len(o.Options) > 0
		def = def || o.DefaultValue != nil
		rng = rng || o.Range != nil
	}
	return nested && def && rng
}

func TestDemoCatalogueIsFresh(t *testing.T) {
	a, b := DemoCatalogue(), DemoCatalogue()
	a.Devices[0].Name = "changed"
	if b.Devices[0].Name == "changed" {
		t.Fatal("DemoCatalogue shares state between calls")
	}
	if len(a.Scenes[stripID]) == 0 || len(a.DIYScenes[stripID]) == 0 {
		t.Fatal("demo strip has no scene lists")
	}
}
