// Package bridge is the application core: it keeps the registry of the
// account's devices, turns the poller's changed values into MQTT state,
// availability and Home Assistant discovery, and turns MQTT commands into
// validated cloud control requests for the scheduler.
//
// It knows topics and payloads but not the broker: it publishes through a
// Publisher and receives every message through Handle, so tests drive it
// without one. It does not decide when the cloud is asked (the poller and
// the scheduler do).
package bridge

import (
	"encoding/json"
	"errors"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/topic"
)

// Publisher sends a message to the broker. It must not block on the network.
type Publisher interface {
	Publish(topic string, payload []byte, retained bool, qos byte) error
}

// Commander queues control requests; the scheduler implements it.
type Commander interface {
	Control(req cloud.ControlRequest, report func(scheduler.CommandResult)) error
}

// Reader is what the bridge asks of the poller.
type Reader interface {
	Confirm(sku, device string)
	ReadNow(sku, device string, done func(error)) error
	RefreshDevices(done func(error)) error
	RefreshScenes(sku, device string, done func(error)) error
	SetOptimistic(sku, device string, values map[string]any)
}

// Options configures a Bridge.
type Options struct {
	Layout topic.Layout
	// Discovery is the Home Assistant mapping configuration; DiscoveryEnabled
	// false (HA_DISCOVERY=false) publishes no configs.
	Discovery        discovery.Config
	DiscoveryEnabled bool
	// HAStatusTopic is Home Assistant's birth topic (homeassistant/status):
	// "online" there makes the bridge republish configs and states.
	HAStatusTopic string
	// Health answers the health request: ok, the reasons when not, and details.
	Health func() (ok bool, reasons []string, details any)
	// OnCommand, when set, sees every command's outcome (for metrics).
	OnCommand func(scheduler.CommandResult)
	Log       zerolog.Logger
}

// Bridge is the application core. Its methods are safe for concurrent use.
type Bridge struct {
	opt Options
	cmd Commander
	log zerolog.Logger

	wiring sync.Mutex // guards pub and read, set once at start-up
	pub    Publisher
	read   Reader

	mu            sync.Mutex
	devices       map[string]*entry // by topic id
	byKey         map[string]string // "sku/device" → topic id
	order         []string          // topic ids in list order
	bridgeConfigs configHashes
	lastStats     []byte
	listed        bool      // the first device list has arrived
	listDirty     bool      // scenes changed the device list; sent with a later stats
	listSent      time.Time // when the device list was last published
	resend        bool      // a publish failed: republish everything with the next stats
}

// entry is what the bridge knows and has published of one device.
type entry struct {
	id        string
	dev       capability.Device // with scene options merged in
	listed    capability.Device // as the device list gave it
	light     []capability.Option
	diy       []capability.Option
	values    map[string]any
	online    bool      // the cloud says online
	reachable bool      // the last reads worked
	read      bool      // at least one state answer arrived
	lastRead  time.Time // of the last state answer; when listed until then

	configs   configHashes // discovery configs published
	stateJSON []byte       // last published <id>/state
	lightJSON []byte       // last published <id>/light
	avail     string       // last published availability
}

// New returns a bridge commanding through cmd. The publisher and the reader
// (the poller, which in turn needs the bridge as its consumer) are set with
// SetPublisher and SetReader before messages arrive; until then nothing is
// published and requests needing the poller are refused.
func New(opt Options, pub Publisher, cmd Commander) *Bridge {
	if opt.HAStatusTopic == "" {
		opt.HAStatusTopic = "homeassistant/status"
	}
	return &Bridge{
		opt: opt, pub: pub, cmd: cmd, log: opt.Log,
		devices: map[string]*entry{},
		byKey:   map[string]string{},
	}
}

// SetPublisher sets where the bridge publishes.
func (b *Bridge) SetPublisher(p Publisher) {
	b.wiring.Lock()
	b.pub = p
	b.wiring.Unlock()
}

// SetReader sets the poller the bridge asks for reads and refreshes.
func (b *Bridge) SetReader(r Reader) {
	b.wiring.Lock()
	b.read = r
	b.wiring.Unlock()
}

func (b *Bridge) reader() Reader {
	b.wiring.Lock()
	defer b.wiring.Unlock()
	if b.read == nil {
		return noReader{}
	}
	return b.read
}

// noReader refuses everything: the bridge is not wired to a poller yet.
type noReader struct{}

var errNotReady = errors.New("bridge: not ready yet, the device list has not been read; retry in a moment")

func (noReader) Confirm(string, string)                          {}
func (noReader) ReadNow(string, string, func(error)) error       { return errNotReady }
func (noReader) RefreshDevices(func(error)) error                { return errNotReady }
func (noReader) RefreshScenes(string, string, func(error)) error { return errNotReady }
func (noReader) SetOptimistic(string, string, map[string]any)    {}

func key(sku, device string) string { return sku + "/" + device }

// Subscriptions lists the topic filters whose messages must reach Handle.
func (b *Bridge) Subscriptions() []string {
	l := b.opt.Layout
	subs := []string{
		l.Base + "/+/set",
		l.Base + "/+/set/+",
		l.Base + "/+/get",
		l.Base + "/+/light/set",
		l.Base + "/+/segment/+/set",
		l.BridgeRequest("+"),
	}
	if b.opt.DiscoveryEnabled {
		subs = append(subs, b.opt.HAStatusTopic)
	}
	return subs
}

// message is one publication, collected and sent under the lock.
type message struct {
	topic    string
	payload  []byte
	retained bool
}

func (b *Bridge) send(msgs []message) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sendLocked(msgs)
}

// sendLocked publishes msgs while the caller holds b.mu, so messages leave
// in the order they were computed: two updates of one retained topic made
// on different goroutines can never reach the broker swapped (the older one
// would stay retained while the bridge believes the newer one was sent).
// Publish only queues; it never waits for the network.
func (b *Bridge) sendLocked(msgs []message) {
	b.wiring.Lock()
	pub := b.pub
	b.wiring.Unlock()
	if pub == nil {
		return
	}
	for _, m := range msgs {
		if err := pub.Publish(m.topic, m.payload, m.retained, 1); err != nil {
			b.log.Warn().Err(err).Str("topic", m.topic).Msg("publish failed; everything is republished shortly")
			b.resend = true
		}
	}
}

// Devices implements the poller's consumer: the account's device list changed.
func (b *Bridge) Devices(all []capability.Device, added, removed []capability.Device) {
	b.mu.Lock()
	b.listed = true
	var msgs []message
	for _, d := range removed {
		msgs = append(msgs, b.removeLocked(key(d.SKU, d.Device))...)
	}
	b.order = b.order[:0]
	for _, d := range all {
		id := topic.DeviceID(d.SKU, d.Device)
		if other, taken := b.byKey[key(d.SKU, d.Device)]; taken && other != id {
			id = other
		}
		e, ok := b.devices[id]
		if ok && e.listed.SKU+e.listed.Device != d.SKU+d.Device {
			// Two devices whose ids collide after cleaning: keep both apart.
			id = uniqueID(b.devices, id)
			e, ok = nil, false
		}
		if !ok {
			e = &entry{id: id, values: map[string]any{}, reachable: true, lastRead: time.Now()}
			b.devices[id] = e
			b.byKey[key(d.SKU, d.Device)] = id
		}
		e.listed = d
		e.dev = mergeScenes(d, e.light, e.diy)
		b.order = append(b.order, id)
		msgs = append(msgs, b.discoveryLocked(e, false)...)
	}
	msgs = append(msgs, b.deviceListLocked())
	b.sendLocked(msgs)
	b.mu.Unlock()
	for _, d := range added {
		b.log.Info().Str("device", d.String()).Str("name", d.Name).Str("type", d.Type).
			Str("id", topic.DeviceID(d.SKU, d.Device)).Msg("device added")
	}
	for _, d := range removed {
		b.log.Info().Str("device", d.String()).Str("name", d.Name).Msg("device removed")
	}
}

// Listed reports whether the first device list has arrived (it may be empty).
func (b *Bridge) Listed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.listed
}

func uniqueID(taken map[string]*entry, id string) string {
	for i := 2; ; i++ {
		c := id + "-" + itoa(i)
		if _, ok := taken[c]; !ok {
			return c
		}
	}
}

// removeLocked forgets a device and clears everything it had retained:
// discovery configs, state, light state and availability.
func (b *Bridge) removeLocked(k string) []message {
	id, ok := b.byKey[k]
	if !ok {
		return nil
	}
	e := b.devices[id]
	delete(b.byKey, k)
	delete(b.devices, id)
	var msgs []message
	for t := range e.configs {
		msgs = append(msgs, message{t, nil, true})
	}
	l := b.opt.Layout
	for _, t := range []string{l.State(id), l.Light(id), l.Availability(id)} {
		msgs = append(msgs, message{t, nil, true})
	}
	return msgs
}

// deviceJSON is one element of <base>/bridge/devices.
type deviceJSON struct {
	ID           string                  `json:"id"`
	SKU          string                  `json:"sku"`
	Device       string                  `json:"device"`
	Name         string                  `json:"name"`
	Type         string                  `json:"type"`
	Capabilities []capability.Capability `json:"capabilities"`
}

// deviceListEvery spaces the republishes of the device list that only scene
// lists changed: at start every light's scenes arrive over the first poll
// interval, and at 1000 devices each republish is over a megabyte.
const deviceListEvery = 30 * time.Second

// deviceListLocked is the retained device list, to be sent now.
func (b *Bridge) deviceListLocked() message {
	b.listDirty = false
	b.listSent = time.Now()
	return message{b.opt.Layout.BridgeDevices(), b.deviceListJSONLocked(), true}
}

// deviceListJSONLocked is the device list as JSON.
func (b *Bridge) deviceListJSONLocked() []byte {
	// Marshalled one device at a time into a buffer of our own: json.Marshal
	// of the whole list (over a megabyte at 1000 devices) would leave a
	// buffer that size in encoding/json's pool, alive for as long as
	// anything keeps marshalling.
	buf := make([]byte, 0, 1024*len(b.order)+2)
	buf = append(buf, '[')
	for _, id := range b.order {
		e := b.devices[id]
		caps := e.dev.Capabilities
		if caps == nil {
			caps = []capability.Capability{}
		}
		p, err := json.Marshal(deviceJSON{ID: id, SKU: e.dev.SKU, Device: e.dev.Device,
			Name: displayName(e.dev), Type: e.dev.Type, Capabilities: caps})
		if err != nil {
			// Only a value json cannot represent (NaN) gets here; the list
			// goes out without that device rather than not at all.
			b.log.Error().Err(err).Str("device", id).Msg("bug: device cannot be listed on bridge/devices")
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

func displayName(d capability.Device) string {
	if strings.TrimSpace(d.Name) != "" {
		return d.Name
	}
	return d.SKU
}

// discoveryLocked publishes what changed in a device's discovery configs
// (all of them when force is set).
func (b *Bridge) discoveryLocked(e *entry, force bool) []message {
	if !b.opt.DiscoveryEnabled {
		return nil
	}
	var msgs []message
	msgs, e.configs = e.configs.update(discovery.Configs(b.opt.Discovery, e.dev), force)
	return msgs
}

// configHashes remembers the discovery configs published, by topic, as
// hashes of their payloads: enough to tell what changed without keeping
// thousands of payloads in memory on a large account.
type configHashes map[string]uint64

func hashOf(p []byte) uint64 {
	h := fnv.New64a()
	h.Write(p)
	return h.Sum64()
}

// update returns the messages that bring the published configs to next
// (every one of them when force is set; an empty retained payload for each
// that disappeared), sorted by topic, and the hashes of next.
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

// Scenes implements the poller's consumer: a device's scene lists changed.
func (b *Bridge) Scenes(dev capability.Device, light, diy []capability.Option) {
	b.mu.Lock()
	e := b.entryLocked(dev)
	if e == nil {
		b.mu.Unlock()
		return
	}
	e.light, e.diy = light, diy
	e.dev = mergeScenes(e.listed, light, diy)
	// The device list (large on a large account) goes out with a later
	// stats, at most every deviceListEvery, once for every scene list that
	// arrived meanwhile.
	b.listDirty = true
	b.sendLocked(b.discoveryLocked(e, false))
	b.mu.Unlock()
}

func (b *Bridge) entryLocked(dev capability.Device) *entry {
	id, ok := b.byKey[key(dev.SKU, dev.Device)]
	if !ok {
		return nil
	}
	return b.devices[id]
}

// mergeScenes returns the device with the scene endpoints' options as the
// options of its lightScene and diyScene capabilities. The scene endpoint is
// the authority where it answered: the device list often has none.
func mergeScenes(d capability.Device, light, diy []capability.Option) capability.Device {
	if len(light) == 0 && len(diy) == 0 {
		return d
	}
	out := d
	out.Capabilities = make([]capability.Capability, len(d.Capabilities))
	for i, c := range d.Capabilities {
		var opts []capability.Option
		switch {
		case c.Instance == capability.InstanceLightScene && len(light) > 0:
			opts = mergeOptions(c, light)
		case c.Instance == capability.InstanceDIYScene && len(diy) > 0:
			opts = mergeOptions(c, diy)
		default:
			out.Capabilities[i] = c
			continue
		}
		p := capability.Parameters{DataType: capability.DataEnum}
		if c.Parameters != nil {
			p = *c.Parameters
		}
		p.Options = opts
		c.Parameters = &p
		out.Capabilities[i] = c
	}
	return out
}

// mergeOptions keeps the listed options and adds the endpoint's, skipping
// names already present.
func mergeOptions(c capability.Capability, extra []capability.Option) []capability.Option {
	if c.Parameters == nil || len(c.Parameters.Options) == 0 {
		return extra // nothing to merge; scene lists are shared read-only
	}
	var out []capability.Option
	seen := map[string]bool{}
	if c.Parameters != nil {
		for _, o := range c.Parameters.Options {
			out = append(out, o)
			seen[strings.ToLower(o.Name)] = true
		}
	}
	for _, o := range extra {
		if !seen[strings.ToLower(o.Name)] {
			out = append(out, o)
			seen[strings.ToLower(o.Name)] = true
		}
	}
	return out
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
