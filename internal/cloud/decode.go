package cloud

// Decoding each endpoint's answer robustly: what the live service really
// sends, logged once when odd, never the key.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"cloud2mqtt/internal/capability"

	"github.com/rs/zerolog"
)

// readDevices decodes a device-list answer.
func (c *Client) readDevices(cl call, a answer) ([]capability.Device, error) {
	env, err := c.check(cl, a)
	if err != nil {
		return nil, err
	}
	out := []capability.Device{}
	if isNull(env.data) {
		return out, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(env.data, &items); err != nil {
		e := cl.fail(ErrTransient, "the device list's data is not a list", err)
		e.HTTPStatus, e.Code = a.status, env.code
		return nil, e
	}
	seen := make(map[string]bool, len(items))
	var dec capability.DeviceDecoder
	for i, raw := range items {
		d, err := dec.Decode(raw)
		if err != nil {
			c.warnOnce("device-undecodable:"+strconv.Itoa(i)+":"+err.Error(), func(ev *zerolog.Event) {
				ev.Int("index", i).Str("error", c.clean(err.Error())).Msg("a device in the list cannot be decoded; left out")
			})
			continue
		}
		if d.SKU == "" || d.Device == "" {
			c.warnOnce("device-unnamed:"+d.SKU+"/"+d.Device+":"+d.Name, func(ev *zerolog.Event) {
				ev.Int("index", i).Str("sku", c.clean(d.SKU)).Str("device", c.clean(d.Device)).Str("name", c.clean(d.Name)).
					Msg("a device in the list has no sku or device id; left out")
			})
			continue
		}
		key := d.SKU + "/" + d.Device
		if seen[key] {
			c.warnOnce("device-duplicate:"+key, func(ev *zerolog.Event) {
				ev.Str("sku", c.clean(d.SKU)).Str("device", c.clean(d.Device)).Msg("a device appears twice in the list; the first is kept")
			})
			continue
		}
		seen[key] = true
		c.noteDevice(d)
		out = append(out, d)
	}
	return out, nil
}

// noteDevice logs, once per distinct thing, what the bridge will not fully
// understand about a device: its type, its capability types, its problems.
func (c *Client) noteDevice(d capability.Device) {
	if d.Type != "" && !capability.KnownDeviceType(d.Type) {
		c.warnOnce("device-type:"+d.Type, func(ev *zerolog.Event) {
			ev.Str("type", c.clean(d.Type)).Str("sku", c.clean(d.SKU)).Str("device", c.clean(d.Device)).
				Msg("unknown device type; kept as reported")
		})
	}
	for _, cp := range d.Capabilities {
		c.noteCapabilityType(cp.Type, cp.Instance, d.SKU, d.Device)
	}
	for _, p := range d.Problems {
		c.warnOnce("device-problem:"+d.SKU+"/"+d.Device+":"+p, func(ev *zerolog.Event) {
			ev.Str("sku", c.clean(d.SKU)).Str("device", c.clean(d.Device)).Str("problem", c.clean(p)).
				Msg("a capability cannot be decoded; left out")
		})
	}
}

func (c *Client) noteCapabilityType(typ, instance, sku, device string) {
	if capability.KnownCapabilityType(typ) {
		return
	}
	c.warnOnce("capability-type:"+typ, func(ev *zerolog.Event) {
		ev.Str("type", c.clean(typ)).Str("instance", c.clean(instance)).Str("sku", c.clean(sku)).Str("device", c.clean(device)).
			Msg("unknown capability type; kept as reported")
	})
}

// warnOnce logs a warning the first time key is seen by this client. Past
// maxRemembered keys it keeps logging rather than grow without bound.
func (c *Client) warnOnce(key string, log func(*zerolog.Event)) {
	c.mu.Lock()
	_, done := c.seen[key]
	if !done && len(c.seen) < maxRemembered {
		c.seen[key] = struct{}{}
	}
	c.mu.Unlock()
	if !done {
		log(c.log.Warn())
	}
}

// devicePart is the part of a state or scene payload that names the device.
type devicePart struct {
	SKU          string            `json:"sku"`
	Device       string            `json:"device"`
	Capabilities []json.RawMessage `json:"capabilities"`
}

// readPayload decodes a state or scene payload and checks it is about the
// device asked for (a missing name is taken to be that device).
func (c *Client) readPayload(cl call, a answer, env envelope) (devicePart, error) {
	var p devicePart
	if err := json.Unmarshal(env.payload, &p); err != nil {
		e := cl.fail(ErrTransient, "the answer's payload is not a device object", err)
		e.HTTPStatus, e.Code = a.status, env.code
		return p, e
	}
	if (p.SKU != "" && !strings.EqualFold(p.SKU, cl.sku)) || (p.Device != "" && !strings.EqualFold(p.Device, cl.device)) {
		e := cl.fail(ErrTransient, fmt.Sprintf("the answer is about %s/%s, not the device asked for", c.clean(p.SKU), c.clean(p.Device)), nil)
		e.HTTPStatus, e.Code = a.status, env.code
		return p, e
	}
	return p, nil
}

// readState decodes a state answer: each capability on its own, so that
// one that cannot be read costs only itself (logged).
func (c *Client) readState(cl call, a answer) (DeviceState, error) {
	env, err := c.check(cl, a)
	if err != nil {
		return DeviceState{}, err
	}
	if isNull(env.payload) {
		e := cl.fail(ErrTransient, "the state answer has no payload", nil)
		e.HTTPStatus, e.Code = a.status, env.code
		return DeviceState{}, e
	}
	p, err := c.readPayload(cl, a, env)
	if err != nil {
		return DeviceState{}, err
	}
	caps := decodeCapabilities(c, cl, p.Capabilities, decodeCapabilityState, func(cs CapabilityState) (string, string) { return cs.Type, cs.Instance })
	return DeviceState{SKU: cl.sku, Device: cl.device, Capabilities: caps}, nil
}

// decodeCapabilities decodes the capabilities of a state or scene payload.
// One that cannot be decoded or has no instance is left out and logged.
func decodeCapabilities[T any](c *Client, cl call, raws []json.RawMessage, decode func([]byte) (T, error), name func(T) (typ, instance string)) []T {
	out := make([]T, 0, len(raws))
	for i, raw := range raws {
		v, err := decode(raw)
		typ, instance := name(v)
		if err == nil && instance == "" {
			err = errors.New("it has no instance")
		}
		if err != nil {
			c.warnOnce(cl.ep.name+"-undecodable:"+cl.sku+"/"+cl.device+":"+strconv.Itoa(i)+":"+err.Error(), func(ev *zerolog.Event) {
				ev.Str("endpoint", cl.ep.name).Str("sku", c.clean(cl.sku)).Str("device", c.clean(cl.device)).Int("index", i).
					Str("error", c.clean(err.Error())).Msg("a capability in the answer cannot be decoded; left out")
			})
			continue
		}
		c.noteCapabilityType(typ, instance, cl.sku, cl.device)
		out = append(out, v)
	}
	return out
}

// unmarshal is json.Unmarshal returning the value.
func unmarshal[T any](b []byte) (T, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}

// readScenes decodes a scene or DIY-scene answer. A missing payload is no
// scenes.
func (c *Client) readScenes(cl call, a answer) (Scenes, error) {
	env, err := c.check(cl, a)
	if err != nil {
		return Scenes{}, err
	}
	if isNull(env.payload) {
		return Scenes{SKU: cl.sku, Device: cl.device, Capabilities: []capability.Capability{}}, nil
	}
	p, err := c.readPayload(cl, a, env)
	if err != nil {
		return Scenes{}, err
	}
	caps := decodeCapabilities(c, cl, p.Capabilities, unmarshal[capability.Capability], func(cp capability.Capability) (string, string) { return cp.Type, cp.Instance })
	return Scenes{SKU: cl.sku, Device: cl.device, Capabilities: caps}, nil
}

// readControl decodes a control answer. Besides the code, the live service
// reports a device-side failure in the echoed capability's state:
// {"status":"failure","errorCode":…,"errorMsg":…}.
func (c *Client) readControl(cl call, a answer) (ControlResult, error) {
	env, err := c.check(cl, a)
	if err != nil {
		return ControlResult{}, err
	}
	res := ControlResult{RequestID: env.requestID, Code: env.code, Msg: env.msg}
	if isNull(env.capability) {
		return res, nil
	}
	echo, err := decodeEcho(env.capability)
	if err != nil {
		// The code said success; an echo we cannot read does not undo that.
		c.warnOnce("control-echo:"+cl.sku+"/"+cl.device+":"+cl.instance, func(ev *zerolog.Event) {
			ev.Str("sku", c.clean(cl.sku)).Str("device", c.clean(cl.device)).Str("instance", c.clean(cl.instance)).
				Str("error", c.clean(err.Error())).Msg("the control answer's capability cannot be read; trusting its code")
		})
		return res, nil
	}
	res.Capability = echo
	if echo.State == nil || !strings.EqualFold(strings.TrimSpace(echo.State.Status), "failure") {
		return res, nil
	}
	msg := c.clean(echo.State.ErrorMsg)
	if msg == "" {
		msg = "the device reported a failure"
	}
	kind, code := ErrTransient, 0
	switch v := echo.State.ErrorCode.(type) {
	case int64:
		if v > math.MinInt32 && v < math.MaxInt32 {
			code = int(v)
		}
	case string:
		if i, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			code = i
		} else if v != "" {
			msg += " [" + c.clean(v) + "]"
		}
	case nil:
	default:
		msg += " [" + c.clean(fmt.Sprint(v)) + "]"
	}
	if code >= 400 {
		kind = kindForStatus(code)
	}
	e := cl.fail(kind, msg, nil)
	e.HTTPStatus, e.Code = a.status, code
	return ControlResult{}, e
}

// decodeEcho reads the capability echoed by a control answer, tolerating
// members of unexpected JSON types.
func decodeEcho(raw json.RawMessage) (*ControlEcho, error) {
	var m struct {
		Type     json.RawMessage `json:"type"`
		Instance json.RawMessage `json:"instance"`
		Value    json.RawMessage `json:"value"`
		State    json.RawMessage `json:"state"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	echo := &ControlEcho{Type: capability.NormalizeType(rawText(m.Type)), Instance: rawText(m.Instance)}
	if !isNull(m.Value) {
		v, err := capability.Normalize(m.Value)
		if err != nil {
			return nil, err
		}
		echo.Value = v
	}
	if isNull(m.State) {
		return echo, nil
	}
	var st struct {
		Status    json.RawMessage `json:"status"`
		ErrorCode json.RawMessage `json:"errorCode"`
		ErrorMsg  json.RawMessage `json:"errorMsg"`
	}
	if err := json.Unmarshal(m.State, &st); err != nil {
		// A bare string state ("failure") is read as the status.
		echo.State = &ControlState{Status: rawText(m.State)}
		return echo, nil
	}
	echo.State = &ControlState{Status: rawText(st.Status), ErrorMsg: rawText(st.ErrorMsg)}
	if !isNull(st.ErrorCode) {
		v, err := capability.Normalize(st.ErrorCode)
		if err != nil {
			return nil, err
		}
		echo.State.ErrorCode = v
	}
	return echo, nil
}

// clean makes a string from an answer safe for an error or a log line: the
// API key redacted, control characters replaced, the length bounded.
func (c *Client) clean(s string) string {
	if c.key != "" && strings.Contains(s, c.key) {
		s = strings.ReplaceAll(s, c.key, "[redacted]")
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)
	if len(s) > maxMsgLen {
		cut := maxMsgLen
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// excerpt quotes the start of an unreadable answer for an error message.
func (c *Client) excerpt(body []byte) string {
	const n = 80
	if len(body) > n+len(c.key) {
		body = body[:n+len(c.key)] // enough to redact a key that straddles the cut
	}
	s := c.clean(string(body))
	if len(s) > n {
		s = s[:n]
	}
	return strconv.Quote(s)
}
