package cloud

import (
	"bytes"
	"encoding/json"
	"sync"
	"unicode/utf8"

	"cloud2mqtt/internal/capability"
)

// The fast path for state answers. A daemon with a thousand devices reads
// about 17 states a second, and the robust decoding (readStateSlow) scans
// each answer some ten times: the envelope into a map, the payload, every
// capability, its state and its value each on its own, so that one odd
// member costs only itself. Nearly every real answer is plain, so
// readStateFast first checks the answer is valid JSON and then reads it in
// one pass without reflection (plainState), normalising each value from its
// raw bytes. Where it meets anything unusual — a code that is not the plain
// number 200, a capability without an instance, a known member repeated or
// spelt in another case, an escape in a key or a name — it gives up and the robust decoding reads the
// answer from scratch. Wherever it answers, its answer is the robust one
// (the differential tests and FuzzDecodeState check that).

// plainState is the part of a plain state answer a success needs.
type plainState struct {
	sku, device  []byte // nil when absent or null
	capabilities []plainCapState
}

// plainCapState is one capability of a plain answer: slices of the answer,
// which readStateFast copies (or finds among the names it has seen).
type plainCapState struct {
	typ, instance []byte
	value         []byte // the raw value; nil when absent
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
	room := capRooms.Get().(*[]plainCapState)
	p := plainState{capabilities: (*room)[:0]}
	defer func() {
		if cap(p.capabilities) <= 64 { // a hostile answer's thousands are not kept
			clear(p.capabilities) // they point into the answer's buffer
			*room = p.capabilities[:0]
			capRooms.Put(room)
		}
	}()
	if !readPlainState(a.body, &p) {
		return DeviceState{}, false
	}
	if (len(p.sku) != 0 && !bytes.EqualFold(p.sku, []byte(cl.sku))) || (len(p.device) != 0 && !bytes.EqualFold(p.device, []byte(cl.device))) {
		return DeviceState{}, false
	}
	caps := make([]CapabilityState, 0, len(p.capabilities))
	for _, pc := range p.capabilities {
		if len(pc.instance) == 0 {
			return DeviceState{}, false
		}
		var v any
		if pc.value != nil {
			var err error
			if v, err = capability.Normalize(pc.value); err != nil {
				return DeviceState{}, false
			}
		}
		caps = append(caps, CapabilityState{Type: capability.NormalizeType(c.names.get(pc.typ)), Instance: c.names.get(pc.instance), State: StateValue{Value: v}})
	}
	// The same log lines, in the same order, as the robust decoding.
	for _, cs := range caps {
		c.noteCapabilityType(cs.Type, cs.Instance, cl.sku, cl.device)
	}
	return DeviceState{SKU: cl.sku, Device: cl.device, Capabilities: caps}, true
}

// capRooms keeps the slices readPlainState collects capabilities in, for
// the next answer: one a read would be most of what is left for the
// collector once the answer's buffer is reused (answer.release).
var capRooms = sync.Pool{New: func() any { s := make([]plainCapState, 0, 16); return &s }}

// readPlainState reads a state answer when it is plain (see above); ok is
// false for anything else. The members it reads are matched exactly, and a
// member spelt so that encoding/json would match it to one of them
// regardless of case makes it give up, as does a second one of the same.
func readPlainState(body []byte, p *plainState) bool {
	if !json.Valid(body) {
		return false
	}
	r := plainReader{b: body}
	var code, payload bool
	ok := r.object(func(key []byte) bool {
		switch {
		case string(key) == "code" && !code:
			code = true
			return string(r.token()) == "200"
		case string(key) == "payload" && !payload:
			payload = true
			return r.payload(p)
		case foldsTo(key, "code") || foldsTo(key, "payload"):
			return false
		}
		r.skip()
		return true
	})
	return ok && code && payload
}

func (r *plainReader) payload(p *plainState) bool {
	var sku, device, caps bool
	return r.object(func(key []byte) bool {
		switch {
		case string(key) == "sku" && !sku:
			sku = true
			return r.raw(&p.sku)
		case string(key) == "device" && !device:
			device = true
			return r.raw(&p.device)
		case string(key) == "capabilities" && !caps:
			caps = true
			return r.null() || r.array(func() bool {
				var c plainCapState
				ok := r.capability(&c)
				p.capabilities = append(p.capabilities, c)
				return ok
			})
		case foldsTo(key, "sku") || foldsTo(key, "device") || foldsTo(key, "capabilities"):
			return false
		}
		r.skip()
		return true
	})
}

func (r *plainReader) capability(c *plainCapState) bool {
	var typ, instance, state bool
	return r.object(func(key []byte) bool {
		switch {
		case string(key) == "type" && !typ:
			typ = true
			return r.raw(&c.typ)
		case string(key) == "instance" && !instance:
			instance = true
			return r.raw(&c.instance)
		case string(key) == "state" && !state:
			state = true
			var value bool
			return r.null() || r.object(func(key []byte) bool {
				switch {
				case string(key) == "value" && !value:
					value = true
					start := r.i
					r.skip()
					c.value = r.b[start:r.i]
					return true
				case foldsTo(key, "value"):
					return false
				}
				r.skip()
				return true
			})
		case foldsTo(key, "type") || foldsTo(key, "instance") || foldsTo(key, "state"):
			return false
		}
		r.skip()
		return true
	})
}

// plainReader walks JSON that json.Valid accepted, so it checks only what
// tells a plain answer from another.
type plainReader struct {
	b []byte
	i int
}

func (r *plainReader) space() {
	for r.i < len(r.b) && isSpace(r.b[r.i]) {
		r.i++
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// object calls member for each member of the object at r, with r at the
// member's value, which member must read; false when r is not at an object
// or member says no.
func (r *plainReader) object(member func(key []byte) bool) bool {
	if r.space(); r.i >= len(r.b) || r.b[r.i] != '{' {
		return false
	}
	r.i++
	for {
		if r.space(); r.b[r.i] == '}' {
			r.i++
			return true
		}
		key, ok := r.plainString()
		if !ok {
			return false
		}
		r.space()
		r.i++ // the colon
		if !member(key) {
			return false
		}
		if r.space(); r.b[r.i] == ',' {
			r.i++
		}
	}
}

// array calls element for each element of the array at r, with r at it.
func (r *plainReader) array(element func() bool) bool {
	if r.space(); r.i >= len(r.b) || r.b[r.i] != '[' {
		return false
	}
	r.i++
	for {
		if r.space(); r.b[r.i] == ']' {
			r.i++
			return true
		}
		if !element() {
			return false
		}
		if r.space(); r.b[r.i] == ',' {
			r.i++
		}
	}
}

// raw reads a string without escapes that is valid UTF-8 (what the typed
// decoding would return unchanged) into s, a slice of the answer; null
// leaves s as it is.
func (r *plainReader) raw(s *[]byte) bool {
	if r.null() {
		return true
	}
	b, ok := r.plainString()
	if ok {
		*s = b
	}
	return ok
}

// plainString reads the string at r; ok is false (and r is left anywhere)
// when r is not at a string or the string has an escape or invalid UTF-8.
func (r *plainReader) plainString() (s []byte, ok bool) {
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return nil, false
	}
	end := bytes.IndexByte(r.b[r.i+1:], '"')
	if end < 0 {
		return nil, false
	}
	s = r.b[r.i+1 : r.i+1+end]
	r.i += end + 2
	return s, bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s)
}

// null reads a null if r is at one.
func (r *plainReader) null() bool {
	if r.space(); bytes.HasPrefix(r.b[r.i:], []byte("null")) {
		r.i += len("null")
		return true
	}
	return false
}

// token reads a number, true, false or null.
func (r *plainReader) token() []byte {
	r.space()
	start := r.i
	for r.i < len(r.b) && !isSpace(r.b[r.i]) && r.b[r.i] != ',' && r.b[r.i] != '}' && r.b[r.i] != ']' {
		r.i++
	}
	return r.b[start:r.i]
}

// skip reads one value of any kind.
func (r *plainReader) skip() {
	r.space()
	depth := 0
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case '"':
			r.i++
			for r.b[r.i] != '"' {
				if r.b[r.i] == '\\' {
					r.i++
				}
				r.i++
			}
			r.i++
		case '{', '[':
			depth++
			r.i++
		case '}', ']':
			depth--
			r.i++
		default:
			if depth == 0 {
				r.token()
				return
			}
			r.i++
		}
		if depth == 0 {
			return
		}
	}
}

// foldsTo reports whether encoding/json would match s to a struct field
// named key (ASCII): equal under Unicode case folding, where "ſ" (2 bytes)
// folds to s and the Kelvin sign (3 bytes) to k.
func foldsTo(s []byte, key string) bool {
	return len(s) >= len(key) && len(s) <= 3*len(key) && bytes.EqualFold(s, []byte(key))
}
