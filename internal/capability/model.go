// Package capability is the value language of the vendor's cloud control
// interface: devices and their capability definitions, the normalised form
// of every value (normalize.go), validation against a definition
// (validate.go, with its words in errors.go), friendly input (friendly.go),
// values built from a definition (example.go), and the rules each
// capability type adds (types.go and type_<name>.go).
//
// It is pure: no I/O, HTTP or MQTT. internal/cloud decodes the cloud's
// answers into these types and the rest of the bridge reasons with them.
package capability

import "strings"

// Device types listed by the spec, plus the fan the live service reports.
// Others are kept as reported.
const (
	DeviceLight             = "devices.types.light"
	DeviceAirPurifier       = "devices.types.air_purifier"
	DeviceThermometer       = "devices.types.thermometer"
	DeviceSocket            = "devices.types.socket"
	DeviceSensor            = "devices.types.sensor"
	DeviceHeater            = "devices.types.heater"
	DeviceHumidifier        = "devices.types.humidifier"
	DeviceDehumidifier      = "devices.types.dehumidifier"
	DeviceIceMaker          = "devices.types.ice_maker"
	DeviceAromaDiffuser     = "devices.types.aroma_diffuser"
	DeviceBox               = "devices.types.box"
	DeviceAirQualityMonitor = "devices.types.air_quality_monitor"
	DeviceFan               = "devices.types.fan"
	deviceTypePrefix        = "devices.types."
)

// Data types of a parameters definition or struct field.
const (
	DataEnum    = "ENUM"
	DataInteger = "INTEGER"
	DataStruct  = "STRUCT"
	DataArray   = "Array"
)

// Instances the bridge treats specially.
const (
	InstancePower             = "powerSwitch"
	InstanceOnline            = "online"
	InstanceBrightness        = "brightness"
	InstanceColorRGB          = "colorRgb"
	InstanceColorTemperatureK = "colorTemperatureK"
	InstanceLightScene        = "lightScene"
	InstanceDIYScene          = "diyScene"
	InstanceSnapshot          = "snapshot"
	InstanceWorkMode          = "workMode"
	InstanceMusicMode         = "musicMode"
	InstanceSegmentedColorRGB = "segmentedColorRgb"
	InstanceSegmentBrightness = "segmentedBrightness"
	InstanceTargetTemperature = "targetTemperature"
	InstanceSliderTemperature = "sliderTemperature"
	InstanceSensorTemperature = "sensorTemperature"
	InstanceSensorHumidity    = "sensorHumidity"
	InstanceHumidity          = "humidity"
)

var knownDeviceTypes = map[string]bool{
	DeviceLight: true, DeviceAirPurifier: true, DeviceThermometer: true, DeviceSocket: true,
	DeviceSensor: true, DeviceHeater: true, DeviceHumidifier: true, DeviceDehumidifier: true,
	DeviceIceMaker: true, DeviceAromaDiffuser: true, DeviceBox: true, DeviceAirQualityMonitor: true,
	DeviceFan: true,
}

// KnownDeviceType reports whether t (normalised) is a device type of the spec.
func KnownDeviceType(t string) bool { return knownDeviceTypes[t] }

// NormalizeDeviceType maps "devices.type.X", "device.types.X" and
// "device.type.X" onto "devices.types.X"; anything else is returned unchanged.
func NormalizeDeviceType(t string) string {
	t = strings.TrimSpace(t)
	for _, p := range []string{"devices.type.", "device.types.", "device.type."} {
		if rest, ok := strings.CutPrefix(t, p); ok {
			return deviceTypePrefix + rest
		}
	}
	return t
}

// Device is one element of the device list.
//
// Capabilities may be shared by devices of one model, which the decoder
// decodes once, so treat it and everything it points to as read-only.
type Device struct {
	SKU          string       `json:"sku"`
	Device       string       `json:"device"`
	Name         string       `json:"deviceName,omitempty"`
	Type         string       `json:"type,omitempty"`
	Capabilities []Capability `json:"capabilities"`

	// Problems lists capabilities that could not be decoded and were left out;
	// a malformed capability never costs the whole device or list.
	Problems []string `json:"-"`
}

// Capability is a capability in definition form (device list, scene queries).
type Capability struct {
	Type       string      `json:"type"`
	Instance   string      `json:"instance"`
	Parameters *Parameters `json:"parameters,omitempty"`

	// Event capabilities only.
	AlarmType  *int        `json:"alarmType,omitempty"`
	EventState *EventState `json:"eventState,omitempty"`
}

// EventState lists the states an event capability can report.
type EventState struct {
	Options []EventOption `json:"options"`
}

// EventOption is one reportable event state.
type EventOption struct {
	Name    string `json:"name"`
	Value   any    `json:"value"`
	Message string `json:"message,omitempty"`
}

// Parameters defines the value a capability accepts and reports.
type Parameters struct {
	DataType string   `json:"dataType"`
	Options  []Option `json:"options,omitempty"`
	Range    *Range   `json:"range,omitempty"`
	Unit     string   `json:"unit,omitempty"`
	Fields   []Field  `json:"fields,omitempty"`
}

// Range bounds an integer. Precision is the step; 0 (absent) means 1.
type Range struct {
	Min       int `json:"min"`
	Max       int `json:"max"`
	Precision int `json:"precision,omitempty"`
}

// Step is the range's precision, 1 when the definition gives none.
func (r Range) Step() int {
	if r.Precision <= 0 {
		return 1
	}
	return r.Precision
}

// Option is an element of an ENUM or Array option list; Value is a
// normalised JSON value. For a struct member whose options depend on
// another member (work mode's modeValue), each option is named after the
// other member's option and holds nested Options, a DefaultValue or a Range.
type Option struct {
	Name         string   `json:"name,omitempty"`
	Value        any      `json:"value"`
	Message      string   `json:"message,omitempty"`
	DataType     string   `json:"dataType,omitempty"`
	Options      []Option `json:"options,omitempty"`
	DefaultValue any      `json:"defaultValue,omitempty"`
	Range        *Range   `json:"range,omitempty"`
	Required     *bool    `json:"required,omitempty"`
}

// Field is a member of a STRUCT value.
type Field struct {
	FieldName    string   `json:"fieldName"`
	DataType     string   `json:"dataType"`
	Required     bool     `json:"required,omitempty"`
	DefaultValue any      `json:"defaultValue,omitempty"`
	Options      []Option `json:"options,omitempty"`
	Range        *Range   `json:"range,omitempty"`
	Unit         string   `json:"unit,omitempty"`
	Size         *Range   `json:"size,omitempty"`
	ElementRange *Range   `json:"elementRange,omitempty"`
	ElementType  string   `json:"elementType,omitempty"`
}

// Capability returns the device's capability with that instance, if any.
func (d Device) Capability(instance string) (Capability, bool) {
	for _, c := range d.Capabilities {
		if c.Instance == instance {
			return c, true
		}
	}
	return Capability{}, false
}

// DisplayName is the name people see for a device everywhere: the user's
// own name, else the cloud's, else the model; blank names count as none.
func DisplayName(d Device, own string) string {
	if n := strings.TrimSpace(own); n != "" {
		return n
	}
	if n := strings.TrimSpace(d.Name); n != "" {
		return n
	}
	return d.SKU
}

// Key identifies a device the way the cloud addresses it: model and
// device id. Every per-device record of the bridge is keyed by it.
type Key struct{ SKU, Device string }

// String is "sku/device".
func (k Key) String() string { return k.SKU + "/" + k.Device }

// Key is the device's key.
func (d Device) Key() Key { return Key{d.SKU, d.Device} }

// String names the device for messages: "H6072/AA:BB:…".
func (d Device) String() string { return d.SKU + "/" + d.Device }

// Field returns the struct member definition with that name, if any.
func (p *Parameters) Field(name string) (Field, bool) {
	if p == nil {
		return Field{}, false
	}
	for _, f := range p.Fields {
		if f.FieldName == name {
			return f, true
		}
	}
	return Field{}, false
}
