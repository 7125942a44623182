package capability

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// UnmarshalJSON decodes a device and normalises its type strings. A capability
// that cannot be decoded is left out and named in Problems.
func (d *Device) UnmarshalJSON(b []byte) error {
	dev, err := decodeDevice(b, nil)
	if err != nil {
		return err
	}
	*d = dev
	return nil
}

// decodeCapabilityDefs decodes a device's capability definitions; those that
// cannot be decoded are left out and named in problems.
func decodeCapabilityDefs(raws []json.RawMessage) (caps []Capability, problems []string) {
	for i, rc := range raws {
		var c Capability
		if err := json.Unmarshal(rc, &c); err != nil {
			problems = append(problems, fmt.Sprintf("capability %d: %v", i, err))
			continue
		}
		caps = append(caps, c)
	}
	return caps, problems
}

// capabilityDefs is one decoding of a capabilities array, for every device
// of a list that has that array byte for byte.
type capabilityDefs struct {
	caps     []Capability
	problems []string
}

// DeviceDecoder decodes the devices of one device list, sharing one decoded
// definition among devices whose capabilities are byte for byte the same,
// because a large household has few models and each definition costs
// kilobytes. The zero value is ready; use one per list.
type DeviceDecoder struct {
	shared map[string]capabilityDefs
}

// Decode decodes one device of the list, as Device.UnmarshalJSON would.
func (dd *DeviceDecoder) Decode(b []byte) (Device, error) {
	if dd.shared == nil {
		dd.shared = make(map[string]capabilityDefs)
	}
	return decodeDevice(b, dd.shared)
}

// decodeDevice decodes a device, sharing definitions through shared unless
// it is nil. It reads the capabilities in two steps so a duplicated key
// means the same with and without sharing: the last one wins.
func decodeDevice(b []byte, shared map[string]capabilityDefs) (Device, error) {
	var raw struct {
		SKU          string          `json:"sku"`
		Device       string          `json:"device"`
		Name         string          `json:"deviceName"`
		Type         string          `json:"type"`
		Capabilities json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return Device{}, err
	}
	defs, ok := shared[string(raw.Capabilities)]
	if !ok {
		var items []json.RawMessage
		if len(raw.Capabilities) > 0 {
			if err := json.Unmarshal(raw.Capabilities, &items); err != nil {
				return Device{}, fmt.Errorf("capabilities: %w", err)
			}
		}
		defs.caps, defs.problems = decodeCapabilityDefs(items)
		// No spare capacity: an append to one device's capabilities must
		// not write into another's.
		defs.caps = slices.Clip(defs.caps)
		if shared != nil {
			shared[string(raw.Capabilities)] = defs
		}
	}
	return Device{
		SKU: raw.SKU, Device: raw.Device, Name: raw.Name, Type: NormalizeDeviceType(raw.Type),
		Capabilities: defs.caps, Problems: slices.Clone(defs.problems),
	}, nil
}

// UnmarshalJSON decodes a capability definition and normalises its type.
func (c *Capability) UnmarshalJSON(b []byte) error {
	type plain Capability
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	p.Type = NormalizeType(p.Type)
	if p.Instance == "" {
		return fmt.Errorf("capability %q has no instance", p.Type)
	}
	*c = Capability(p)
	return nil
}

// UnmarshalJSON accepts integer bounds written as JSON numbers with or without
// a fraction (a whole-valued 5.0 is 5); anything else is an error.
func (r *Range) UnmarshalJSON(b []byte) error {
	var raw struct{ Min, Max, Precision json.Number }
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	var err error
	if r.Min, err = wholeNumber(raw.Min); err != nil {
		return fmt.Errorf("range min: %w", err)
	}
	if r.Max, err = wholeNumber(raw.Max); err != nil {
		return fmt.Errorf("range max: %w", err)
	}
	if r.Precision, err = wholeNumber(raw.Precision); err != nil {
		return fmt.Errorf("range precision: %w", err)
	}
	return nil
}

func wholeNumber(n json.Number) (int, error) {
	if n == "" {
		return 0, nil
	}
	if i, err := n.Int64(); err == nil {
		return int(i), nil
	}
	f, err := n.Float64()
	if err != nil || f != float64(int(f)) {
		return 0, fmt.Errorf("%s is not a whole number", n)
	}
	return int(f), nil
}

// UnmarshalJSON decodes an option and normalises its values.
func (o *Option) UnmarshalJSON(b []byte) error {
	type plain Option
	*o = Option{}
	return decodeNumbers(b, (*plain)(o), &o.Value, &o.DefaultValue)
}

// UnmarshalJSON decodes a struct field and normalises its default value.
func (f *Field) UnmarshalJSON(b []byte) error {
	type plain Field
	*f = Field{}
	return decodeNumbers(b, (*plain)(f), &f.DefaultValue)
}

// UnmarshalJSON decodes an event option and normalises its value.
func (o *EventOption) UnmarshalJSON(b []byte) error {
	type plain EventOption
	*o = EventOption{}
	return decodeNumbers(b, (*plain)(o), &o.Value)
}

// decodeNumbers decodes JSON into v keeping numbers as json.Number, and
// brings the values vals point to into normalised form.
func decodeNumbers(b []byte, v any, vals ...*any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	for _, p := range vals {
		*p = normalizeDecoded(*p)
	}
	return nil
}
