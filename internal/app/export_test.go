package app

import (
	"cloud2mqtt/internal/mqtt"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/scheduler"
)

// TuneConfigs lets a test change the scheduler's, the poller's and the MQTT
// client's configuration before Run starts them: hold-offs, back-offs and
// retry intervals a test waits out are set short, so the test waits for the
// event, not for the production default. Run uses them as f leaves them.
func (m *Main) TuneConfigs(f func(*scheduler.Config, *poller.Config, *mqtt.Config)) {
	m.tuneConfigs = f
}
