package cloud

import (
	"bytes"
	"encoding/json"
	"strings"

	"cloud2mqtt/internal/capability"
)

// The fast path for state answers. A daemon with a thousand devices reads
// about 17 states a second, and the robust decoding (readStateSlow) scans
// each answer some ten times: the envelope into a map, the payload, every
// capability, its state and its value each on its own, so that one odd
// member costs only itself. Nearly every real answer is plain, so
// readStateFast first decodes the whole answer in one json.Unmarshal into
// typed structs and normalises each value from its raw bytes. Where it meets
// anything unusual — a decoding error, a code that is not the plain number
// 200, a capability without an instance, a member that could be read
// differently by the two ways of decoding — it gives up and the robust
// decoding reads the answer from scratch. Wherever it answers, its answer is
// the robust one (the differential tests and FuzzDecodeState check that).

// fastStateAnswer is the part of a state answer a success needs.
type fastStateAnswer struct {
	Code    *int              `json:"code"` // nil when absent or null; a string or fraction fails the decode
	Payload *fastStatePayload `json:"payload"`
}

type fastStatePayload struct {
	SKU          string         `json:"sku"`
	Device       string         `json:"device"`
	Capabilities []fastCapState `json:"capabilities"`
}

type fastCapState struct {
	Type     string `json:"type"`
	Instance string `json:"instance"`
	State    struct {
		Value json.RawMessage `json:"value"`
	} `json:"state"`
}

// readState decodes a state answer: by the fast path when it can, else by
// the robust one.
func (c *Client) readState(cl call, a answer) (DeviceState, error) {
	if st, ok := c.readStateFast(cl, a); ok {
		return st, nil
	}
	return c.readStateSlow(cl, a)
}

// readStateFast decodes a plain successful state answer in one pass; ok is
// false when the answer is anything else, and then nothing was logged.
func (c *Client) readStateFast(cl call, a answer) (st DeviceState, ok bool) {
	if a.status < 200 || a.status > 299 {
		return DeviceState{}, false
	}
	var ans fastStateAnswer
	if err := json.Unmarshal(a.body, &ans); err != nil || ans.Code == nil || *ans.Code != 200 || ans.Payload == nil {
		return DeviceState{}, false
	}
	p := ans.Payload
	if (p.SKU != "" && !strings.EqualFold(p.SKU, cl.sku)) || (p.Device != "" && !strings.EqualFold(p.Device, cl.device)) {
		return DeviceState{}, false
	}
	caps := make([]CapabilityState, 0, len(p.Capabilities))
	for _, fc := range p.Capabilities {
		if fc.Instance == "" {
			return DeviceState{}, false
		}
		var v any
		if len(fc.State.Value) > 0 {
			var err error
			if v, err = capability.Normalize(fc.State.Value); err != nil {
				return DeviceState{}, false
			}
		}
		caps = append(caps, CapabilityState{Type: capability.NormalizeType(fc.Type), Instance: fc.Instance, State: StateValue{Value: v}})
	}
	if !plainMembers(a.body) {
		return DeviceState{}, false
	}
	// The same log lines, in the same order, as the robust decoding.
	for _, cs := range caps {
		c.noteCapabilityType(cs.Type, cs.Instance, cl.sku, cl.device)
	}
	return DeviceState{SKU: cl.sku, Device: cl.device, Capabilities: caps}, true
}

// plainMembers reports whether a state answer (valid JSON) has none of the
// members on which the typed decoding of readStateFast and the robust
// decoding could disagree. The robust decoding reads the envelope into a map,
// so its keys match exactly and the last of a repeated key wins, while a
// struct matches keys without regard to case and decodes a repeated object
// member into what the first left behind. So the answer is plain when:
//   - at the top level, every key equal to "code" or "payload" regardless of
//     case is spelt exactly so, and appears once;
//   - in each object one level down (the payload) "capabilities", and in each
//     object three levels down (a capability) "state", appear at most once,
//     in any case;
//   - no string down to the capabilities' level has an escape, which could
//     spell any of these keys.
//
// Strings are not told from keys: a value spelling one of these names only
// sends the answer the robust way, which is always right.
func plainMembers(body []byte) bool {
	depth := 0
	var code, payload, capabilities, state int
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '{', '[':
			depth++
			switch depth {
			case 2:
				capabilities = 0
			case 4:
				state = 0
			}
		case '}', ']':
			depth--
		case '"':
			start := i + 1
			escaped := false
			for i++; i < len(body) && body[i] != '"'; i++ {
				if body[i] == '\\' {
					escaped = true
					i++
				}
			}
			if depth > 4 {
				continue
			}
			if escaped {
				return false
			}
			s := body[start:min(i, len(body))]
			switch depth {
			case 1:
				if foldsTo(s, "code") && (string(s) != "code" || code > 0) {
					return false
				}
				if foldsTo(s, "payload") && (string(s) != "payload" || payload > 0) {
					return false
				}
				if string(s) == "code" {
					code++
				} else if string(s) == "payload" {
					payload++
				}
			case 2:
				if foldsTo(s, "capabilities") {
					if capabilities++; capabilities > 1 {
						return false
					}
				}
			case 4:
				if foldsTo(s, "state") {
					if state++; state > 1 {
						return false
					}
				}
			}
		}
	}
	return true
}

// foldsTo reports whether encoding/json would match s to a struct field
// named key (ASCII): equal under Unicode case folding, where "ſ" (2 bytes)
// folds to s and the Kelvin sign (3 bytes) to k.
func foldsTo(s []byte, key string) bool {
	return len(s) >= len(key) && len(s) <= 3*len(key) && bytes.EqualFold(s, []byte(key))
}
