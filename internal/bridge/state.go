package bridge

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/registry"
)

// onState is the registry's State hook: values of a device changed, its
// availability, or where it is reached.
func (m *Mirror) onState(v registry.View) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.entryLocked(v.Device.Key()); e != nil {
		m.locatedLocked(e, v.Location)
		m.sendLocked(m.stateLocked(e, v))
	}
}

// onUnreachable is the registry's Unreachable hook: reads of the device
// keep failing, so it is shown unavailable until a read works again.
func (m *Mirror) onUnreachable(v registry.View, _ error) { m.onState(v) }

// stateLocked returns the messages for what changed in a device's state,
// light state and availability.
func (m *Mirror) stateLocked(e *entry, v registry.View) []message {
	var msgs []message
	l := m.opt.Layout
	if v.Read {
		if p := stateJSON(v); !bytes.Equal(p, e.stateJSON) {
			e.stateJSON = p
			msgs = append(msgs, message{l.State(e.id), p, true})
		}
		if m.opt.DiscoveryEnabled {
			if p, ok := discovery.LightState(v.Device, v.Values, v.Online); ok && !bytes.Equal(p, e.lightJSON) {
				e.lightJSON = p
				msgs = append(msgs, message{l.Light(e.id), p, true})
			}
		}
	}
	// Nothing known yet: say nothing rather than guess.
	if available, known := v.Available(); known {
		avail := "offline"
		if available {
			avail = "online"
		}
		if avail != e.avail {
			e.avail = avail
			msgs = append(msgs, message{l.Availability(e.id), []byte(avail), true})
		}
	}
	return msgs
}

// stateJSON is the <id>/state payload: online plus every known value keyed
// by instance, in a stable order so unchanged state is byte-identical.
func stateJSON(v registry.View) []byte {
	var buf bytes.Buffer
	buf.WriteString(`{"online":`)
	if v.Online {
		buf.WriteString("true")
	} else {
		buf.WriteString("false")
	}
	if c := v.Location.Connection(); c != "" {
		buf.WriteString(`,"connection":"` + c + `"`) // local.go
	}
	for _, k := range slices.Sorted(maps.Keys(v.Values)) {
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(v.Values[k])
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

// republish sends everything retained again, after a reconnect or Home
// Assistant's birth. Configs go last; the states they point to are retained,
// so Home Assistant still gets them.
func (m *Mirror) republish(withConfigs bool) {
	m.mu.Lock()
	var msgs []message
	l := m.opt.Layout
	if m.listed {
		// Before the first list, an empty one would tell subscribers
		// the account has no devices.
		msgs = append(msgs, m.deviceListLocked())
	}
	if withConfigs && m.opt.DiscoveryEnabled {
		msgs = append(msgs, m.bridgeConfigsLocked(true)...)
		for _, id := range m.order {
			msgs = append(msgs, m.discoveryLocked(m.devices[id], true)...)
		}
	}
	for _, id := range m.order {
		e := m.devices[id]
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
	if m.info != nil {
		msgs = append(msgs, message{l.BridgeInfo(), m.info, true})
	}
	if m.lastStats != nil {
		msgs = append(msgs, message{l.BridgeStats(), m.lastStats, true})
	}
	m.sendLocked(msgs)
	m.mu.Unlock()
}

// Connected is called on every connection to the broker with the publisher to
// use; everything retained is published again, configs included.
func (m *Mirror) Connected(p Publisher) {
	m.mu.Lock()
	m.pub = p
	m.mu.Unlock()
	m.republish(true)
}

// PublishStats publishes the bridge's figures when any changed; the caller
// batches the changes. The first stats with a quota bring the quota entities,
// which then stay for the run.
func (m *Mirror) PublishStats(s discovery.BridgeStats) {
	p, err := json.Marshal(s)
	if err != nil {
		return
	}
	m.mu.Lock()
	resend := m.resend
	m.resend = false
	if s.QuotaSource != nil && !m.opt.Discovery.QuotaKnown {
		m.opt.Discovery.QuotaKnown = true
		m.bridgeConfigsStale = true
	}
	var msgs []message
	if m.bridgeConfigsStale {
		// Built only when they may have changed: they are a dozen JSON
		// documents, and stats go out every few seconds.
		msgs = append(msgs, m.bridgeConfigsLocked(false)...)
	}
	if m.listDirty && time.Since(m.listSent) >= deviceListEvery {
		msgs = append(msgs, m.deviceListLocked())
	}
	if !bytes.Equal(p, m.lastStats) {
		m.lastStats = p
		msgs = append(msgs, message{m.opt.Layout.BridgeStats(), p, true})
	}
	m.sendLocked(msgs)
	m.mu.Unlock()
	if resend {
		// Something was not published (a full queue, a closed
		// connection): the retained topics may be stale, so send them all.
		m.republish(true)
	}
}

func (m *Mirror) bridgeConfigsLocked(force bool) []message {
	if !m.opt.DiscoveryEnabled {
		return nil
	}
	var msgs []message
	msgs, m.bridgeConfigs = m.bridgeConfigs.update(discovery.BridgeConfigs(m.opt.Discovery), force)
	m.bridgeConfigsStale = false
	return msgs
}

// Event publishes a device event on <id>/event, where the Home Assistant
// event entity and Node-RED see it.
func (m *Mirror) Event(sku, device, instance string, name string, value any, msg string) {
	m.mu.Lock()
	id, ok := m.byKey[capability.Key{SKU: sku, Device: device}]
	m.mu.Unlock()
	if !ok {
		m.log.Debug().Str("device", sku+"/"+device).Str("instance", instance).Msg("event for an unknown device dropped")
		return
	}
	p := discovery.EventPayload(instance, capability.EventOption{Name: name, Value: value, Message: msg})
	m.send([]message{{m.opt.Layout.Event(id), p, false}})
	m.log.Info().Str("device", sku+"/"+device).Str("instance", instance).Str("event", name).Msg("device event")
}

// republishState publishes the device's last state again: a failed command
// rolls back what an optimistic UI may show.
func (m *Mirror) republishState(k capability.Key) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.entryLocked(k); e != nil && e.stateJSON != nil {
		m.sendLocked([]message{{m.opt.Layout.State(e.id), e.stateJSON, true}})
	}
}

// deviceList is the device list as JSON, as bridge/devices carries it.
func (m *Mirror) deviceList() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deviceListJSONLocked()
}
