package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/topic"
)

// Handle takes one MQTT message on any of Subscriptions. It decodes and
// validates, hands work over without waiting for the cloud, and never panics
// on bad input: every rejection is answered on <id>/error and logged, both
// bounded (see reject.go). A payload over MaxPayload is refused unread.
func (b *Bridge) Handle(t string, payload []byte) {
	defer func() {
		if r := recover(); r != nil {
			b.log.Error().Interface("panic", r).Str("topic", clip(t, maxErrorText)).Msg("bug: message handler panicked; message dropped")
		}
	}()
	if t == b.opt.HAStatusTopic {
		if len(payload) < 64 && strings.EqualFold(strings.TrimSpace(string(payload)), "online") {
			b.log.Info().Msg("home assistant is online: republishing discovery and state")
			b.mirror.republish(true)
		}
		return
	}
	r, err := b.opt.Layout.Route(t)
	switch {
	case errors.Is(err, topic.ErrNotInbound):
		return
	case r.Kind == topic.KindRequest:
		if len(payload) > MaxPayload {
			b.respond(r.Action, requestJSON{}, nil, tooLarge(len(payload)))
			return
		}
		b.handleRequest(r.Action, payload)
		return
	}
	if len(payload) > MaxPayload {
		b.rejectRef(r.ID, "", clipPayload(payload), tooLarge(len(payload)))
		return
	}
	if err != nil {
		b.rejectRef(r.ID, "", nil, badFormat(err))
		return
	}
	if !b.hold(r, payload) {
		b.handleDevice(r, payload)
	}
}

// rejectRef rejects a message for the device reference ref (a topic id):
// as that device's when it is one, else as an unknown device's.
func (b *Bridge) rejectRef(ref, instance string, value any, err error) {
	if k, id, ok := b.mirror.keyOf(ref); ok {
		if dev, ok := b.reg.Device(k); ok {
			b.reject(id, dev, instance, value, err)
			return
		}
	}
	b.rejectAs(ref, false, capability.Device{SKU: "?", Device: clip(ref, maxEchoedID)}, instance, value, err)
}

// handleDevice takes a message for a device: <id>/set, set/<instance>, get,
// light/set, segment/<n>/set.
func (b *Bridge) handleDevice(r topic.Route, payload []byte) {
	k, id, ok := b.mirror.keyOf(r.ID)
	var dev capability.Device
	if ok {
		dev, ok = b.reg.Device(k)
	}
	if !ok {
		// Answered without the payload: the sender chose the id.
		b.rejectAs(r.ID, false, capability.Device{SKU: "?", Device: clip(r.ID, maxEchoedID)}, "", nil, unknownDevice(r.ID, b.opt.Layout.BridgeDevices()))
		return
	}
	if b.mirror.disabled(k) {
		b.reject(id, dev, "", nil, codedError{"bridge: " + id + " is disabled: enable it with " + b.opt.Layout.BridgeDeviceOptions() + ` {"device":"` + id + `","options":{"disabled":false}}`, 403})
		return
	}
	switch r.Kind {
	case topic.KindSet:
		b.handleSetObject(id, dev, payload)
	case topic.KindSetInstance:
		b.command(id, dev, r.Instance, parsePayload(payload))
	case topic.KindGet:
		// A read that fails once accepted (a 429 or 401 after it was
		// queued, the cloud unreachable) is answered like one refused at
		// once: never silence.
		err := b.read.ReadNow(dev.SKU, dev.Device, func(err error) {
			if err != nil {
				b.reject(id, dev, "", nil, err)
			}
		})
		if err != nil {
			b.reject(id, dev, "", nil, err)
		}
	case topic.KindLightSet:
		cmds, err := discovery.DecodeLight(dev, payload)
		if err != nil {
			b.reject(id, dev, "light", payload, badFormat(err))
			return
		}
		for _, c := range cmds {
			b.command(id, dev, c.Instance, c.Value)
		}
	case topic.KindSegmentSet:
		cmds, err := discovery.DecodeSegment(dev, r.Segment, payload)
		if err != nil {
			b.reject(id, dev, "segment", payload, badFormat(err))
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
		b.reject(id, dev, "", payload, &capability.ValueError{Category: capability.CategoryFormat,
			Msg: `set expects a JSON object such as {"powerSwitch":1,"brightness":40}; send a plain value to set/<instance>`})
		return
	}
	if len(keys) == 0 {
		b.reject(id, dev, "", payload, &capability.ValueError{Category: capability.CategoryEmpty,
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
