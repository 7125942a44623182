package cloud

import (
	"encoding/json"
	"iter"
	"maps"

	"cloud2mqtt/internal/capability"
)

// DeviceList is the body of a device-list answer.
type DeviceList struct {
	Code    int                 `json:"code"`
	Message string              `json:"message"`
	Data    []capability.Device `json:"data"`
}

// CapabilityState is a capability in state form.
type CapabilityState struct {
	Type     string     `json:"type"`
	Instance string     `json:"instance"`
	State    StateValue `json:"state"`
}

// StateValue holds a state's value, normalised (see Normalize). The empty
// string means the instance cannot be queried.
type StateValue struct {
	Value any `json:"value"`
}

// UnmarshalJSON normalises the capability type and the value.
func (c *CapabilityState) UnmarshalJSON(b []byte) error {
	v, err := decodeCapabilityState(b)
	*c = v
	return err
}

// decodeCapabilityState decodes a capability in state form in one pass (a
// state answer holds a dozen; a nested Unmarshal would scan each twice).
func decodeCapabilityState(b []byte) (CapabilityState, error) {
	var p struct {
		Type     string `json:"type"`
		Instance string `json:"instance"`
		State    struct {
			Value json.RawMessage `json:"value"`
		} `json:"state"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return CapabilityState{}, err
	}
	c := CapabilityState{Type: capability.NormalizeType(p.Type), Instance: p.Instance}
	if len(p.State.Value) == 0 {
		return c, nil
	}
	v, err := capability.Normalize(p.State.Value)
	c.State.Value = v
	return c, err
}

// UnmarshalJSON normalises the value.
func (s *StateValue) UnmarshalJSON(b []byte) error {
	var raw struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if len(raw.Value) == 0 {
		s.Value = nil
		return nil
	}
	v, err := capability.Normalize(raw.Value)
	if err != nil {
		return err
	}
	s.Value = v
	return nil
}

// DeviceState is the payload of a state answer.
type DeviceState struct {
	SKU          string            `json:"sku"`
	Device       string            `json:"device"`
	Capabilities []CapabilityState `json:"capabilities"`
}

// Online reports the online capability's value; known is false when the
// answer has none or it is not a boolean.
func (s DeviceState) Online() (online, known bool) {
	for _, c := range s.Capabilities {
		if c.Type == capability.TypeOnline || c.Instance == capability.InstanceOnline {
			b, ok := c.State.Value.(bool)
			return b, ok
		}
	}
	return false, false
}

// Values returns every queryable instance's value keyed by instance: the
// online capability, events and empty-string (not queryable) values are left
// out.
func (s DeviceState) Values() map[string]any { return maps.Collect(s.All()) }

// All yields what Values holds, in the answer's order, without building a
// map: the registry compares every read with what it knows, and most reads
// change nothing. An instance the answer repeats is yielded each time; the
// last one wins, as in Values.
func (s DeviceState) All() iter.Seq2[string, any] {
	return func(yield func(string, any) bool) {
		for _, c := range s.Capabilities {
			if c.Type == capability.TypeOnline || c.Type == capability.TypeEvent || c.Instance == capability.InstanceOnline {
				continue
			}
			if str, ok := c.State.Value.(string); ok && str == "" {
				continue
			}
			if c.State.Value == nil {
				continue
			}
			if !yield(c.Instance, c.State.Value) {
				return
			}
		}
	}
}

// Scenes is the payload of a scene or DIY-scene answer: the device and the
// scene capability (dynamic_scene/lightScene or diy_color_setting/diyScene)
// whose options are the scenes.
type Scenes struct {
	SKU          string                  `json:"sku"`
	Device       string                  `json:"device"`
	Capabilities []capability.Capability `json:"capabilities"`
}

// Options returns every scene option of the answer, whatever capability holds it.
func (s Scenes) Options() []capability.Option {
	var out []capability.Option
	for _, c := range s.Capabilities {
		if c.Parameters != nil {
			out = append(out, c.Parameters.Options...)
		}
	}
	return out
}

// ControlResult is what the cloud answered to a successful control request.
// The spec does not show the success body; the live service echoes the
// capability with a state status (see testdata/README.md), kept here when
// present.
type ControlResult struct {
	RequestID  string       `json:"requestId"`
	Code       int          `json:"code"`
	Msg        string       `json:"msg"`
	Capability *ControlEcho `json:"capability,omitempty"`
}

// ControlEcho is the capability echoed by a control answer.
type ControlEcho struct {
	Type     string        `json:"type"`
	Instance string        `json:"instance"`
	Value    any           `json:"value"`
	State    *ControlState `json:"state,omitempty"`
}

// ControlState is the outcome the live service reports inside a control answer.
type ControlState struct {
	Status    string `json:"status"`
	ErrorCode any    `json:"errorCode,omitempty"`
	ErrorMsg  string `json:"errorMsg,omitempty"`
}
