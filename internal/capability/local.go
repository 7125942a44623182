package capability

// What the vendor's LAN interface can do, per instance: the one table the
// LAN codec, the router, the registry and discovery all read. While a light
// is reachable on the LAN, the instances here are read and set there and
// everything else stays with the cloud.
//
// A new LAN command is a row here; a new wire command also needs its
// encoding in internal/lan and its simulation in internal/lansim.

import "slices"

// LocalKind is the wire command that sets an instance's value and the
// status member that reports it.
type LocalKind int

// The kinds of the LAN's commands.
const (
	// LocalPower: "turn" with 0 or 1; the status's onOff.
	LocalPower LocalKind = iota + 1
	// LocalBrightness: "brightness" in percent; the status's brightness
	// (a brightness of 0 is not reported: the cloud's range starts at 1).
	LocalBrightness
	// LocalColor: "colorwc" with a colour (r<<16 | g<<8 | b); the
	// status's color.
	LocalColor
	// LocalWhite: "colorwc" with a white in kelvin; the status's
	// colorTemInKelvin (0 while a colour shows).
	LocalWhite
)

// LocalControl is one row of the table: an instance the LAN reads and sets.
type LocalControl struct {
	Instance string
	Kind     LocalKind
	// Min and Max bound the values the LAN command takes; others, such as
	// a brightness of 0, go to the cloud.
	Min, Max int64
	// Slot is the setting a command changes; a newer command for the same
	// slot replaces a waiting one, and a colour and a white share a slot.
	Slot string
}

var localControls = []LocalControl{
	{Instance: InstancePower, Kind: LocalPower, Min: 0, Max: 1, Slot: InstancePower},
	{Instance: InstanceBrightness, Kind: LocalBrightness, Min: 1, Max: 100, Slot: InstanceBrightness},
	{Instance: InstanceColorRGB, Kind: LocalColor, Min: 0, Max: 0xFFFFFF, Slot: InstanceColorRGB},
	{Instance: InstanceColorTemperatureK, Kind: LocalWhite, Min: 1000, Max: 10000, Slot: InstanceColorRGB},
}

// LocalControls lists the table's rows, in its order (a copy).
func LocalControls() []LocalControl { return slices.Clone(localControls) }

// LocalFor is the instance's row; false when the LAN has no part in the
// instance.
func LocalFor(instance string) (LocalControl, bool) {
	for _, l := range localControls {
		if l.Instance == instance {
			return l, true
		}
	}
	return LocalControl{}, false
}

// IsLocal says whether the LAN reads and sets the instance, so that a
// cloud read leaves it alone while the device is local.
func IsLocal(instance string) bool {
	_, ok := LocalFor(instance)
	return ok
}

// LocalEligible says whether the device may be controlled over the LAN: a
// light with an instance of the table. The interface is only the lights'.
func LocalEligible(d Device) bool {
	if d.Type != DeviceLight {
		return false
	}
	for _, c := range d.Capabilities {
		if IsLocal(c.Instance) && c.Controllable() {
			return true
		}
	}
	return false
}
