package discovery

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"cloud2mqtt/internal/capability"
)

func TestLightState(t *testing.T) {
	lamp := colourLamp()
	tests := []struct {
		name   string
		dev    capability.Device
		values map[string]any
		online bool
		want   string
	}{
		{"rgb", lamp, map[string]any{"powerSwitch": int64(1), "brightness": int64(40),
			"colorRgb": int64(0xFF8000), "colorTemperatureK": int64(0)}, true,
			`{"brightness":40,"color":{"b":0,"g":128,"r":255},"color_mode":"rgb","effect":null,"state":"ON"}`},
		{"colour temperature in mireds that read back as the device's kelvin", lamp, map[string]any{"powerSwitch": int64(1), "brightness": int64(100),
			"colorRgb": int64(0xFFFFFF), "colorTemperatureK": int64(2700)}, true,
			`{"brightness":100,"color":{"b":255,"g":255,"r":255},"color_mode":"color_temp","color_temp":370.302,"effect":null,"state":"ON"}`},
		{"off", lamp, map[string]any{"powerSwitch": int64(0)}, true,
			`{"effect":null,"state":"OFF"}`},
		{"offline values are history", lamp, map[string]any{"powerSwitch": int64(1), "brightness": int64(40)}, false,
			`{"state":null}`},
		{"power not reported", lamp, map[string]any{"brightness": int64(40)}, true,
			`{"brightness":40,"effect":null,"state":null}`},
		{"effect from the last scene set", lamp, map[string]any{"powerSwitch": int64(1),
			"lightScene": map[string]any{"id": int64(1606), "paramId": int64(1681)}}, true,
			`{"effect":"Sunrise","state":"ON"}`},
		{"snapshot named like a scene", lamp, map[string]any{"powerSwitch": int64(1), "snapshot": int64(0)}, true,
			`{"effect":"sunrise (Snapshot)","state":"ON"}`},
		{"without colour", dimmer(), map[string]any{"powerSwitch": int64(1), "brightness": int64(200)}, true,
			`{"brightness":200,"color_mode":"brightness","state":"ON"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := LightState(tt.dev, tt.values, tt.online)
			if !ok {
				t.Fatal("no light state for a light")
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	sensorOnly := capability.Device{SKU: "H5179", Device: "x", Type: capability.DeviceThermometer,
		Capabilities: []capability.Capability{{Type: capability.TypeProperty, Instance: capability.InstanceSensorTemperature}}}
	if b, ok := LightState(sensorOnly, map[string]any{}, true); ok {
		t.Errorf("thermometer has a light state: %s", b)
	}
}

func TestDecodeLight(t *testing.T) {
	lamp := colourLamp()
	tests := []struct {
		name    string
		dev     capability.Device
		payload string
		want    []Command
	}{
		{"on with brightness and colour: power first", lamp,
			`{"state":"ON","brightness":40,"color":{"r":255,"g":128,"b":0}}`,
			cmds("powerSwitch", 1, "brightness", 40, "colorRgb", 0xFF8000)},
		{"off ignores the rest", lamp, `{"state":"OFF","brightness":40}`, cmds("powerSwitch", 0)},
		{"plain on", lamp, `{"state":"ON"}`, cmds("powerSwitch", 1)},
		{"effect by name: dynamic scene object", lamp, `{"state":"ON","effect":"Sunrise"}`,
			cmds("powerSwitch", 1, "lightScene", map[string]any{"paramId": 1681, "id": 1606})},
		{"effect colliding with a scene goes to its own kind", lamp, `{"state":"ON","effect":"Party (DIY)"}`,
			cmds("powerSwitch", 1, "diyScene", 77)},
		{"snapshot", lamp, `{"state":"ON","effect":"sunrise (Snapshot)"}`, cmds("powerSwitch", 1, "snapshot", 0)},
		{"colour temperature in kelvin (other publishers)", lamp, `{"state":"ON","color_temp":2700}`,
			cmds("powerSwitch", 1, "colorTemperatureK", 2700)},
		{"colour temperature in mireds: 2700 K is 370 mireds in HA", lamp, `{"state":"ON","color_temp":370}`,
			cmds("powerSwitch", 1, "colorTemperatureK", 2700)},
		{"colour temperature in mireds: 2001 K is 499 mireds in HA", lamp, `{"color_temp":499}`,
			cmds("colorTemperatureK", 2001)},
		{"colour temperature in fractional mireds", lamp, `{"color_temp":250.0625}`,
			cmds("colorTemperatureK", 3999)},
		{"colour temperature at Home Assistant's bounds", lamp, `{"color_temp":112}`, cmds("colorTemperatureK", 8900)},
		{"brightness rounded", lamp, `{"brightness":39.6}`, cmds("brightness", 40)},
		{"brightness at the maximum", dimmer(), `{"brightness":254}`, cmds("brightness", 254)},
		{"transition ignored", dimmer(), `{"state":"ON","transition":2}`, cmds("powerSwitch", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeLight(tt.dev, []byte(tt.payload))
			if err != nil {
				t.Fatal(err)
			}
			if !sameCommands(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}

	// Out of range is refused whole, in set/<instance>'s words (a
	// *capability.ValueError the bridge answers with code 400); the rest
	// in plain words, without a package's name.
	bad := []struct {
		name    string
		dev     capability.Device
		payload string
		wantErr string
		ranged  bool
	}{
		{"not JSON", lamp, `ON`, "not a JSON light command", false},
		{"unknown effect", lamp, `{"effect":"Nope"}`, "unknown effect", false},
		{"bad state", lamp, `{"state":"DIM"}`, "neither ON nor OFF", false},
		{"empty", lamp, `{}`, "nothing to do", false},
		{"colour without r", lamp, `{"color":{"g":1,"b":2}}`, "\"r\" is missing", false},
		{"colour temperature zero", lamp, `{"color_temp":0}`, "positive number", false},
		{"brightness above the maximum", lamp, `{"state":"ON","brightness":300}`,
			"brightness: parameter value out of range: 300 is above the maximum 100", true},
		{"brightness below a minimum HA does not know", dimmer(), `{"state":"ON","brightness":1}`,
			"brightness: parameter value out of range: 1 is below the minimum 10", true},
		{"brightness too large for an integer", lamp, `{"brightness":1e300}`, "too large", true},
		{"colour component above 255", lamp, `{"color":{"r":300,"g":0,"b":0}}`,
			"color.r: parameter value out of range: 300 is above the maximum 255", true},
		{"colour component below 0", lamp, `{"color":{"r":0,"g":-1,"b":0}}`,
			"color.g: parameter value out of range: -1 is below the minimum 0", true},
		{"colour temperature in kelvin below the minimum", lamp, `{"color_temp":1500}`,
			"colorTemperatureK: parameter value out of range: 1500 K is below the minimum 2000 K", true},
		{"colour temperature in mireds below the minimum", lamp, `{"color_temp":600}`,
			"colorTemperatureK: parameter value out of range: 600 mireds (1665 K) is below the minimum 2000 K", true},
		{"colour temperature in mireds above the maximum", lamp, `{"color_temp":100}`,
			"100 mireds (10000 K) is above the maximum 9000 K", true},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			cmds, err := DecodeLight(tt.dev, []byte(tt.payload))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "discovery") {
				t.Fatalf("DecodeLight = %v, %v; want an error containing %q", cmds, err, tt.wantErr)
			}
			var ve *capability.ValueError
			if errors.As(err, &ve) != tt.ranged || tt.ranged && ve.Category != capability.CategoryRange {
				t.Errorf("error %#v: want a range ValueError %v", err, tt.ranged)
			}
		})
	}
	if _, err := DecodeLight(dimmer(), []byte(`{"color":{"r":1,"g":2,"b":3}}`)); err == nil {
		t.Error("colour accepted by a light without colour")
	}
}

func TestDecodeSegment(t *testing.T) {
	lamp := colourLamp()
	seg := func(n int, key string, v int) map[string]any {
		return map[string]any{"segment": []any{int64(n)}, key: int64(v)}
	}
	tests := []struct {
		name    string
		segment int
		payload string
		want    []Command
	}{
		{"colour and brightness", 3, `{"state":"ON","color":{"r":0,"g":0,"b":255},"brightness":50}`,
			cmds("segmentedColorRgb", seg(3, "rgb", 0xFF), "segmentedBrightness", seg(3, "brightness", 50))},
		{"off is brightness zero", 0, `{"state":"OFF"}`, cmds("segmentedBrightness", seg(0, "brightness", 0))},
		{"bare on is full brightness", 14, `{"state":"ON"}`, cmds("segmentedBrightness", seg(14, "brightness", 100))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeSegment(lamp, tt.segment, []byte(tt.payload))
			if err != nil {
				t.Fatal(err)
			}
			if !sameCommands(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := DecodeSegment(lamp, 15, []byte(`{"state":"ON"}`)); err == nil {
		t.Error("segment 15 accepted; the strip has 0..14")
	}
	if _, err := DecodeSegment(dimmer(), 0, []byte(`{"state":"ON"}`)); err == nil {
		t.Error("segment command accepted by a device without segments")
	}
	for payload, want := range map[string]string{
		`{"brightness":300}`:              "segmentedBrightness.brightness: parameter value out of range: 300 is above the maximum 100",
		`{"color":{"r":0,"g":0,"b":256}}`: "color.b: parameter value out of range: 256 is above the maximum 255",
		`{"state":"DIM"}`:                 "segment 3: state \"DIM\" is neither ON nor OFF",
	} {
		if cmds, err := DecodeSegment(lamp, 3, []byte(payload)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("segment 3 %s: %v, %v; want an error containing %q", payload, cmds, err, want)
		}
	}
}

// TestEveryMiredHomeAssistantSendsIsInRange: the mired bounds of a
// config are rounded inwards, and each whole mired value between them
// decodes to a kelvin inside the device's range, whatever its bounds.
func TestEveryMiredHomeAssistantSendsIsInRange(t *testing.T) {
	for _, r := range [][2]int{{2000, 9000}, {2237, 6493}, {2700, 6500}, {1000, 10000}, {2201, 2209}} {
		lamp := capability.Device{SKU: "H1", Device: "ct", Type: capability.DeviceLight, Capabilities: []capability.Capability{
			onOffCap(capability.TypeOnOff, capability.InstancePower),
			rangeCap(capability.TypeColorSetting, capability.InstanceColorTemperatureK, r[0], r[1]),
		}}
		c := configOf(t, Configs(testConfig(), lamp), "light", "light")
		lo, hi := int(c["min_mireds"].(float64)), int(c["max_mireds"].(float64))
		for m := lo; m <= hi; m++ {
			cmds, err := DecodeLight(lamp, []byte(`{"color_temp":`+strconv.Itoa(m)+`}`))
			if err != nil || len(cmds) != 1 || validRange(lamp, cmds[0]) != "" {
				t.Fatalf("range %v: %d mireds (config %d..%d): %v, %v", r, m, lo, hi, cmds, err)
			}
		}
	}
}

func TestLightConfig(t *testing.T) {
	cfg := testConfig()
	t.Run("colour lamp", func(t *testing.T) {
		c := configOf(t, Configs(cfg, colourLamp()), "light", "light")
		want := map[string]any{
			"schema": "json", "brightness_scale": 100.0, "min_mireds": 112.0, "max_mireds": 500.0,
			"command_topic": "cloud2mqtt/h6072_aabb/light/set", "state_topic": "cloud2mqtt/h6072_aabb/light",
			"name": nil,
		}
		for k, v := range want {
			if c[k] != v {
				t.Errorf("%s = %v, want %v", k, c[k], v)
			}
		}
		// kelvin keys would make HA 2025.2+ expect kelvin in the state,
		// which HA 2025.1 reads as mireds: one unit for all releases
		for _, k := range []string{"color_temp_kelvin", "min_kelvin", "max_kelvin"} {
			if _, ok := c[k]; ok {
				t.Errorf("%s in the config: the light speaks mireds", k)
			}
		}
		effects, _ := json.Marshal(c["effect_list"])
		if string(effects) != `["Sunrise","Party","Party (DIY)","sunrise (Snapshot)","Sunset"]` {
			t.Errorf("effect_list %s", effects)
		}
		modes, _ := json.Marshal(c["supported_color_modes"])
		if string(modes) != `["rgb","color_temp"]` {
			t.Errorf("supported_color_modes %s", modes)
		}
	})
	t.Run("light without colour", func(t *testing.T) {
		configs := Configs(cfg, dimmer())
		c := configOf(t, configs, "light", "light")
		modes, _ := json.Marshal(c["supported_color_modes"])
		if string(modes) != `["brightness"]` || c["brightness_scale"] != 254.0 {
			t.Errorf("supported_color_modes %s, brightness_scale %v", modes, c["brightness_scale"])
		}
		for _, k := range []string{"color_temp_kelvin", "min_mireds", "effect_list"} {
			if _, ok := c[k]; ok {
				t.Errorf("%s in a light without colour or scenes", k)
			}
		}
		for tp := range configs {
			if strings.Contains(tp, "/switch/") && strings.Contains(tp, "powerSwitch") {
				t.Errorf("power has a switch besides the light: %s", tp)
			}
		}
	})
	t.Run("on/off only", func(t *testing.T) {
		d := capability.Device{SKU: "H610A", Device: "5", Type: capability.DeviceLight,
			Capabilities: []capability.Capability{onOffCap(capability.TypeOnOff, capability.InstancePower)}}
		c := configOf(t, Configs(cfg, d), "light", "light")
		modes, _ := json.Marshal(c["supported_color_modes"])
		if string(modes) != `["onoff"]` || c["brightness"] != false {
			t.Errorf("supported_color_modes %s brightness %v", modes, c["brightness"])
		}
		if st, _ := LightState(d, map[string]any{"powerSwitch": int64(1)}, true); string(st) != `{"color_mode":"onoff","state":"ON"}` {
			t.Errorf("state %s", st)
		}
	})
}

func FuzzDecodeLight(f *testing.F) {
	for _, s := range []string{`{"state":"ON","brightness":40,"color":{"r":1,"g":2,"b":3}}`, `{"state":"OFF"}`,
		`{"color_temp":153}`, `{"effect":"Sunrise"}`, `{"color":{"r":1e400}}`, `[]`, `null`, `{"brightness":-1}`} {
		f.Add([]byte(s))
	}
	lamp := colourLamp()
	f.Fuzz(func(t *testing.T, b []byte) {
		cs, err := DecodeLight(lamp, b)
		if err == nil && len(cs) == 0 {
			t.Fatal("no error and no command")
		}
		for _, c := range cs {
			if err := validRange(lamp, c); err != "" {
				t.Fatal(err)
			}
		}
		_, _ = DecodeSegment(lamp, 1, b)
	})
}

// Home Assistant turns mireds into kelvin as floor(1e6/mireds) and kelvin
// into mireds as floor(1e6/K). The state must read back as the device's
// kelvin, and a round kelvin a user picks must reach the device unchanged.
func TestMiredsRoundTrip(t *testing.T) {
	for k := int64(1000); k <= 10000; k++ {
		if got := int64(math.Floor(1e6 / miredsOf(k))); got != k {
			t.Fatalf("state %d K: mireds %v read back as %d K", k, miredsOf(k), got)
		}
	}
	// one mired is less than 100 K up to 10000 K and less than 10 K up
	// to 3000 K: those kelvin survive the trip exactly
	for k := 1000.0; k <= 10000; k += 10 {
		if k > 3000 && math.Mod(k, 100) != 0 {
			continue
		}
		m := math.Floor(1e6 / k)
		if got := kelvinOfMireds(m); got != k {
			t.Errorf("%v K sent as %v mireds decodes to %v K", k, m, got)
		}
	}
	for k := 1000.0; k <= 10000; k++ {
		m := math.Floor(1e6 / k)
		if got := kelvinOfMireds(m); math.Floor(1e6/got) != m {
			t.Fatalf("%v mireds decode to %v K, which is %v mireds", m, got, math.Floor(1e6/got))
		}
	}
}

// TestLightStateFollowsTheDefinition: a new definition of the same device
// is analysed anew, so the effect follows scenes added and removed.
func TestLightStateFollowsTheDefinition(t *testing.T) {
	values := map[string]any{"powerSwitch": int64(1), "lightScene": int64(4242)}
	lamp := colourLamp()
	if got, _ := LightState(lamp, values, true); !strings.Contains(string(got), `"effect":null`) {
		t.Fatalf("a scene the lamp does not list: %s, want effect null", got)
	}
	refreshed := lamp
	refreshed.Capabilities = slices.Clone(lamp.Capabilities)
	for i, c := range refreshed.Capabilities {
		if c.Instance == capability.InstanceLightScene {
			p := *c.Parameters
			p.Options = append(slices.Clone(p.Options), capability.Option{Name: "Aurora", Value: int64(4242)})
			refreshed.Capabilities[i].Parameters = &p
		}
	}
	if got, _ := LightState(refreshed, values, true); !strings.Contains(string(got), `"effect":"Aurora"`) {
		t.Errorf("after the scene list gained Aurora: %s, want effect Aurora", got)
	}
	if got, _ := LightState(lamp, values, true); !strings.Contains(string(got), `"effect":null`) {
		t.Errorf("the old definition again: %s, want effect null", got)
	}
	// The same definition shorter (a capability gone from the end) is
	// another definition too.
	short := lamp
	short.Capabilities = lamp.Capabilities[:4] // power, brightness, colours: no scenes
	if got, _ := LightState(short, map[string]any{"powerSwitch": int64(1)}, true); strings.Contains(string(got), "effect") {
		t.Errorf("a lamp without scenes: %s, want no effect", got)
	}
}
