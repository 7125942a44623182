package lan

import (
	"testing"

	"cloud2mqtt/internal/capability"
)

func TestCommandFor(t *testing.T) {
	tests := []struct {
		name     string
		instance string
		value    any
		want     Command
		ok       bool
	}{
		{"on", capability.InstancePower, int64(1), Turn(true), true},
		{"off", capability.InstancePower, int64(0), Turn(false), true},
		{"power 2", capability.InstancePower, int64(2), Command{}, false},
		{"brightness", capability.InstanceBrightness, int64(40), Brightness(40), true},
		{"brightness as float", capability.InstanceBrightness, 40.0, Brightness(40), true},
		{"brightness 0 (the cloud's off)", capability.InstanceBrightness, int64(0), Command{}, false},
		{"brightness fraction", capability.InstanceBrightness, 40.5, Command{}, false},
		{"colour", capability.InstanceColorRGB, int64(0xFF8800), Color(RGB{255, 136, 0}), true},
		{"colour too big", capability.InstanceColorRGB, int64(0x1000000), Command{}, false},
		{"white", capability.InstanceColorTemperatureK, int64(2700), White(2700), true},
		{"white 0", capability.InstanceColorTemperatureK, int64(0), Command{}, false},
		{"white out of range", capability.InstanceColorTemperatureK, int64(20000), Command{}, false},
		{"a scene stays on the cloud", capability.InstanceLightScene, int64(1), Command{}, false},
		{"a string", capability.InstanceBrightness, "40", Command{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := CommandFor(tt.instance, tt.value)
			if got != tt.want || ok != tt.ok {
				t.Errorf("CommandFor(%s, %v) = %v, %v; want %v, %v", tt.instance, tt.value, got, ok, tt.want, tt.ok)
			}
			if ok && !capability.IsLocal(tt.instance) {
				t.Errorf("capability.IsLocal(%s) = false for a command it maps", tt.instance)
			}
		})
	}
}

// TestTableInStep: the codec carries every row of the LAN's table over its
// whole range, so the table never promises what the wire refuses.
func TestTableInStep(t *testing.T) {
	full := Status{On: true, Brightness: 40, HasBrightness: true, Color: RGB{255, 136, 0}, HasColor: true, Kelvin: 2700, HasKelvin: true}
	values := full.Values()
	rows := capability.LocalControls()
	if len(rows) == 0 {
		t.Fatal("the LAN's table is empty")
	}
	for _, row := range rows {
		for _, v := range []int64{row.Min, row.Max} {
			if _, ok := CommandFor(row.Instance, v); !ok {
				t.Errorf("%s %d is in the table's range but has no command", row.Instance, v)
			}
		}
		for _, v := range []int64{row.Min - 1, row.Max + 1} {
			if c, ok := CommandFor(row.Instance, v); ok {
				t.Errorf("%s %d is outside the table's range but maps to %v", row.Instance, v, c)
			}
		}
		if _, ok := values[row.Instance]; !ok {
			t.Errorf("a full status answer does not report %s", row.Instance)
		}
	}
	if len(values) != len(rows) {
		t.Errorf("a full status answer reports %v, want one value per row of the table", values)
	}
}

func TestStatusValues(t *testing.T) {
	s := Status{On: true, Brightness: 40, HasBrightness: true, Color: RGB{255, 136, 0}, HasColor: true, HasKelvin: true}
	got := s.Values()
	want := map[string]any{
		capability.InstancePower: int64(1), capability.InstanceBrightness: int64(40),
		capability.InstanceColorRGB: int64(0xFF8800), capability.InstanceColorTemperatureK: int64(0),
	}
	if !capability.Equal(capability.NormalizeValue(got), capability.NormalizeValue(want)) {
		t.Errorf("Values() = %v, want %v", got, want)
	}
	// Members the device left out, and a brightness of 0, are not values.
	got = Status{HasBrightness: true}.Values()
	if len(got) != 1 || got[capability.InstancePower] != int64(0) {
		t.Errorf("Values() of an off device with brightness 0 = %v, want only powerSwitch 0", got)
	}
	// Every value maps back to the command that sets it.
	for inst, v := range s.Values() {
		if inst == capability.InstanceColorTemperatureK {
			continue // 0 means "a colour shows": set by the colour
		}
		if _, ok := CommandFor(inst, v); !ok {
			t.Errorf("%s %v has no command", inst, v)
		}
	}
}

func TestStatusShows(t *testing.T) {
	s := Status{On: true, Brightness: 41, HasBrightness: true, Color: RGB{1, 2, 3}, HasColor: true, Kelvin: 0, HasKelvin: true}
	white := Status{On: true, Kelvin: 2710, HasKelvin: true}
	tests := []struct {
		name string
		s    Status
		cmds []Command
		want bool
	}{
		{"on", s, []Command{Turn(true)}, true},
		{"off", s, []Command{Turn(false)}, false},
		{"brightness one off (rounding)", s, []Command{Brightness(40)}, true},
		{"brightness two off", s, []Command{Brightness(39)}, false},
		{"colour", s, []Command{Color(RGB{1, 2, 3})}, true},
		{"another colour", s, []Command{Color(RGB{1, 2, 4})}, false},
		{"white within 1 %", white, []Command{White(2700)}, true},
		{"white further", white, []Command{White(3000)}, false},
		{"white then colour: the colour counts", s, []Command{White(2700), Color(RGB{1, 2, 3})}, true},
		{"several", s, []Command{Turn(true), Brightness(41), Color(RGB{1, 2, 3})}, true},
		{"several, one not shown", s, []Command{Turn(true), Brightness(80)}, false},
		{"brightness left out cannot confirm", Status{On: true}, []Command{Brightness(40)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Shows(tt.cmds...); got != tt.want {
				t.Errorf("Shows(%v) = %v, want %v", tt.cmds, got, tt.want)
			}
		})
	}
}
