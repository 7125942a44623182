package bridge

import (
	"errors"
	"strings"
	"sync"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/topic"
)

// Handle takes one MQTT message on any of Subscriptions. It decodes, validates
// and hands work over without waiting for the cloud, and never panics on bad
// input; every rejection is answered and logged, both bounded (reject.go).
// Messages on the bridge's own retained topics go to the mirror (keep.go).
//
// retained says the broker sent a message left retained, perhaps long ago. It is
// not acted on, since a retained <id>/set would undo every later change at each
// start; the first on each topic is logged with how to clear it.
func (b *Bridge) Handle(t string, payload []byte, retained bool) {
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
	if b.watched(t) {
		if !retained { // a retained one comes on subscribing, and every connect republishes
			b.mirror.observed(t, payload)
		}
		return
	}
	r, err := b.opt.Layout.Route(t)
	switch {
	case errors.Is(err, topic.ErrNotInbound):
		return
	case retained:
		b.ignoreRetained(t)
		return
	case r.Kind == topic.KindRequest:
		if len(payload) > MaxPayload {
			b.reply(r.Action, requestJSON{}, tooLarge(len(payload)))
			return
		}
		b.handleRequest(r.Action, payload)
		return
	case err == nil && len(payload) == 0 && r.Kind != topic.KindGet:
		// The empty message that clears a retained command reaches us too; it asks
		// for nothing and is no error.
		b.log.Debug().Str("topic", clip(t, maxErrorText)).Msg("empty command: a retained command was cleared; nothing to do")
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

// watched reports whether t is one of the bridge's own retained topics it
// keeps true (keep.go).
func (b *Bridge) watched(t string) bool {
	if t == b.opt.Layout.BridgeState() {
		return true
	}
	_, ok := b.opt.Layout.AvailabilityID(t)
	return ok
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
		b.reject(id, dev, "", nil, codedError{id + " is disabled: enable it with " + b.opt.Layout.BridgeDeviceOptions() + ` {"device":"` + id + `","options":{"disabled":false}}`, 403})
		return
	}
	switch r.Kind {
	case topic.KindSet:
		b.handleSetObject(id, dev, payload)
	case topic.KindSetInstance:
		b.command(id, dev, r.Instance, parsePayload(payload))
	case topic.KindGet:
		// A read that fails after it was queued is answered like one refused at
		// once, never with silence.
		err := b.read.ReadNow(dev.SKU, dev.Device, func(err error) {
			if err != nil {
				b.reject(id, dev, "", nil, readFailure{err})
			}
		})
		if err != nil {
			b.reject(id, dev, "", nil, readFailure{err})
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
	if b.localCommand(id, dev, req) {
		return // over the LAN (local.go); the cloud if that fails
	}
	b.cloudCommand(id, dev, req)
}

// completeStruct lays a partial struct value over the last known one, so
// {"sensitivity":80} keeps the mode and colour already set. With no value known
// (the cloud never reports music mode) the base is a valid example from the definition.
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
	case errors.Is(r.Err, capability.ErrSuperseded):
		// A newer value for the same instance replaced it and reports instead. Logged
		// at debug to tell a superseded value from a lost one.
		b.log.Debug().Str("device", dev.String()).Str("instance", r.Request.Instance).
			Interface("value", r.Request.Value).Msg("command superseded by a newer one before it was sent")
	default:
		b.reject(id, dev, r.Request.Instance, r.Request.Value, r.Err)
		b.mirror.republishState(dev.Key()) // roll back what an optimistic UI may show
	}
}

// maxRetainedTopics bounds the topics remembered as warned about: past
// it, each retained message is counted and one more line says how many.
const maxRetainedTopics = 1024

// retainedSeen remembers the topics whose retained message was logged.
type retainedSeen struct {
	mu     sync.Mutex
	topics map[string]bool
	more   int // retained messages on topics beyond maxRetainedTopics
}

// ignoreRetained logs a retained command or request once per topic: a
// warning naming the topic and the command that clears it.
func (b *Bridge) ignoreRetained(t string) {
	s := &b.retained
	s.mu.Lock()
	first, more := false, 0
	switch {
	case s.topics[t]:
	case len(s.topics) < maxRetainedTopics:
		if s.topics == nil {
			s.topics = map[string]bool{}
		}
		s.topics[t], first = true, true
	default:
		s.more++
		more = s.more
	}
	s.mu.Unlock()
	switch {
	case first:
		b.log.Warn().Str("topic", clip(t, maxErrorText)).Str("clear_with", clearCommand(t)).
			Msg("retained message ignored: a command or request left retained on the broker would be carried out " +
				"again at every start, undoing what was changed since; publish commands without the retain flag, " +
				"and clear this one with clear_with (add -h, -p, -u and -P as for your broker)")
	case more > 0 && more&(more-1) == 0: // 1, 2, 4, 8, …: the count, without a line for each
		b.log.Warn().Int("topics_beyond_limit", more).Str("topic", clip(t, maxErrorText)).
			Msg("more retained commands or requests ignored than are logged one by one: list them with mosquitto_sub -v --retained-only -t '#'")
	}
}

// clearCommand is the mosquitto_pub command that deletes a topic's
// retained message, the topic quoted for a POSIX shell.
func clearCommand(t string) string {
	if len(t) > maxErrorText {
		return "mosquitto_pub -r -n -t TOPIC (the topic is too long to show here: find it with mosquitto_sub -v --retained-only -t '#')"
	}
	return "mosquitto_pub -r -n -t '" + strings.ReplaceAll(t, "'", `'\''`) + "'"
}
