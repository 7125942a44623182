package registry

import "cloud2mqtt/internal/capability"

// Observer is one party told of the registry's changes: the bridge's
// Mirror (the retained topics), the status page (a device's read error),
// the LAN router (the device list), and the stats and the state
// directory's writer (any change). Each declares its hooks where it is
// made; a nil hook is not called.
//
// The contract: the registry calls the hooks one change at a time, in the
// order the changes happened, and for each change the observers in the
// order New was given them, while it is locked. A hook must not block and
// must not call the registry or anything that waits for it; a View is
// valid only during the call. The Mirror relies on the order: two changes
// of one device reach it in the order they were made, so the state it
// publishes last is the registry's last.
type Observer struct {
	// Devices is called after the first device list and whenever the list
	// changes (devices, names, capability definitions): all is the list in
	// the cloud's order, with scene lists merged in; added and removed are
	// the devices that came and went.
	Devices func(all, added, removed []capability.Device)
	// State is called when a device's values, its availability or where
	// it is reached changed (on the first read, and on a restore); v has
	// every value.
	State func(v View)
	// Unreachable is called once when reads of the device keep failing;
	// the next good read calls State.
	Unreachable func(v View, err error)
	// Scenes is called when a device's scene lists changed: v.Device has
	// them merged into its scene capabilities.
	Scenes func(v View)
	// Changed is called after each of the above, whatever changed.
	Changed func()
}

// observers are the registry's observers, told in order.
type observers []Observer

func (os observers) devices(all, added, removed []capability.Device) {
	for _, o := range os {
		if o.Devices != nil {
			o.Devices(all, added, removed)
		}
		o.changed()
	}
}

func (os observers) state(v View) {
	for _, o := range os {
		if o.State != nil {
			o.State(v)
		}
		o.changed()
	}
}

func (os observers) unreachable(v View, err error) {
	for _, o := range os {
		if o.Unreachable != nil {
			o.Unreachable(v, err)
		}
		o.changed()
	}
}

func (os observers) scenes(v View) {
	for _, o := range os {
		if o.Scenes != nil {
			o.Scenes(v)
		}
		o.changed()
	}
}

func (o Observer) changed() {
	if o.Changed != nil {
		o.Changed()
	}
}
