package app

import (
	"context"
	"time"

	"cloud2mqtt/internal/local"
)

// SaveDelay is how long after a change the state directory is written.
const SaveDelay = saveDelay

// SetConnectRetry sets the MQTT client's wait between connection attempts
// before the first connect (default 5 s); call it before Run. It is the one
// wait a test cannot jump with Main.Clock: paho sleeps it on the system's
// time, and a daemon stopped while it tries leaves that sleep running
// (a test that stops such daemons waits for it to end).
func (m *Main) SetConnectRetry(d time.Duration) { m.connectRetry = d }

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
