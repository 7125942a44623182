package app

import (
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/scheduler"
)

// TuneConfigs lets a test change the scheduler's and the poller's configuration
// before Run starts them: hold-offs and back-offs a test waits out are set
// short, so the test waits for the event, not for the production default.
// Either argument of f may be changed; Run uses them as f leaves them.
func (m *Main) TuneConfigs(f func(*scheduler.Config, *poller.Config)) { m.tuneConfigs = f }
