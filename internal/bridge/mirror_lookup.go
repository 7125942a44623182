package bridge

import "cloud2mqtt/internal/capability"

// What the status page (internal/statuspage) asks of the mirror: the devices'
// topic ids, both ways, and the republish of bridge/request/republish.

// KeyOf finds a device by its topic id (or "sku/device"), as the MQTT
// requests do: its key and topic id.
func (m *Mirror) KeyOf(ref string) (capability.Key, string, bool) { return m.keyOf(ref) }

// IDs returns the topic id of every listed device, by key.
func (m *Mirror) IDs() map[capability.Key]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[capability.Key]string, len(m.byKey))
	for k, id := range m.byKey {
		out[k] = id
	}
	return out
}

// Republish publishes everything retained again, discovery configs
// included: bridge/request/republish.
func (m *Mirror) Republish() { m.republish(true) }
