package registry

import "cloud2mqtt/internal/capability"

// Observer is one party told of the registry's changes, such as the MQTT
// mirror, the status page, the LAN router and the state directory. A nil
// hook is not called.
//
// Hooks are called under the registry's lock, one change at a time in the
// order the changes happened, so the state the mirror publishes last is
// the registry's last. A hook must not block or call back into the
// registry, and a View is valid only during the call.
type Observer struct {
	// Devices is called after the first device list and whenever the list,
	// names or definitions change. all is the whole list in the cloud's order;
	// added and removed are the devices that came and went.
	Devices func(all, added, removed []capability.Device)
	// State is called when a device's values, availability or route
	// (cloud or LAN) change; v has every value.
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
