package discovery

import (
	"testing"

	"cloud2mqtt/internal/capability"
)

// BenchmarkLightState builds one light state payload, as the bridge does on
// every state change, for the fixture and demo lights in turn.
func BenchmarkLightState(b *testing.B) {
	var lights []capability.Device
	for _, s := range sources(b) {
		for _, d := range s.devices {
			if _, ok := LightState(d, nil, true); ok {
				lights = append(lights, d)
			}
		}
	}
	if len(lights) == 0 {
		b.Fatal("no lights in the fixtures")
	}
	values := map[string]any{"powerSwitch": int64(1), "brightness": int64(40),
		"colorRgb": int64(0xFF8000), "colorTemperatureK": int64(0)}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := LightState(lights[i%len(lights)], values, true); !ok {
			b.Fatal("no light state")
		}
		i++
	}
}
