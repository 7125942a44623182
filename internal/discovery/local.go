package discovery

import "cloud2mqtt/internal/capability"

// localInstances are what the vendor's LAN interface sets (lan.Instances).
var localInstances = []string{
	capability.InstancePower, capability.InstanceBrightness,
	capability.InstanceColorRGB, capability.InstanceColorTemperatureK,
}

// localCapable says whether the LAN may reach the device: a light with a
// controllable LAN instance (local.Eligible).
func localCapable(dev capability.Device) bool {
	if dev.Type != capability.DeviceLight {
		return false
	}
	for _, inst := range localInstances {
		if c, ok := dev.Capability(inst); ok && c.Controllable() {
			return true
		}
	}
	return false
}

// connection: whether the bridge reaches the light over the LAN ("local")
// or through the cloud ("cloud"), from "connection" in the device's state
// (Config.Local, LAN_ENABLED=true). It stays available while the device is
// unavailable: "cloud" then says how it would be reached.
func (b *builder) connection() {
	b.add(&entity{component: "sensor", role: "connection", bridgeOnly: true, payload: map[string]any{
		"name":            "Connection",
		"icon":            "mdi:lan",
		"entity_category": "diagnostic",
		"device_class":    "enum",
		"options":         []any{"local", "cloud"},
		"state_topic":     b.state,
		"value_template": "{% set v = " + stateGet("connection") + " %}" +
			"{{ \"None\" if v is none else v }}",
	}})
}
