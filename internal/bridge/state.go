package bridge

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/discovery"
)

// State implements the poller's consumer: changed values of a device.
func (b *Bridge) State(dev capability.Device, online bool, changed map[string]any) {
	b.mu.Lock()
	e := b.entryLocked(dev)
	if e == nil {
		b.mu.Unlock()
		return
	}
	e.online, e.reachable, e.read = online, true, true
	e.lastRead = time.Now()
	maps.Copy(e.values, changed)
	msgs := b.stateLocked(e)
	b.sendLocked(msgs)
	b.mu.Unlock()
}

// Unreachable implements the poller's consumer: reads of the device keep
// failing, so it is shown unavailable until a read works again.
func (b *Bridge) Unreachable(dev capability.Device, err error) {
	b.mu.Lock()
	e := b.entryLocked(dev)
	if e == nil {
		b.mu.Unlock()
		return
	}
	e.reachable = false
	msgs := b.stateLocked(e)
	b.sendLocked(msgs)
	b.mu.Unlock()
	b.log.Warn().Err(err).Str("device", dev.String()).Msg("device unreachable: marked unavailable until a read works")
}

// stateLocked returns the messages for what changed in a device's state,
// light state and availability.
func (b *Bridge) stateLocked(e *entry) []message {
	var msgs []message
	l := b.opt.Layout
	if e.read {
		if p := stateJSON(e); !bytes.Equal(p, e.stateJSON) {
			e.stateJSON = p
			msgs = append(msgs, message{l.State(e.id), p, true})
		}
		if b.opt.DiscoveryEnabled {
			if p, ok := discovery.LightState(e.dev, e.values, e.online); ok && !bytes.Equal(p, e.lightJSON) {
				e.lightJSON = p
				msgs = append(msgs, message{l.Light(e.id), p, true})
			}
		}
	}
	avail := "offline"
	if e.online && e.reachable {
		avail = "online"
	}
	if !e.read {
		avail = "" // nothing known yet: say nothing rather than guess
	}
	if avail != "" && avail != e.avail {
		e.avail = avail
		msgs = append(msgs, message{l.Availability(e.id), []byte(avail), true})
	}
	return msgs
}

// stateJSON is the <id>/state payload: online plus every known value keyed
// by instance, in a stable order so unchanged state is byte-identical.
func stateJSON(e *entry) []byte {
	var buf bytes.Buffer
	buf.WriteString(`{"online":`)
	if e.online {
		buf.WriteString("true")
	} else {
		buf.WriteString("false")
	}
	for _, k := range slices.Sorted(maps.Keys(e.values)) {
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(e.values[k])
		if err != nil {
			continue
		}
		buf.WriteByte(',')
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// applyOptimistic records values the cloud accepted and publishes them, so
// users see the change before the confirming read.
func (b *Bridge) applyOptimistic(dev capability.Device, instance string, value any) {
	b.mu.Lock()
	e := b.entryLocked(dev)
	if e == nil {
		b.mu.Unlock()
		return
	}
	e.values[instance] = value
	switch instance {
	case capability.InstanceColorRGB, capability.InstanceColorTemperatureK:
		// A colour or white now shows instead of a scene, and the cloud
		// reports 0 for the temperature while a colour shows.
		delete(e.values, capability.InstanceLightScene)
		delete(e.values, capability.InstanceDIYScene)
		delete(e.values, capability.InstanceSnapshot)
		if _, hasCT := e.dev.Capability(capability.InstanceColorTemperatureK); hasCT && instance == capability.InstanceColorRGB {
			e.values[capability.InstanceColorTemperatureK] = int64(0)
		}
	case capability.InstanceLightScene, capability.InstanceDIYScene, capability.InstanceSnapshot:
		for _, other := range []string{capability.InstanceLightScene, capability.InstanceDIYScene, capability.InstanceSnapshot} {
			if other != instance {
				delete(e.values, other)
			}
		}
	}
	var msgs []message
	if e.read {
		msgs = b.stateLocked(e)
	}
	b.sendLocked(msgs)
	b.mu.Unlock()
}

// republish sends everything retained again: after a reconnect (the broker
// may have lost it) or Home Assistant's birth (it must see configs, then states).
func (b *Bridge) republish(withConfigs bool) {
	b.mu.Lock()
	var msgs []message
	l := b.opt.Layout
	if b.listed {
		// Before the first list, an empty one would tell subscribers
		// the account has no devices.
		msgs = append(msgs, b.deviceListLocked())
	}
	if withConfigs && b.opt.DiscoveryEnabled {
		msgs = append(msgs, b.bridgeConfigsLocked(true)...)
		for _, id := range b.order {
			msgs = append(msgs, b.discoveryLocked(b.devices[id], true)...)
		}
	}
	for _, id := range b.order {
		e := b.devices[id]
		if e.stateJSON != nil {
			msgs = append(msgs, message{l.State(id), e.stateJSON, true})
		}
		if e.lightJSON != nil {
			msgs = append(msgs, message{l.Light(id), e.lightJSON, true})
		}
		if e.avail != "" {
			msgs = append(msgs, message{l.Availability(id), []byte(e.avail), true})
		}
	}
	if b.lastStats != nil {
		msgs = append(msgs, message{l.BridgeStats(), b.lastStats, true})
	}
	b.sendLocked(msgs)
	b.mu.Unlock()
}

// Connected is called on every (re)connection to the broker: everything
// retained is published again, configs included.
func (b *Bridge) Connected() { b.republish(true) }

// PublishStats publishes the bridge's counters when they changed; the bridge
// device's diagnostic entities read them.
func (b *Bridge) PublishStats(s discovery.BridgeStats) {
	p, err := json.Marshal(s)
	if err != nil {
		return
	}
	b.mu.Lock()
	resend := b.resend
	b.resend = false
	var msgs []message
	msgs = append(msgs, b.bridgeConfigsLocked(false)...)
	if b.listDirty && time.Since(b.listSent) >= deviceListEvery {
		msgs = append(msgs, b.deviceListLocked())
	}
	if !bytes.Equal(p, b.lastStats) {
		b.lastStats = p
		msgs = append(msgs, message{b.opt.Layout.BridgeStats(), p, true})
	}
	b.sendLocked(msgs)
	b.mu.Unlock()
	if resend {
		// Something was not published (a full queue, a closed
		// connection): the retained topics may be stale, so send them all.
		b.republish(true)
	}
}

func (b *Bridge) bridgeConfigsLocked(force bool) []message {
	if !b.opt.DiscoveryEnabled {
		return nil
	}
	var msgs []message
	msgs, b.bridgeConfigs = b.bridgeConfigs.update(discovery.BridgeConfigs(b.opt.Discovery), force)
	return msgs
}

// Event publishes a device event on <id>/event, where the Home Assistant
// event entity and Node-RED see it.
func (b *Bridge) Event(sku, device, instance string, name string, value any, msg string) {
	b.mu.Lock()
	id, ok := b.byKey[key(sku, device)]
	b.mu.Unlock()
	if !ok {
		b.log.Debug().Str("device", sku+"/"+device).Str("instance", instance).Msg("event for an unknown device dropped")
		return
	}
	p := discovery.EventPayload(instance, capability.EventOption{Name: name, Value: value, Message: msg})
	b.send([]message{{b.opt.Layout.Event(id), p, false}})
	b.log.Info().Str("device", sku+"/"+device).Str("instance", instance).Str("event", name).Msg("device event")
}

// Online counts the devices that are online and reachable.
func (b *Bridge) Online() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, e := range b.devices {
		if e.read && e.online && e.reachable {
			n++
		}
	}
	return n
}

// OldestState is the age of the stalest device state: how long ago the
// device read longest ago was last read successfully (0 with no devices;
// a device never read counts from when it was listed).
func (b *Bridge) OldestState() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	var oldest time.Duration
	now := time.Now()
	for _, e := range b.devices {
		oldest = max(oldest, now.Sub(e.lastRead))
	}
	return oldest
}
