package capability

import (
	"slices"
	"testing"
)

// TestEffects: a colour or a white ends the scene shown, a scene ends the
// others, and a colour makes the cloud report the colour temperature 0 on
// a light that has one; other values change nothing else.
func TestEffects(t *testing.T) {
	light := Device{SKU: "H6008", Device: "AA", Capabilities: []Capability{
		{Type: TypeColorSetting, Instance: InstanceColorRGB}, {Type: TypeColorSetting, Instance: InstanceColorTemperatureK},
	}}
	rgbOnly := Device{SKU: "H6008", Device: "BB", Capabilities: []Capability{{Type: TypeColorSetting, Instance: InstanceColorRGB}}}
	scenes := []string{InstanceLightScene, InstanceDIYScene, InstanceSnapshot}
	for _, tc := range []struct {
		name       string
		d          Device
		instance   string
		drop, zero []string
	}{
		{"colour with a colour temperature", light, InstanceColorRGB, scenes, []string{InstanceColorTemperatureK}},
		{"colour without one", rgbOnly, InstanceColorRGB, scenes, nil},
		{"white", light, InstanceColorTemperatureK, scenes, nil},
		{"light scene", light, InstanceLightScene, []string{InstanceDIYScene, InstanceSnapshot}, nil},
		{"DIY scene", light, InstanceDIYScene, []string{InstanceLightScene, InstanceSnapshot}, nil},
		{"snapshot", light, InstanceSnapshot, []string{InstanceLightScene, InstanceDIYScene}, nil},
		{"brightness", light, InstanceBrightness, nil, nil},
		{"power", light, InstancePower, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drop, zero := Effects(tc.d, tc.instance)
			if !slices.Equal(drop, tc.drop) || !slices.Equal(zero, tc.zero) {
				t.Errorf("Effects(%s) = drop %v, zero %v; want %v, %v", tc.instance, drop, zero, tc.drop, tc.zero)
			}
		})
	}
	// Each call has its own lists: a caller may change them.
	drop, _ := Effects(light, InstanceColorRGB)
	drop[0] = "changed"
	if again, _ := Effects(light, InstanceColorRGB); again[0] != InstanceLightScene {
		t.Errorf("Effects shares its lists between calls: %v", again)
	}
}
