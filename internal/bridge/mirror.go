package bridge

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/topic"
)

// Mirror keeps the broker's retained topics in step with the registry, as one
// of its observers: device list, discovery, state, availability and stats,
// all republished on every connection. It remembers what it published so that
// it sends only what changed.
type Mirror struct {
	opt Options
	log zerolog.Logger

	mu            sync.Mutex
	pub           Publisher                 // the connection, set by Connected; nil until then
	devices       map[string]*entry         // by topic id
	byKey         map[capability.Key]string // → topic id
	order         []string                  // topic ids in list order
	bridgeConfigs configHashes
	// bridgeConfigsStale: the bridge's own configs may differ from those
	// published (none yet, the daily limit changed, or a quota became known).
	bridgeConfigsStale bool
	lastStats          []byte
	info               []byte                           // the retained bridge/info
	options            map[capability.Key]DeviceOptions // by SetDeviceOptions
	polling            map[capability.Key]Polling       // by SetPolling (polling.go)
	listed             bool                             // the first device list has arrived
	listDirty          bool                             // scenes changed the device list; sent with a later stats
	listSent           time.Time                        // when the device list was last published
	resend             bool                             // a publish failed: republish everything with the next stats
	keep               keeper                           // watched topics seen overwritten (keep.go)
}

// entry is what the mirror has published of one device.
type entry struct {
	id  string
	key capability.Key
	dev capability.Device // the definition published (scenes merged in)

	configs   configHashes // discovery configs published
	stateJSON []byte       // last published <id>/state
	lightJSON []byte       // last published <id>/light
	avail     string       // last published availability
	location  registry.Location
}

// NewMirror returns a mirror that publishes nothing until Connected.
func NewMirror(opt Options) *Mirror {
	if opt.HAStatusTopic == "" {
		opt.HAStatusTopic = "homeassistant/status"
	}
	return &Mirror{opt: opt, log: opt.Log, devices: map[string]*entry{}, byKey: map[capability.Key]string{}, options: map[capability.Key]DeviceOptions{},
		bridgeConfigsStale: true, keep: keeper{clk: clock.Or(opt.Clock)}}
}

// message is one publication, collected and sent under the lock.
type message struct {
	topic    string
	payload  []byte
	retained bool
}

func (m *Mirror) send(msgs []message) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sendLocked(msgs)
}

// sendLocked queues msgs while the caller holds m.mu, so that two updates of
// one retained topic can never reach the broker swapped. It never waits.
func (m *Mirror) sendLocked(msgs []message) {
	if m.pub == nil {
		return
	}
	bulk, _ := m.pub.(BulkPublisher)
	for _, msg := range msgs {
		publish := m.pub.Publish
		if bulk != nil && m.isConfig(msg.topic) {
			publish = bulk.PublishBulk
		}
		if err := publish(msg.topic, msg.payload, msg.retained, 1); err != nil {
			m.log.Warn().Err(err).Str("topic", msg.topic).Msg("publish failed; everything is republished shortly")
			m.resend = true
		}
	}
}

// isConfig reports whether t is a discovery config topic, which goes out in
// bulk after the states; a retained state still reaches Home Assistant once
// its config arrives.
func (m *Mirror) isConfig(t string) bool {
	rest, ok := strings.CutPrefix(t, m.opt.Discovery.Prefix+"/")
	return ok && strings.HasSuffix(rest, "/config")
}

// Observer returns the registry observer hooks. The registry calls them in
// order under its lock, so the retained topics end as its last change.
func (m *Mirror) Observer() registry.Observer {
	return registry.Observer{Devices: m.onDevices, State: m.onState, Unreachable: m.onUnreachable, Scenes: m.onScenes}
}

// onDevices is the registry's Devices hook: the account's device list
// changed.
func (m *Mirror) onDevices(all, added, removed []capability.Device) {
	m.mu.Lock()
	m.listed = true
	for _, d := range removed {
		m.sendLocked(m.removeLocked(d.Key()))
	}
	m.order = m.order[:0]
	for _, d := range all {
		k := d.Key()
		id, known := m.byKey[k]
		if !known {
			id = topic.DeviceID(d.SKU, d.Device)
			if _, taken := m.devices[id]; taken {
				// Two devices whose ids collide after cleaning: keep both apart.
				id = uniqueID(m.devices, id)
			}
			m.devices[id] = &entry{id: id, key: k}
			m.byKey[k] = id
		}
		e := m.devices[id]
		e.dev = d
		m.order = append(m.order, id)
		// Sent device by device so that a large account's configs are never all in
		// memory at once.
		m.sendLocked(m.discoveryLocked(e, false))
	}
	m.sendLocked([]message{m.deviceListLocked()})
	m.mu.Unlock()
	for _, d := range added {
		m.log.Info().Str("device", d.String()).Str("name", d.Name).Str("type", d.Type).
			Str("id", topic.DeviceID(d.SKU, d.Device)).Msg("device added")
	}
	for _, d := range removed {
		m.log.Info().Str("device", d.String()).Str("name", d.Name).Msg("device removed")
	}
}

func uniqueID(taken map[string]*entry, id string) string {
	for i := 2; ; i++ {
		c := id + "-" + strconv.Itoa(i)
		if _, ok := taken[c]; !ok {
			return c
		}
	}
}

// removeLocked forgets a device and clears everything it had retained:
// discovery configs, state, light state and availability.
func (m *Mirror) removeLocked(k capability.Key) []message {
	id, ok := m.byKey[k]
	if !ok {
		return nil
	}
	e := m.devices[id]
	delete(m.byKey, k)
	delete(m.devices, id)
	var msgs []message
	for t := range e.configs {
		msgs = append(msgs, message{t, nil, true})
	}
	l := m.opt.Layout
	for _, t := range []string{l.State(id), l.Light(id), l.Availability(id)} {
		msgs = append(msgs, message{t, nil, true})
	}
	return msgs
}

// keyOf finds a device by topic id or "sku/device", in whatever case
// the user typed it when one device alone matches.
func (m *Mirror) keyOf(ref string) (capability.Key, string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.devices[ref]; ok {
		return e.key, e.id, true
	}
	// A topic id is lowercase (topic.DeviceID): "H6072_AABB…" typed as
	// the cloud writes it names the same device.
	if e, ok := m.devices[strings.ToLower(ref)]; ok {
		return e.key, e.id, true
	}
	sku, dev, ok := strings.Cut(ref, "/")
	if !ok {
		return capability.Key{}, "", false
	}
	if id, ok := m.byKey[capability.Key{SKU: sku, Device: dev}]; ok {
		return m.devices[id].key, id, true
	}
	// "sku/device" in another case than the cloud's: taken when one
	// device alone matches.
	var found string
	for k, id := range m.byKey {
		if strings.EqualFold(k.SKU, sku) && strings.EqualFold(k.Device, dev) {
			if found != "" {
				return capability.Key{}, "", false
			}
			found = id
		}
	}
	if found == "" {
		return capability.Key{}, "", false
	}
	return m.devices[found].key, found, true
}

// deviceJSON is one element of <base>/bridge/devices.
type deviceJSON struct {
	ID           string                  `json:"id"`
	SKU          string                  `json:"sku"`
	Device       string                  `json:"device"`
	Name         string                  `json:"name"`
	Type         string                  `json:"type"`
	Options      *optionsJSON            `json:"options,omitempty"`
	Local        *localJSON              `json:"local,omitempty"`
	Poll         *pollJSON               `json:"poll,omitempty"`
	Capabilities []capability.Capability `json:"capabilities"`
}

// optionsJSON is a device's settings in <base>/bridge/devices.
type optionsJSON struct {
	PollInterval string `json:"poll_interval,omitempty"`
	Disabled     bool   `json:"disabled,omitempty"`
	Name         string `json:"name,omitempty"`
}

// DeviceOptions are a user's settings of one device: a disabled device has no
// discovery configs, and a name replaces the cloud's (ids and topics stay).
type DeviceOptions struct {
	PollInterval time.Duration
	Disabled     bool
	Name         string
}

// SetDeviceOptions sets a device's options (also before it is listed) and
// publishes what they change: its discovery configs and the device list.
func (m *Mirror) SetDeviceOptions(k capability.Key, o DeviceOptions) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o == (DeviceOptions{}) {
		delete(m.options, k)
	} else {
		m.options[k] = o
	}
	e := m.entryLocked(k)
	if e == nil {
		return
	}
	msgs := m.discoveryLocked(e, false)
	msgs = append(msgs, m.deviceListLocked())
	m.sendLocked(msgs)
}

// disabled reports whether the user disabled the device.
func (m *Mirror) disabled(k capability.Key) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.options[k].Disabled
}

// deviceListEvery spaces republishes of the device list when only scene lists
// changed, since on a large account each one is over a megabyte.
const deviceListEvery = 30 * time.Second

// ListPending reports whether a republish of the device list waits for its
// turn (deviceListEvery).
func (m *Mirror) ListPending() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.listDirty
}

// deviceListLocked is the retained device list, to be sent now.
func (m *Mirror) deviceListLocked() message {
	m.listDirty = false
	m.listSent = time.Now()
	return message{m.opt.Layout.BridgeDevices(), m.deviceListJSONLocked(), true}
}

// deviceListJSONLocked is the device list as JSON.
func (m *Mirror) deviceListJSONLocked() []byte {
	// Marshalled one device at a time into our own buffer, so that encoding/json's
	// pool does not keep a megabyte-sized buffer alive.
	buf := make([]byte, 0, 1024*len(m.order)+2)
	buf = append(buf, '[')
	for _, id := range m.order {
		e := m.devices[id]
		caps := e.dev.Capabilities
		if caps == nil {
			caps = []capability.Capability{}
		}
		dj := deviceJSON{ID: id, SKU: e.dev.SKU, Device: e.dev.Device,
			Name: capability.DisplayName(e.dev, ""), Type: e.dev.Type, Capabilities: caps}
		dj.Local, dj.Poll = localOf(e.location), m.pollingLocked(e.key)
		if o, ok := m.options[e.key]; ok {
			dj.Options = &optionsJSON{Disabled: o.Disabled, Name: o.Name}
			if o.PollInterval > 0 {
				dj.Options.PollInterval = o.PollInterval.String()
			}
		}
		p, err := json.Marshal(dj)
		if err != nil {
			// Only a value json cannot represent (NaN) gets here; the list
			// goes out without that device rather than not at all.
			m.log.Error().Err(err).Str("device", id).Msg("bug: device cannot be listed on bridge/devices")
			continue
		}
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		buf = append(buf, p...)
	}
	buf = append(buf, ']')
	return buf
}

// discoveryLocked publishes what changed in a device's discovery configs
// (all of them when force is set).
func (m *Mirror) discoveryLocked(e *entry, force bool) []message {
	if !m.opt.DiscoveryEnabled {
		return nil
	}
	var next map[string][]byte
	o := m.options[e.key]
	if !o.Disabled {
		dev := e.dev
		if o.Name != "" {
			dev.Name = o.Name // the display name: ids and topics stay
		}
		next = discovery.Configs(m.opt.Discovery, dev)
	}
	var msgs []message
	msgs, e.configs = e.configs.update(next, force)
	return msgs
}

// configHashes remembers the published discovery configs by topic as hashes,
// which is enough to tell what changed without keeping the payloads.
type configHashes map[string]uint64

func hashOf(p []byte) uint64 {
	h := fnv.New64a()
	h.Write(p)
	return h.Sum64()
}

// update returns the messages that bring the published configs to next (all
// when force is set, an empty payload for each removed one), sorted by topic.
func (old configHashes) update(next map[string][]byte, force bool) ([]message, configHashes) {
	now := make(configHashes, len(next))
	var msgs []message
	for t, p := range next {
		h := hashOf(p)
		now[t] = h
		if prev, ok := old[t]; force || !ok || prev != h {
			msgs = append(msgs, message{t, p, true})
		}
	}
	for t := range old {
		if _, ok := next[t]; !ok {
			msgs = append(msgs, message{t, nil, true})
		}
	}
	slices.SortFunc(msgs, func(a, b message) int { return strings.Compare(a.topic, b.topic) })
	return msgs, now
}

// onScenes is the registry's Scenes hook: a device's scene lists changed.
func (m *Mirror) onScenes(v registry.View) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entryLocked(v.Device.Key())
	if e == nil {
		return
	}
	e.dev = v.Device
	// The large device list goes out with a later stats, at most every
	// deviceListEvery.
	m.listDirty = true
	m.sendLocked(m.discoveryLocked(e, false))
}

func (m *Mirror) entryLocked(k capability.Key) *entry {
	id, ok := m.byKey[k]
	if !ok {
		return nil
	}
	return m.devices[id]
}

// deviceCount is how many devices the list has.
func (m *Mirror) deviceCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.order)
}

// PublishInfo publishes <base>/bridge/info (retained) when it changed; it is
// published again on every connection.
func (m *Mirror) PublishInfo(p []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if bytes.Equal(p, m.info) {
		return
	}
	m.info = p
	m.sendLocked([]message{{m.opt.Layout.BridgeInfo(), p, true}})
}

// PublishLog publishes a log line on <base>/bridge/logging (not retained).
func (m *Mirror) PublishLog(p []byte) {
	m.send([]message{{m.opt.Layout.BridgeLogging(), p, false}})
}

// SetDailyLimit sets the limit behind Home Assistant's "Quota left today"
// sensor (0: no sensor); the configs follow with the next stats.
func (m *Mirror) SetDailyLimit(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.opt.Discovery.DailyLimit != n {
		m.opt.Discovery.DailyLimit = n
		m.bridgeConfigsStale = true
	}
}
