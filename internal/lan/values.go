package lan

import (
	"fmt"
	"math"

	"cloud2mqtt/internal/capability"
)

// CommandFor is the LAN command for a cloud instance and its normalised
// value, as the LAN's table says. ok is false when there is no LAN form,
// such as a brightness of 0, and the command then goes to the cloud.
func CommandFor(instance string, value any) (Command, bool) {
	row, ok := capability.LocalFor(instance)
	if !ok {
		return Command{}, false
	}
	n, isInt := wholeNumber(value)
	if !isInt || n < row.Min || n > row.Max {
		return Command{}, false
	}
	c, ok := commandOf(row.Kind, n)
	if !ok || c.Validate() != nil {
		return Command{}, false
	}
	return c, true
}

// commandOf is the wire command of a kind with a value in its row's range.
func commandOf(k capability.LocalKind, n int64) (Command, bool) {
	switch k {
	case capability.LocalPower:
		return Turn(n == 1), true
	case capability.LocalBrightness:
		return Brightness(int(n)), true
	case capability.LocalColor:
		return Color(RGBOf(n)), true
	case capability.LocalWhite:
		return White(int(n)), true
	}
	return Command{}, false
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

// Values are the status in the cloud's instances and value forms, ready to
// lay over a device's state. A brightness of 0 is left out because the
// cloud's range (1–100) cannot hold it.
func (s Status) Values() map[string]any {
	m := make(map[string]any, len(controls))
	for _, row := range controls {
		if v, ok := s.value(row.Kind); ok {
			m[row.Instance] = v
		}
	}
	return m
}

// controls is capability's LAN table, copied once.
var controls = capability.LocalControls()

// value is the status member of a kind, as the cloud's value; false when
// the answer left it out.
func (s Status) value(k capability.LocalKind) (int64, bool) {
	switch k {
	case capability.LocalPower:
		if s.On {
			return 1, true
		}
		return 0, true
	case capability.LocalBrightness:
		return int64(s.Brightness), s.HasBrightness && s.Brightness > 0
	case capability.LocalColor:
		return s.Color.Int(), s.HasColor
	case capability.LocalWhite:
		return int64(s.Kelvin), s.HasKelvin
	}
	return 0, false
}

// Shows reports whether the status shows what the commands asked for. A
// brightness may be off by one and a white by 1 %, because devices round
// and step them; a colour must be exact.
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
