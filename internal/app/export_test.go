package app

import (
	"context"
	"strings"
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

// Takes says whether the running daemon is connected to the broker and
// subscribes to the topic name, and how many messages it has taken in so far.
func (m *Main) Takes(name string) (bool, uint64) {
	m.mu.Lock()
	d := m.run
	m.mu.Unlock()
	if d == nil || d.conn == nil {
		return false, 0
	}
	st := d.conn.Stats()
	if !d.conn.Connected() {
		return false, st.Received
	}
	for _, f := range d.br.Subscriptions() {
		if matches(f, name) {
			return true, st.Received
		}
	}
	return false, st.Received
}

// matches is MQTT's topic filter matching (+ one level, # the rest).
func matches(filter, topic string) bool {
	fs, ts := strings.Split(filter, "/"), strings.Split(topic, "/")
	for i, f := range fs {
		if f == "#" {
			return true
		}
		if i >= len(ts) || (f != "+" && f != ts[i]) {
			return false
		}
	}
	return len(fs) == len(ts)
}
