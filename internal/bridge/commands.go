package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/scheduler"
)

// Handle takes one MQTT message on any of Subscriptions. It decodes and
// validates, hands work over without waiting for the cloud, and never panics
// on bad input: every rejection is published on <id>/error and logged.
func (b *Bridge) Handle(t string, payload []byte) {
	defer func() {
		if r := recover(); r != nil {
			b.log.Error().Interface("panic", r).Str("topic", t).Msg("bug: message handler panicked; message dropped")
		}
	}()
	if t == b.opt.HAStatusTopic {
		if strings.EqualFold(strings.TrimSpace(string(payload)), "online") {
			b.log.Info().Msg("home assistant is online: republishing discovery and state")
			b.mirror.republish(true)
		}
		return
	}
	id, rest, ok := b.opt.Layout.Parse(t)
	if !ok {
		return
	}
	if id == "bridge" {
		if action, ok := strings.CutPrefix(rest, "request/"); ok {
			b.handleRequest(action, payload)
		}
		return
	}
	if !b.hold(t, payload) {
		b.handleDevice(t, payload)
	}
}

// handleDevice takes a message for a device: <id>/set, set/<instance>, get,
// light/set, segment/<n>/set.
func (b *Bridge) handleDevice(t string, payload []byte) {
	ref, rest, _ := b.opt.Layout.Parse(t)
	k, id, ok := b.mirror.keyOf(ref)
	var dev capability.Device
	if ok {
		dev, ok = b.reg.Device(k)
	}
	if !ok {
		b.reject(ref, capability.Device{SKU: "?", Device: ref}, "", string(payload), unknownDevice(ref, b.opt.Layout.BridgeDevices()))
		return
	}
	if b.mirror.disabled(k) {
		b.reject(id, dev, "", string(payload), codedError{"bridge: " + id + " is disabled: enable it with " + b.opt.Layout.BridgeDeviceOptions() + ` {"device":"` + id + `","options":{"disabled":false}}`, 403})
		return
	}
	switch {
	case rest == "set":
		b.handleSetObject(id, dev, payload)
	case strings.HasPrefix(rest, "set/"):
		instance := strings.TrimPrefix(rest, "set/")
		b.command(id, dev, instance, parsePayload(payload))
	case rest == "get":
		err := b.read.ReadNow(dev.SKU, dev.Device, func(err error) {
			if err != nil {
				b.log.Warn().Err(err).Str("device", dev.String()).Msg("read on request failed")
			}
		})
		if err != nil {
			b.reject(id, dev, "", nil, err)
		}
	case rest == "light/set":
		cmds, err := discovery.DecodeLight(dev, payload)
		if err != nil {
			b.reject(id, dev, "light", string(payload), badFormat(err))
			return
		}
		for _, c := range cmds {
			b.command(id, dev, c.Instance, c.Value)
		}
	case strings.HasPrefix(rest, "segment/") && strings.HasSuffix(rest, "/set"):
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rest, "segment/"), "/set"))
		if err != nil {
			b.reject(id, dev, "segment", string(payload), badFormat(fmt.Errorf("bridge: segment topic %q: the segment must be a number", t)))
			return
		}
		cmds, err := discovery.DecodeSegment(dev, n, payload)
		if err != nil {
			b.reject(id, dev, "segment", string(payload), badFormat(err))
			return
		}
		for _, c := range cmds {
			b.command(id, dev, c.Instance, c.Value)
		}
	}
}

// handleSetObject takes <id>/set: a JSON object of instance → value, applied
// in the order written.
func (b *Bridge) handleSetObject(id string, dev capability.Device, payload []byte) {
	keys, vals, err := orderedObject(payload)
	if err != nil {
		b.reject(id, dev, "", string(payload), &capability.ValueError{Category: capability.CategoryFormat,
			Msg: `set expects a JSON object such as {"powerSwitch":1,"brightness":40}; send a plain value to set/<instance>`})
		return
	}
	if len(keys) == 0 {
		b.reject(id, dev, "", string(payload), &capability.ValueError{Category: capability.CategoryEmpty,
			Msg: "the set object names no instance"})
		return
	}
	for i, k := range keys {
		b.command(id, dev, k, vals[i])
	}
}

// orderedObject decodes a JSON object keeping its members in order, values
// normalised.
func orderedObject(payload []byte) ([]string, []any, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, nil, errors.New("not a JSON object")
	}
	var keys []string
	var vals []any
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, ok := tok.(string)
		if !ok {
			return nil, nil, errors.New("not a JSON object")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, err
		}
		v, err := capability.Normalize(raw)
		if err != nil {
			return nil, nil, err
		}
		keys = append(keys, k)
		vals = append(vals, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("trailing data after the JSON object")
	}
	return keys, vals, nil
}

// command validates one instance's value and queues it.
func (b *Bridge) command(id string, dev capability.Device, instance string, input any) {
	c, ok := dev.Capability(instance)
	if !ok {
		b.reject(id, dev, instance, input, &capability.ValueError{Category: capability.CategoryUnknown, Instance: instance,
			Msg: "this device has no such instance; it has: " + strings.Join(controllable(dev), ", ")})
		return
	}
	if !c.Controllable() {
		b.reject(id, dev, instance, input, &capability.ValueError{Category: capability.CategoryUnknown, Instance: instance,
			Msg: "this instance is read-only"})
		return
	}
	if partial, ok := input.(map[string]any); ok && c.Parameters != nil && c.Parameters.DataType == capability.DataStruct {
		input = b.completeStruct(dev, c, partial)
	}
	value, err := capability.Decode(c, input)
	if err != nil {
		b.reject(id, dev, instance, input, err)
		return
	}
	req := cloud.ControlRequest{SKU: dev.SKU, Device: dev.Device, Type: c.Type, Instance: instance, Value: value}
	err = b.cmd.Control(req, func(r scheduler.CommandResult) { b.commandDone(id, dev, r) })
	if err != nil {
		b.reject(id, dev, instance, value, err)
	}
}

// completeStruct lays a partial struct value over the last known one, so
// {"sensitivity":80} keeps the music mode and colour already set. With no
// value known yet (music mode is never reported by the cloud) the base is
// a valid example built from the definition, so the first partial command
// works too; capability.Decode still validates the result.
func (b *Bridge) completeStruct(dev capability.Device, c capability.Capability, partial map[string]any) any {
	last, _ := b.reg.Value(dev.Key(), c.Instance)
	if _, ok := last.(map[string]any); !ok {
		last, _ = capability.Example(c)
	}
	return capability.Overlay(last, partial)
}

// commandDone handles the scheduler's report of one command.
func (b *Bridge) commandDone(id string, dev capability.Device, r scheduler.CommandResult) {
	if b.opt.OnCommand != nil {
		b.opt.OnCommand(r)
	}
	switch {
	case r.Err == nil:
		b.log.Debug().Str("device", dev.String()).Str("instance", r.Request.Instance).
			Interface("value", r.Request.Value).Msg("command applied")
		b.reg.SetOptimistic(dev.Key(), r.Request.Instance, r.Request.Value)
		b.read.Confirm(dev.SKU, dev.Device)
	case errors.Is(r.Err, scheduler.ErrSuperseded):
		// A newer value for the same instance took its place; that one reports.
	default:
		b.reject(id, dev, r.Request.Instance, r.Request.Value, r.Err)
		b.mirror.republishState(dev.Key()) // roll back what an optimistic UI may show
	}
}

func (m *Mirror) republishState(k capability.Key) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.entryLocked(k); e != nil && e.stateJSON != nil {
		m.sendLocked([]message{{m.opt.Layout.State(e.id), e.stateJSON, true}})
	}
}

// errorJSON is the <id>/error payload.
type errorJSON struct {
	Instance string `json:"instance"`
	Value    any    `json:"value"`
	Error    string `json:"error"`
	Code     int    `json:"code"`
}

// reject publishes a rejected or failed command on <id>/error and logs it.
func (b *Bridge) reject(id string, dev capability.Device, instance string, value any, err error) {
	code := errorCode(err)
	p, _ := json.Marshal(errorJSON{Instance: instance, Value: value, Error: err.Error(), Code: code})
	b.mirror.send([]message{{b.opt.Layout.Error(id), p, false}})
	b.log.Warn().Str("device", dev.String()).Str("instance", instance).Int("code", code).
		Err(err).Msg("command rejected")
}

// errorCode maps an error onto the HTTP-like code of the error topic.
func errorCode(err error) int {
	var coded codedError
	if errors.As(err, &coded) {
		return coded.code
	}
	var ve *capability.ValueError
	if errors.As(err, &ve) {
		return ve.Code()
	}
	var ae *cloud.APIError
	if errors.As(err, &ae) {
		if ae.Code != 0 {
			return ae.Code
		}
		if ae.HTTPStatus != 0 {
			return ae.HTTPStatus
		}
	}
	switch {
	case errors.Is(err, scheduler.ErrAuthHoldoff):
		return 401 // held back because the cloud refused the key: as the refusal itself
	case errors.Is(err, scheduler.ErrOverloaded):
		return 503
	case errors.Is(err, scheduler.ErrClosed), errors.Is(err, scheduler.ErrNotSent):
		return 503
	}
	return 500
}

// badFormat classifies a payload that could not be decoded as the cloud's
// "invalid parameter format" (code 400), keeping its message.
func badFormat(err error) error {
	var ve *capability.ValueError
	if errors.As(err, &ve) {
		return err
	}
	return &capability.ValueError{Category: capability.CategoryFormat, Msg: err.Error()}
}

// controllable lists the instances a device accepts commands for.
func controllable(d capability.Device) []string {
	var out []string
	for _, c := range d.Capabilities {
		if c.Controllable() {
			out = append(out, c.Instance)
		}
	}
	return out
}

// codedError is an error of the bridge's own with the code of the error
// topic.
type codedError struct {
	msg  string
	code int
}

func (e codedError) Error() string { return e.msg }

func unknownDevice(id, list string) error {
	return codedError{"bridge: unknown device " + strconv.Quote(id) + ": it is not in the cloud's device list; check the id in " + list, 404}
}
