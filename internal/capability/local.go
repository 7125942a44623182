package capability

// What the vendor's LAN interface can do, per instance (docs/lan.md): the
// one table that the LAN's codec (internal/lan), the LAN router
// (internal/local), the registry and discovery read. While a light is
// reachable on the LAN, the instances in the table are read and set there;
// everything else (scenes, segments, music, toggles, online) stays with
// the cloud.
//
// A new LAN command is a row here; a new wire command also needs its
// LocalKind's encoding and status member in internal/lan (values.go,
// wire.go) and its simulation in internal/lansim.

import "slices"

// LocalKind is what the LAN does with an instance's value: the wire
// command that sets it and the member of a status answer that reports it.
// internal/lan's codec maps each kind; the table says which instance is of
// which kind.
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
	// Min and Max bound the whole numbers the LAN's command takes; any
	// other value of the instance goes to the cloud (a brightness of 0,
	// the cloud's "off"; a white of 0).
	Min, Max int64
	// Slot is the setting a command changes: a newer command for the same
	// device and slot replaces one still waiting (a colour and a white
	// are one setting: the newer wins).
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

// IsLocal says whether the LAN reads and sets the instance: while the
// device is reachable there, the instance's value comes from the LAN and a
// cloud read leaves it alone.
func IsLocal(instance string) bool {
	_, ok := LocalFor(instance)
	return ok
}

// LocalEligible says whether the device may be controlled over the LAN: a
// light (the interface is the lights') with a controllable instance of the
// table. Appliances' power stays with the cloud.
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
