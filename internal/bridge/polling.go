package bridge

import (
	"time"

	"cloud2mqtt/internal/capability"
)

// Polling is how often the bridge reads a device from the cloud and the
// poller's reason, shown in bridge/devices as "poll".
type Polling struct {
	Every time.Duration
	Why   string
}

// pollJSON is a device's polling in bridge/devices.
type pollJSON struct {
	Interval string `json:"interval"`
	Why      string `json:"why"`
}

// SetPolling sets how often the device is read and why. Since the device list is
// large, the poller reports only a new reason or an interval moved by a quarter,
// and the change goes out with the list at the next stats.
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
