package capability

// The capability types: one table of what each adds to the rules of its
// data type (validate.go, friendly.go, example.go), each type's own rules
// and forms in its type_<name>.go.

import (
	"slices"
	"strings"
)

// Capability types, in the spec's canonical spelling. NormalizeType maps the
// spellings real devices and the spec's examples also use onto these.
const (
	TypeOnOff            = "devices.capabilities.on_off"
	TypeToggle           = "devices.capabilities.toggle"
	TypeColorSetting     = "devices.capabilities.color_setting"
	TypeMode             = "devices.capabilities.mode"
	TypeRange            = "devices.capabilities.range"
	TypeWorkMode         = "devices.capabilities.work_mode"
	TypeSegmentColor     = "devices.capabilities.segment_color_setting"
	TypeMusicSetting     = "devices.capabilities.music_setting"
	TypeDynamicScene     = "devices.capabilities.dynamic_scene"
	TypeDIYColorSetting  = "devices.capabilities.diy_color_setting"
	TypeTemperature      = "devices.capabilities.temperature_setting"
	TypeOnline           = "devices.capabilities.online"
	TypeProperty         = "devices.capabilities.property"
	TypeEvent            = "devices.capabilities.event"
	capabilityTypePrefix = "devices.capabilities."
)

// NormalizeType maps the spellings of capability types seen in the wild,
// such as "device.capability.X", onto the spec's. Anything else is returned
// trimmed, so unknown types survive a round trip.
func NormalizeType(t string) string {
	t = strings.TrimSpace(t)
	for _, p := range []string{"devices.capability.", "device.capabilities.", "device.capability."} {
		if rest, ok := strings.CutPrefix(t, p); ok {
			t = capabilityTypePrefix + rest
			break
		}
	}
	if t == capabilityTypePrefix+"temperature_range" {
		t = TypeTemperature
	}
	return t
}

// typeRules is what a capability type adds to its data type's rules; the
// zero value adds nothing.
type typeRules struct {
	readOnly bool // reports state and takes no commands
	pushed   bool // only pushed as an event, never in a state read
	onOff    bool // an ENUM of 1 (on) and 0 (off), even while its options are missing
	// instances are the type's struct instances: a capability of another
	// type without friendly forms of its own gets this type's by them.
	instances []string
	// scalar turns a scalar sent for the struct into the object it stands for.
	scalar func(ck valueChecker, fields []Field, v any) (any, error)
	// complete fills in what a person rarely sends, after the friendly forms.
	complete func(fields []Field, m map[string]any) map[string]any
	// unset sets a member the value leaves unset (WithDefaults), before
	// the definition's default, and reports whether it took care of it.
	unset func(fields []Field, f Field, m map[string]any) bool
	// units names a member whose range is in a unit the definition
	// implies rather than states, and that unit's symbol, for messages.
	units func(fields []Field) (member, unit string)
	// toDevice puts a value into the form the device takes before it is
	// checked (a temperature into its range's unit); conv, when not nil,
	// names the member converted and what was sent, for messages.
	toDevice func(fields []Field, v any) (out any, conv *conversion)
}

// types lists the spec's capability types. A new type is a Type* constant
// and an entry here, plus a type_<name>.go if it has rules of its own.
var types = map[string]typeRules{
	TypeOnOff:           onOffRules,
	TypeToggle:          onOffRules,
	TypeColorSetting:    {}, // colorRgb's colour forms: type_color.go
	TypeMode:            {},
	TypeRange:           {},
	TypeWorkMode:        workModeRules,
	TypeSegmentColor:    {}, // segment lists: type_segment.go
	TypeMusicSetting:    musicRules,
	TypeDynamicScene:    {}, // option lists the scene endpoints fill: type_scene.go
	TypeDIYColorSetting: {},
	TypeTemperature:     temperatureRules,
	TypeOnline:          {readOnly: true},
	TypeProperty:        {readOnly: true},
	TypeEvent:           {readOnly: true, pushed: true},
}

// structRules are the rules that give a STRUCT capability its friendly
// forms: its type's, else those of the type it has an instance of.
func structRules(c Capability) typeRules {
	if r := types[c.Type]; r.scalar != nil {
		return r
	}
	for _, r := range types {
		if slices.Contains(r.instances, c.Instance) {
			return r
		}
	}
	return typeRules{}
}

// KnownCapabilityType reports whether t (normalised) is a capability type of the spec.
func KnownCapabilityType(t string) bool {
	_, ok := types[t]
	return ok
}

// Controllable reports whether the capability accepts control commands:
// it has a parameters definition and is not a state- or report-only type.
func (c Capability) Controllable() bool { return !types[c.Type].readOnly && c.Parameters != nil }

// Readable reports whether the state endpoint may return this capability
// (everything but events).
func (c Capability) Readable() bool { return !types[c.Type].pushed }
