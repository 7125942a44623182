package app

import (
	"context"

	"cloud2mqtt/internal/local"
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

// WaitReady blocks until the daemon is ready (the first device list is in)
// or ctx ends.
func (m *Main) WaitReady(ctx context.Context) error {
	select {
	case <-m.readyChan():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// HTTPURL is the base URL of the HTTP endpoint once it listens ("" when off).
func (m *Main) HTTPURL() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reached.PageURL
}

// IngressURL is the ingress listener's base URL once it serves ("" none).
func (m *Main) IngressURL() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reached.IngressURL
}

// LAN is the running LAN router, nil when LAN control is off (or before
// the broker is connected).
func (m *Main) LAN() *local.Router {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.run == nil {
		return nil
	}
	return m.run.lan
}
