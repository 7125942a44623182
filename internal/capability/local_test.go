package capability

import "testing"

// TestLocalEligible: a light with a controllable instance of the LAN's
// table may be controlled over the LAN; an appliance's power, a light
// whose LAN instances are read-only, and a light with only scenes may not.
func TestLocalEligible(t *testing.T) {
	enum := &Parameters{DataType: DataEnum}
	power := Capability{Type: TypeOnOff, Instance: InstancePower, Parameters: enum}
	scene := Capability{Type: TypeDynamicScene, Instance: InstanceLightScene, Parameters: enum}
	white := Capability{Type: TypeColorSetting, Instance: InstanceColorTemperatureK,
		Parameters: &Parameters{DataType: DataInteger, Range: &Range{Min: 2000, Max: 9000, Precision: 1}}}
	reported := Capability{Type: TypeProperty, Instance: InstanceBrightness}
	tests := []struct {
		name string
		dev  Device
		want bool
	}{
		{"a light with power", Device{Type: DeviceLight, Capabilities: []Capability{scene, power}}, true},
		{"a light with a white only", Device{Type: DeviceLight, Capabilities: []Capability{white}}, true},
		{"a socket's power", Device{Type: DeviceSocket, Capabilities: []Capability{power}}, false},
		{"a light with scenes only", Device{Type: DeviceLight, Capabilities: []Capability{scene}}, false},
		{"a light whose brightness is only reported", Device{Type: DeviceLight, Capabilities: []Capability{reported}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LocalEligible(tt.dev); got != tt.want {
				t.Errorf("LocalEligible = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestLocalTable: each instance has one row, every row a kind, a range and
// a slot, and LocalFor, IsLocal and LocalControls agree; a copy handed out
// cannot change the table.
func TestLocalTable(t *testing.T) {
	rows := LocalControls()
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.Instance] {
			t.Errorf("%s has two rows", r.Instance)
		}
		seen[r.Instance] = true
		if r.Kind == 0 || r.Min > r.Max || r.Slot == "" {
			t.Errorf("row %+v: want a kind, Min ≤ Max and a slot", r)
		}
		if got, ok := LocalFor(r.Instance); !ok || got != r || !IsLocal(r.Instance) {
			t.Errorf("LocalFor(%s) = %+v, %v; want its row", r.Instance, got, ok)
		}
	}
	for _, inst := range []string{InstancePower, InstanceBrightness, InstanceColorRGB, InstanceColorTemperatureK} {
		if !seen[inst] {
			t.Errorf("%s is not in the LAN's table", inst)
		}
	}
	if IsLocal(InstanceLightScene) || IsLocal(InstanceOnline) {
		t.Error("scenes and online are the cloud's")
	}
	if c, w := mustLocal(t, InstanceColorRGB), mustLocal(t, InstanceColorTemperatureK); c.Slot != w.Slot {
		t.Errorf("colour slot %q, white slot %q: a colour and a white are one setting", c.Slot, w.Slot)
	}
	rows[0].Instance = "changed"
	if LocalControls()[0].Instance == "changed" {
		t.Error("LocalControls hands out the table itself")
	}
}

func mustLocal(t *testing.T, instance string) LocalControl {
	t.Helper()
	r, ok := LocalFor(instance)
	if !ok {
		t.Fatalf("%s has no row", instance)
	}
	return r
}
