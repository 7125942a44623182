// Package registry owns the account's devices and everything known of them:
// the device list, each device's last known values and when they were read,
// values set optimistically by commands until a read confirms them, scene
// lists and availability. It is the only store of device state.
//
// The poller writes what it reads here and the command path writes
// optimistic values. Every change goes straight to the observers New was
// given, in order. The registry knows nothing of MQTT, topics or timing.
package registry

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock"
)

// View is one device as the registry knows it, handed to the observers.
// Values is the registry's own map, so read it only during the call.
type View struct {
	// Device is the device as listed, with the scene endpoints' lists
	// merged into its lightScene and diyScene options.
	Device    capability.Device
	Values    map[string]any
	Online    bool      // the cloud said online at the last read
	Reachable bool      // the last reads worked
	Read      bool      // at least one read succeeded
	LastRead  time.Time // of the last good read; when listed until then
	Location  Location  // where it is reached: the LAN or the cloud (local.go)
}

// Available reports whether Home Assistant should show the device as
// available, and known false while nothing has been read yet.
func (v View) Available() (available, known bool) {
	return v.Online && v.Reachable, v.Read
}

// device is everything the registry knows of one device.
type device struct {
	listed     capability.Device // as the device list gave it
	merged     capability.Device // listed, scene lists merged in
	values     map[string]any
	optimistic map[string]uint64 // instance → seq of the SetOptimistic that set it
	online     bool
	reachable  bool
	read       bool
	lastRead   time.Time
	stateless  bool     // the cloud keeps no state for it (MarkStateless)
	encoded    []byte   // its entry of SaveValuesJSON, nil when it changed since
	location   Location // LAN or cloud (local.go)

	light, diy  *sceneList // shared with other devices; read-only
	scenesKnown bool
}

func (d *device) view() View {
	return View{Device: d.merged, Values: d.values, Online: d.online, Reachable: d.reachable, Read: d.read, LastRead: d.lastRead, Location: d.location}
}

// Registry is the store of devices. Its methods are safe for concurrent use.
type Registry struct {
	tell observers
	log  zerolog.Logger

	mu         sync.Mutex
	devices    map[capability.Key]*device
	sceneLists sceneLists
	list       []capability.Key // cloud order
	listed     bool
	listedC    chan struct{} // closed with the first list
	seq        uint64
	now        func() time.Time // the clock's Now (clock.go)

	changes, saved uint64 // changes made, and how many of them Save has seen
	// Change counters, so Save and SaveValues write only when something changed.
	listChanges, listSaved, valuesSaved uint64
}

// New returns an empty registry on the real clock that tells its changes
// to the observers, in the order given (Observer has the contract).
func New(log zerolog.Logger, obs ...Observer) *Registry { return NewOn(nil, log, obs...) }

// NewOn is New with the clock c (nil: clock.Real), used for read ages and
// the times in the state files. The registry keeps no timers.
func NewOn(c clock.Clock, log zerolog.Logger, obs ...Observer) *Registry {
	return &Registry{tell: obs, log: log, devices: make(map[capability.Key]*device), listedC: make(chan struct{}), now: clock.Or(c).Now}
}

// ListChange is what a new device list changed.
type ListChange struct {
	// All is the new list, in the cloud's order.
	All            []capability.Device
	Added, Removed []capability.Device
	// Changed are devices whose definition changed (names, capabilities).
	Changed []capability.Device
	// First is true for the first list.
	First bool
}

// Any reports whether anything changed.
func (c ListChange) Any() bool {
	return c.First || len(c.Added)+len(c.Removed)+len(c.Changed) > 0
}

// SetDevices replaces the device list (the cloud client has left out
// unnamed and repeated devices) and tells the observers when it changed.
func (r *Registry) SetDevices(list []capability.Device) ListChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := ListChange{All: list, First: !r.listed}
	keys := make([]capability.Key, 0, len(list))
	seen := make(map[capability.Key]bool, len(list))
	now := r.now()
	for _, dev := range list {
		k := dev.Key()
		seen[k] = true
		keys = append(keys, k)
		d := r.devices[k]
		if d == nil {
			d = &device{values: make(map[string]any), optimistic: make(map[string]uint64), reachable: true, lastRead: now}
			d.listed, d.merged = dev, dev
			r.devices[k] = d
			ch.Added = append(ch.Added, dev)
			continue
		}
		if !reflect.DeepEqual(d.listed, dev) {
			d.listed = dev
			d.merged = mergeScenes(dev, d.light.options(), d.diy.options())
			ch.Changed = append(ch.Changed, dev)
		}
	}
	for _, k := range r.list {
		if !seen[k] {
			ch.Removed = append(ch.Removed, r.devices[k].listed)
			delete(r.devices, k)
		}
	}
	r.list, r.listed = keys, true
	if ch.Any() {
		all := make([]capability.Device, len(keys))
		for i, k := range keys {
			all[i] = r.devices[k].merged
		}
		r.changes++
		r.listChanges++
		r.tell.devices(all, ch.Added, ch.Removed)
	}
	if ch.First {
		// After the observers: whoever waits for the first list (commands held
		// at start) finds the devices' topics known.
		close(r.listedC)
	}
	return ch
}

// Seq is the registry's current sequence number: a read sent now records
// it, so that ApplyState can tell which optimistic values it cannot know of.
func (r *Registry) Seq() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq
}

// ApplyState stores a good read sent when Seq was sentSeq and tells the
// observers of any change. Optimistic values set after the read was sent
// are kept, because the read cannot know of them.
func (r *Registry) ApplyState(k capability.Key, st State, sentSeq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.devices[k]
	if d == nil {
		return
	}
	online, ok := st.Online()
	if !ok || d.location.Local {
		// No online capability: the values are all we know. Reachable
		// over the LAN: the LAN is the better witness (local.go).
		online = true
	}
	first := !d.read
	changed := false
	for inst, v := range st.All() {
		if d.keepLocal(inst) {
			continue
		}
		changed = d.takeRead(inst, v, sentSeq, first) || changed
	}
	if !d.reachable {
		r.log.Info().Stringer("device", d.listed).Msg("device reachable again")
	}
	if online != d.online && d.read {
		r.log.Info().Stringer("device", d.listed).Bool("online", online).Msg("device online state changed")
	}
	availabilityChanged := first || !d.reachable || online != d.online
	d.stateless = false
	r.readDone(d, online, changed, availabilityChanged)
}

// takeRead stores one value of a read sent at sentSeq and reports whether
// it changed anything. A read older than an optimistic value leaves it for
// the next read to confirm. Called with r.mu held.
func (d *device) takeRead(inst string, v any, sentSeq uint64, force bool) bool {
	if seq, ok := d.optimistic[inst]; ok {
		if sentSeq < seq {
			return false
		}
		delete(d.optimistic, inst)
	}
	if old, had := d.values[inst]; force || !had || !capability.Equal(old, v) {
		d.values[inst] = v
		return true
	}
	return false
}

// readDone records a good read from the cloud or the LAN and tells the
// observers if values or availability changed. Called with r.mu held.
func (r *Registry) readDone(d *device, online, changed, availabilityChanged bool) {
	d.read, d.online, d.reachable = true, online, true
	d.lastRead = r.now()
	if !changed && !availabilityChanged {
		return
	}
	r.changes++
	d.encoded = nil
	r.tell.state(d.view())
}

// MarkUnreachable records that reads of the device keep failing; the
// observers hear of it once, until a read works again.
func (r *Registry) MarkUnreachable(k capability.Key, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.devices[k]
	if d == nil || !d.reachable || d.location.Local {
		return // a device the LAN reaches stays available (local.go)
	}
	d.reachable = false
	r.log.Warn().Err(err).Stringer("device", d.listed).Msg("device unreachable: shown unavailable until a read works; reading it less often")
	r.tell.unreachable(d.view(), err)
}

// MarkStateless records that the cloud keeps no state for the device, as
// for a group made in the vendor's app that accepts commands but answers
// reads with "devices not exist". It shows as available with the values
// last sent to it until a read works.
func (r *Registry) MarkStateless(k capability.Key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.devices[k]
	if d == nil || d.stateless {
		return
	}
	d.stateless = true
	if d.read && d.online && d.reachable {
		return
	}
	d.read, d.online, d.reachable = true, true, true
	r.changes++
	d.encoded = nil
	r.tell.state(d.view())
}

// SetOptimistic records a value the cloud accepted for a command as if it
// had been read, with its effects on other values (a colour ends a scene).
// A read already in flight cannot overwrite it; a later read corrects it.
func (r *Registry) SetOptimistic(k capability.Key, instance string, value any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.devices[k]
	if d == nil {
		return
	}
	if s, ok := value.(string); ok && s == "" {
		return
	}
	value = capability.NormalizeValue(value)
	r.seq++
	d.values[instance] = value
	d.optimistic[instance] = r.seq
	drop, zero := capability.Effects(d.listed, instance)
	for _, other := range drop {
		delete(d.values, other)
	}
	for _, other := range zero {
		// Optimistic too: a read in flight still has the old value.
		d.values[other] = int64(0)
		d.optimistic[other] = r.seq
	}
	if d.read {
		r.changes++
		d.encoded = nil
		r.tell.state(d.view())
	}
}

// SetScenes stores a device's scene lists and tells the observers if they
// changed; a list whose ok is false keeps the stored one. The lists are
// shared, never copied or modified, because an account can have thousands.
func (r *Registry) SetScenes(k capability.Key, light []capability.Option, lightOK bool, diy []capability.Option, diyOK bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.devices[k]
	if d == nil {
		return
	}
	changed := false
	if lightOK && (!d.scenesKnown || !optionsEqual(d.light.options(), light)) {
		d.light, changed = r.sceneLists.intern(light), true
	}
	if diyOK && (!d.scenesKnown || !optionsEqual(d.diy.options(), diy)) {
		d.diy, changed = r.sceneLists.intern(diy), true
	}
	if lightOK || diyOK {
		d.scenesKnown = true
	}
	if changed {
		d.merged = mergeScenes(d.listed, d.light.options(), d.diy.options())
		r.changes++
		r.listChanges++
		r.tell.scenes(d.view())
	}
}

func optionsEqual(a, b []capability.Option) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// Device returns the device, with its scene lists merged in.
func (r *Registry) Device(k capability.Key) (capability.Device, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.devices[k]
	if d == nil {
		return capability.Device{}, false
	}
	return d.merged, true
}

// Value returns the device's last known value of an instance.
func (r *Registry) Value(k capability.Key, instance string) (any, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.devices[k]
	if d == nil {
		return nil, false
	}
	v, ok := d.values[instance]
	return v, ok
}

// Snapshot returns a copy of what the registry knows of the device: a copy
// of its values (the values themselves are shared: do not modify them).
func (r *Registry) Snapshot(k capability.Key) (View, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.devices[k]
	if d == nil {
		return View{}, false
	}
	v := d.view()
	v.Values = maps.Clone(d.values)
	return v, true
}

// Devices returns the device list in the cloud's order, scenes merged in.
func (r *Registry) Devices() []capability.Device {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]capability.Device, len(r.list))
	for i, k := range r.list {
		out[i] = r.devices[k].merged
	}
	return out
}

// Listed reports whether the first device list has arrived (it may be empty).
func (r *Registry) Listed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.listed
}

// FirstList is closed once the first device list is in.
func (r *Registry) FirstList() <-chan struct{} { return r.listedC }

// Stats counts the devices for metrics and the health endpoint.
type Stats struct {
	Devices     int // in the list
	Online      int // read, online and reachable
	Offline     int // whose last read said offline
	Unreachable int // whose reads keep failing
	// OldestState is the age of the stalest successful read (a device never
	// read counts from when it was listed); 0 with no devices.
	OldestState time.Duration
}

// Stats returns the counts.
func (r *Registry) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := Stats{Devices: len(r.devices)}
	now := r.now()
	for _, d := range r.devices {
		if !d.reachable {
			st.Unreachable++
		}
		if d.read && !d.online {
			st.Offline++
		}
		if d.read && d.online && d.reachable {
			st.Online++
		}
		if !d.stateless { // never read: its age says nothing
			st.OldestState = max(st.OldestState, now.Sub(d.lastRead))
		}
	}
	return st
}

// mergeScenes puts the scene endpoints' options into the device's
// lightScene and diyScene capabilities, because the device list often
// has none.
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
	out := slices.Clone(c.Parameters.Options)
	seen := make(map[string]bool, len(out)+len(extra))
	for _, o := range out {
		seen[strings.ToLower(o.Name)] = true
	}
	for _, o := range extra {
		if !seen[strings.ToLower(o.Name)] {
			out = append(out, o)
			seen[strings.ToLower(o.Name)] = true
		}
	}
	return out
}
