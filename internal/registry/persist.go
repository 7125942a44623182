package registry

import (
	"encoding/json"
	"io"
	"time"

	"cloud2mqtt/internal/capability"
)

// Saved is what the registry keeps in the state directory across restarts:
// the device list, scene lists and each device's last known state.
type Saved struct {
	// At is when it was taken: SavedValues taken later win at Restore.
	At      time.Time     `json:"at,omitzero"`
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
	s := Saved{At: r.now(), Devices: make([]SavedDevice, 0, len(r.list))}
	for _, k := range r.list {
		d := r.devices[k]
		s.Devices = append(s.Devices, r.savedLocked(d))
	}
	r.saved, r.listSaved, r.valuesSaved = r.changes, r.listChanges, r.changes
	return s
}

// SavedValues are the devices' last known values alone, small enough to
// write within seconds of a change; the whole of Saved can be megabytes.
type SavedValues struct {
	At      time.Time    `json:"at"`
	Devices []SavedState `json:"devices"`
}

// SavedState is one device of SavedValues.
type SavedState struct {
	SKU    string                     `json:"sku"`
	Device string                     `json:"device"`
	Values map[string]json.RawMessage `json:"values,omitempty"`
	Online bool                       `json:"online"`
	At     time.Time                  `json:"last_read"`
}

func (r *Registry) savedLocked(d *device) SavedDevice {
	return SavedDevice{Device: d.listed, Light: d.light.options(), DIY: d.diy.options(), Scenes: d.scenesKnown,
		Online: d.online, Read: d.read, At: d.lastRead, Values: rawValues(d.values)}
}

// savedStateOut is SavedState as written: the values as the registry
// holds them, encoded once.
type savedStateOut struct {
	SKU    string         `json:"sku"`
	Device string         `json:"device"`
	Values map[string]any `json:"values,omitempty"`
	Online bool           `json:"online"`
	At     time.Time      `json:"last_read"`
}

// WriteValues writes the SavedValues of the devices read so far to w as
// JSON. Each entry is encoded once per change and kept, because encoding
// all of them every few seconds costs more than the rest of an idle bridge.
func (r *Registry) WriteValues(w io.Writer) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, _ := r.now().MarshalJSON()
	if err := writeAll(w, []byte(`{"at":`), at, []byte(`,"devices":[`)); err != nil {
		return err
	}
	sep := []byte{}
	for _, k := range r.list {
		d := r.devices[k]
		if !d.read {
			continue
		}
		if d.encoded == nil {
			e, err := json.Marshal(savedStateOut{SKU: k.SKU, Device: k.Device, Values: d.values, Online: d.online, At: d.lastRead})
			if err != nil {
				continue
			}
			d.encoded = e
		}
		if err := writeAll(w, sep, d.encoded); err != nil {
			return err
		}
		sep = []byte{','}
	}
	if err := writeAll(w, []byte("]}")); err != nil {
		return err
	}
	r.valuesSaved = r.changes
	return nil
}

// WriteSaved writes Saved, encoded as JSON, to w device by device, so that
// a large account's (1.6 MB at 1000 devices) is never whole in memory.
func (r *Registry) WriteSaved(w io.Writer) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, _ := r.now().MarshalJSON()
	if err := writeAll(w, []byte(`{"at":`), at, []byte(`,"devices":[`)); err != nil {
		return err
	}
	for i, k := range r.list {
		b, err := json.Marshal(r.savedLocked(r.devices[k]))
		if err != nil {
			return err
		}
		if i > 0 {
			b = append([]byte{','}, b...)
		}
		if err := writeAll(w, b); err != nil {
			return err
		}
	}
	if err := writeAll(w, []byte("]}")); err != nil {
		return err
	}
	r.saved, r.listSaved, r.valuesSaved = r.changes, r.listChanges, r.changes
	return nil
}

func writeAll(w io.Writer, parts ...[]byte) error {
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

func rawValues(values map[string]any) map[string]json.RawMessage {
	if len(values) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(values))
	for inst, v := range values {
		if b, err := json.Marshal(v); err == nil {
			out[inst] = b
		}
	}
	return out
}

// ListUnsaved reports whether the list, a definition or a scene list
// changed since the last Save.
func (r *Registry) ListUnsaved() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.listChanges != r.listSaved
}

// ValuesUnsaved reports whether anything changed since the last Save or
// SaveValues.
func (r *Registry) ValuesUnsaved() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changes != r.valuesSaved
}

// Overlay lays values saved after s.At over s's, device by device (devices
// s does not list are left out), for Restore.
func (s *Saved) Overlay(v SavedValues) {
	if !v.At.After(s.At) {
		return
	}
	byKey := make(map[capability.Key]SavedState, len(v.Devices))
	for _, st := range v.Devices {
		byKey[capability.Key{SKU: st.SKU, Device: st.Device}] = st
	}
	for i := range s.Devices {
		st, ok := byKey[s.Devices[i].Device.Key()]
		if !ok {
			continue
		}
		sd := &s.Devices[i]
		sd.Values, sd.Online, sd.Read, sd.At = st.Values, st.Online, true, st.At
	}
	s.At = v.At
}

// Unsaved reports whether anything changed since the last Save.
func (r *Registry) Unsaved() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changes != r.saved
}

// Restore fills an empty registry with what a previous run saved and tells
// the observers as if the cloud had answered, so everything is published at
// once; it counts as the first device list. The cloud's answers replace it.
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
			r.tell.scenes(d.view())
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
		r.tell.state(d.view())
	}
	// What was just read need not be written back.
	r.changes, r.listChanges = r.saved, r.listSaved
	r.valuesSaved = r.changes
}
