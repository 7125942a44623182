package discovery

import (
	"strings"
	"time"

	"cloud2mqtt/internal/capability"
)

// BridgeStats is the JSON the bridge publishes, retained, on
// <base>/bridge/stats; the bridge's diagnostic entities read it.
type BridgeStats struct {
	// Version of the bridge.
	Version string `json:"version"`
	// RequestsToday counts cloud requests since local midnight (the
	// cloud's daily budget is what runs out first).
	RequestsToday int `json:"requests_today"`
	// Last429 is when the cloud last answered 429 Too Many Requests;
	// null when it never did since the start.
	Last429 *time.Time `json:"last_429"`
	// QueueDepth is the number of requests waiting for a budget.
	QueueDepth int `json:"queue_depth"`
	// DevicesOnline and DevicesTotal count the account's devices.
	DevicesOnline int `json:"devices_online"`
	DevicesTotal  int `json:"devices_total"`
}

// BridgeConfigs returns the discovery messages of the bridge itself: a
// device (BridgeID) with diagnostic sensors over BridgeStats, available
// while the bridge is (<base>/bridge/state).
func BridgeConfigs(cfg Config) map[string][]byte {
	cfg = cfg.withDefaults()
	l := cfg.Layout
	dev := map[string]any{
		"identifiers":  []any{cfg.BridgeID},
		"name":         "cloud2mqtt bridge (" + l.Base + ")",
		"manufacturer": "cloud2mqtt",
		"model":        "cloud2mqtt bridge",
	}
	if cfg.Version != "" {
		dev["sw_version"] = cfg.Version
	}
	sensor := func(key, name string, extra map[string]any) (string, []byte) {
		uid := cfg.BridgeID + "_" + key
		p := map[string]any{
			"name":              name,
			"unique_id":         uid,
			"object_id":         strings.ToLower(uid),
			"default_entity_id": "sensor." + strings.ToLower(uid),
			"state_topic":       l.BridgeStats(),
			"value_template":    "{{ value_json.get(" + jstr(key) + ") }}",
			"entity_category":   "diagnostic",
			"device":            dev,
			"origin":            origin(cfg),
			"availability":      []any{map[string]any{"topic": l.BridgeState()}},
		}
		for k, v := range extra {
			p[k] = v
		}
		return cfg.ConfigTopic("sensor", cfg.BridgeID, key), marshal(p)
	}
	out := map[string][]byte{}
	add := func(t string, p []byte) { out[t] = p }
	add(sensor("version", "Version", map[string]any{"icon": "mdi:tag"}))
	add(sensor("requests_today", "Cloud requests today", map[string]any{
		"state_class": "total_increasing", "icon": "mdi:cloud-upload"}))
	add(sensor("last_429", "Last rate limit", map[string]any{
		"device_class": "timestamp",
		// null (never) must read as unknown, not as an invalid timestamp
		"value_template": "{{ value_json.get(\"last_429\") or \"None\" }}"}))
	add(sensor("queue_depth", "Queue depth", map[string]any{
		"state_class": "measurement", "icon": "mdi:tray-full"}))
	add(sensor("devices_online", "Devices online", map[string]any{
		"state_class": "measurement", "icon": "mdi:lan-connect"}))
	return out
}

// EventPayload is the message the bridge publishes on <base>/<id>/event for
// one device event: {"event_type": name, "instance": ..., "value": ...,
// "message": ...}. The event entities of Configs read exactly this.
func EventPayload(instance string, o capability.EventOption) []byte {
	p := map[string]any{"event_type": o.Name, "instance": instance, "value": o.Value}
	if o.Message != "" {
		p["message"] = o.Message
	}
	return marshal(p)
}

// Complete fills a partial struct command (what the music mode select and
// the sensitivity number send on set/musicMode) from the instance's last
// known value: members the command leaves out keep their current value.
// Anything that is not an object on both sides is returned unchanged;
// defaults and validation remain capability.Decode's.
func Complete(current, partial any) any {
	p, ok := partial.(map[string]any)
	if !ok {
		return partial
	}
	c, ok := current.(map[string]any)
	if !ok {
		return partial
	}
	out := make(map[string]any, len(c)+len(p))
	for k, v := range c {
		out[k] = v
	}
	for k, v := range p {
		out[k] = v
	}
	return out
}
