package discovery

// connection adds the "Connection" sensor, "local" or "cloud", for lights
// the LAN may control. It stays available while the device is not, to say
// how it would be reached.
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
