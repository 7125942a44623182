package discovery

// connection: whether the bridge reaches the light over the LAN ("local")
// or through the cloud ("cloud"), from "connection" in the device's state
// (Config.Local, LAN_ENABLED=true), for the lights the LAN may control
// (capability.LocalEligible). It stays available while the device is
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
