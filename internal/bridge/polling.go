package bridge

import (
	"time"

	"cloud2mqtt/internal/capability"
)

// Polling is how often the bridge reads a device from the cloud and why
// (the poller's words: "changes often", "quiet", "own interval", "local",
// …), shown in bridge/devices as "poll".
type Polling struct {
	Every time.Duration
	Why   string
}

// pollJSON is a device's polling in bridge/devices.
type pollJSON struct {
	Interval string `json:"interval"`
	Why      string `json:"why"`
}

// SetPolling sets how often the device is read and why (also before it is
// listed). A change goes out with the device list at the next stats: the
// list is large on a large account, so the poller tells only a new reason
// or an interval moved by a quarter, all at once and at most every 5
// minutes but after a change of the settings.
func (m *Mirror) SetPolling(k capability.Key, p Polling) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.polling == nil {
		m.polling = map[capability.Key]Polling{}
	}
	if m.polling[k] == p {
		return
	}
	m.polling[k] = p
	if _, ok := m.byKey[k]; ok {
		m.listDirty, m.listSent = true, time.Time{}
	}
}

// pollingLocked is the device's polling for bridge/devices, nil when the
// poller has told none.
func (m *Mirror) pollingLocked(k capability.Key) *pollJSON {
	p, ok := m.polling[k]
	if !ok {
		return nil
	}
	return &pollJSON{Interval: p.Every.String(), Why: p.Why}
}
