package registry

import (
	"encoding/json"
	"time"

	"cloud2mqtt/internal/capability"
)

// Saved is what the registry keeps across restarts (in the state
// directory): the device list with its definitions, scene lists and each
// device's last known state.
type Saved struct {
	Devices []SavedDevice `json:"devices"`
}

// SavedDevice is one device of Saved.
type SavedDevice struct {
	Device capability.Device          `json:"device"`
	Light  []capability.Option        `json:"light,omitempty"`
	DIY    []capability.Option        `json:"diy,omitempty"`
	Scenes bool                       `json:"scenes_known,omitempty"`
	Values map[string]json.RawMessage `json:"values,omitempty"`
	Online bool                       `json:"online"`
	Read   bool                       `json:"read"`
	At     time.Time                  `json:"last_read"`
}

// Save returns what the registry knows, for the state directory.
func (r *Registry) Save() Saved {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Saved{Devices: make([]SavedDevice, 0, len(r.list))}
	for _, k := range r.list {
		d := r.devices[k]
		sd := SavedDevice{Device: d.listed, Light: d.light.options(), DIY: d.diy.options(), Scenes: d.scenesKnown,
			Online: d.online, Read: d.read, At: d.lastRead}
		if len(d.values) > 0 {
			sd.Values = make(map[string]json.RawMessage, len(d.values))
			for inst, v := range d.values {
				if b, err := json.Marshal(v); err == nil {
					sd.Values[inst] = b
				}
			}
		}
		s.Devices = append(s.Devices, sd)
	}
	r.saved = r.changes
	return s
}

// Unsaved reports whether anything changed since the last Save.
func (r *Registry) Unsaved() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changes != r.saved
}

// Restore fills an empty registry with what a previous run saved, before
// the cloud has answered, and tells the sink as if the cloud had: the
// device list, scenes and last known states are published at once. The
// cloud's answers then replace them. It counts as the first device list.
// Devices without sku or id, and values that are not JSON, are left out.
func (r *Registry) Restore(s Saved) {
	var list []capability.Device
	seen := map[capability.Key]bool{}
	for _, sd := range s.Devices {
		k := sd.Device.Key()
		if k.SKU == "" || k.Device == "" || seen[k] {
			continue
		}
		seen[k] = true
		list = append(list, sd.Device)
	}
	if r.Listed() {
		return // the cloud answered first: it wins
	}
	r.SetDevices(list)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, sd := range s.Devices {
		d := r.devices[sd.Device.Key()]
		if d == nil || d.read || d.scenesKnown {
			continue // a repeated entry
		}
		if sd.Scenes {
			d.light, d.diy, d.scenesKnown = r.sceneLists.intern(sd.Light), r.sceneLists.intern(sd.DIY), true
			d.merged = mergeScenes(d.listed, d.light.options(), d.diy.options())
			r.sink.Scenes(d.view())
		}
		if !sd.Read {
			continue
		}
		for inst, raw := range sd.Values {
			if v, err := capability.Normalize(raw); err == nil {
				d.values[inst] = v
			}
		}
		d.read, d.online, d.lastRead = true, sd.Online, sd.At
		r.sink.State(d.view(), d.values)
	}
	r.changes = r.saved // what was just read need not be written back
}
