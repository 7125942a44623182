package lan

import (
	"fmt"
	"math"

	"cloud2mqtt/internal/capability"
)

// Instances are the cloud's instances the LAN interface reads and
// controls; everything else (scenes, segments, music mode, toggles, the
// online flag) stays with the cloud.
var Instances = []string{
	capability.InstancePower,
	capability.InstanceBrightness,
	capability.InstanceColorRGB,
	capability.InstanceColorTemperatureK,
}

// Controls says whether a command for the instance can go over the LAN.
func Controls(instance string) bool {
	switch instance {
	case capability.InstancePower, capability.InstanceBrightness,
		capability.InstanceColorRGB, capability.InstanceColorTemperatureK:
		return true
	}
	return false
}

// CommandFor is the LAN command for a cloud instance and its value in the
// normalised form (capability.Normalize: int64 for whole numbers). ok is
// false when the instance or the value has no LAN form (the command then
// goes to the cloud): a brightness of 0, a temperature of 0, a value out
// of the protocol's range.
func CommandFor(instance string, value any) (Command, bool) {
	n, isInt := wholeNumber(value)
	if !isInt {
		return Command{}, false
	}
	var c Command
	switch instance {
	case capability.InstancePower:
		if n != 0 && n != 1 {
			return Command{}, false
		}
		c = Turn(n == 1)
	case capability.InstanceBrightness:
		c = Brightness(int(n))
	case capability.InstanceColorRGB:
		if n < 0 || n > 0xFFFFFF {
			return Command{}, false
		}
		c = Color(RGBOf(n))
	case capability.InstanceColorTemperatureK:
		if n == 0 {
			return Command{}, false
		}
		c = White(int(n))
	default:
		return Command{}, false
	}
	if c.Validate() != nil {
		return Command{}, false
	}
	return c, true
}

// wholeNumber reads an integer value, whichever integer or float type
// carries it.
func wholeNumber(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<31 {
			return 0, false
		}
		return int64(x), true
	case bool: // a friendly on/off that slipped through
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// Values are the status in the cloud's instances and value forms
// (powerSwitch 0/1, brightness 1–100, colorRgb r<<16|g<<8|b,
// colorTemperatureK with 0 while a colour shows — as the cloud reports
// them), ready to lay over a device's state. Members the answer left out
// are absent; so is a brightness of 0, which the cloud's range (1–100)
// cannot hold.
func (s Status) Values() map[string]any {
	m := make(map[string]any, 4)
	if s.On {
		m[capability.InstancePower] = int64(1)
	} else {
		m[capability.InstancePower] = int64(0)
	}
	if s.HasBrightness && s.Brightness > 0 {
		m[capability.InstanceBrightness] = int64(s.Brightness)
	}
	if s.HasColor {
		m[capability.InstanceColorRGB] = s.Color.Int()
	}
	if s.HasKelvin {
		m[capability.InstanceColorTemperatureK] = int64(s.Kelvin)
	}
	return m
}

// Shows reports whether the status shows what the commands asked for, in
// order (a later colorwc replaces an earlier one). A brightness may differ
// by one (devices round), a white by 1 % (devices step their whites); a
// colour must be exact. A member the device leaves out cannot confirm.
func (s Status) Shows(cmds ...Command) bool {
	want := expectation(cmds)
	if want.power != nil && s.On != *want.power {
		return false
	}
	if want.brightness != nil && (!s.HasBrightness || absInt(s.Brightness-*want.brightness) > 1) {
		return false
	}
	if want.color != nil {
		c := *want.color
		if c.Kelvin == 0 {
			return s.HasColor && s.Color == c.Color
		}
		return s.HasKelvin && absInt(s.Kelvin-c.Kelvin)*100 <= c.Kelvin
	}
	return true
}

type expected struct {
	power      *bool
	brightness *int
	color      *Command
}

func expectation(cmds []Command) expected {
	var e expected
	for i := range cmds {
		c := cmds[i]
		switch c.Cmd {
		case CmdTurn:
			on := c.Value == 1
			e.power = &on
		case CmdBrightness:
			b := c.Value
			e.brightness = &b
		case CmdColor:
			e.color = &c
		}
	}
	return e
}

func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// String is the command as a log field shows it.
func (c Command) String() string {
	switch c.Cmd {
	case CmdColor:
		if c.Kelvin != 0 {
			return fmt.Sprintf("colorwc %d K", c.Kelvin)
		}
		return fmt.Sprintf("colorwc #%06x", c.Color.Int())
	case "":
		return "none"
	}
	return fmt.Sprintf("%s %d", c.Cmd, c.Value)
}
