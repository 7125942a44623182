package registry

import "cloud2mqtt/internal/capability"

// Location is where a device is reached, as the LAN router sets it.
type Location struct {
	// Eligible is true when LAN control is on and the device could be found
	// on the LAN; Home Assistant then shows its "Connection" sensor.
	Eligible bool
	// Addr is the address its scan answer came from; "" while the LAN has
	// not found it.
	Addr string
	// Local is true while the device is reachable over the LAN; its LAN
	// instances and its availability then come from the LAN.
	Local bool
}

// Connection is what Home Assistant's "Connection" sensor shows: "local"
// or "cloud"; "" for a device that is not Eligible.
func (l Location) Connection() string {
	switch {
	case !l.Eligible:
		return ""
	case l.Local:
		return "local"
	default:
		return "cloud"
	}
}

// ApplyLocal lays a LAN status read sent at sentSeq over the device's
// state, keeping newer optimistic values as ApplyState does. The device
// answered, so it is shown available even while the cloud is unreachable.
func (r *Registry) ApplyLocal(k capability.Key, values map[string]any, sentSeq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.devices[k]
	if d == nil {
		return
	}
	changed := false
	for inst, v := range values {
		if _, ok := d.listed.Capability(inst); !ok {
			continue
		}
		changed = d.takeRead(inst, capability.NormalizeValue(v), sentSeq, false) || changed
	}
	if !d.reachable && d.read {
		r.log.Info().Stringer("device", d.listed).Msg("device reachable again (it answers on the LAN)")
	}
	r.readDone(d, true, changed, !d.read || !d.reachable || !d.online)
}

// SetLocation records where the device is reached; the observers hear of a
// change (State) when the device has been read.
func (r *Registry) SetLocation(k capability.Key, loc Location) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.devices[k]
	if d == nil || d.location == loc {
		return
	}
	d.location = loc
	if d.read {
		r.tell.state(d.view())
	}
}

// Location is where the device is reached (the zero Location for an
// unknown device).
func (r *Registry) Location(k capability.Key) Location {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d := r.devices[k]; d != nil {
		return d.location
	}
	return Location{}
}

// keepLocal says whether a cloud read leaves the instance alone: the
// device is reachable over the LAN, which gives it.
func (d *device) keepLocal(instance string) bool {
	return d.location.Local && capability.IsLocal(instance)
}
