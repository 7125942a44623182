package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"sync/atomic"

	"golang.org/x/time/rate"
)

// Forwarder passes the daemon's warnings and errors as JSON objects to a
// publisher (<base>/bridge/logging) for Node-RED alerts and dashboards. It is
// an io.Writer of zerolog's JSON lines, put beside the log output behind Redact.
// It never blocks the logger, and a fault that logs in a loop cannot flood the
// broker: at most PerSecond lines go out, with the dropped ones counted in the next.
type Forwarder struct {
	ch      chan []byte
	limit   *rate.Limiter
	dropped atomic.Int64
}

// The Forwarder's limits.
const (
	PerSecond = 5
	Burst     = 20
)

// NewForwarder returns a forwarder; lines written before Run are kept (up
// to its buffer) and sent once Run starts.
func NewForwarder() *Forwarder {
	return &Forwarder{ch: make(chan []byte, Burst), limit: rate.NewLimiter(PerSecond, Burst)}
}

// forwarded are the levels passed on, as zerolog writes them first in
// each line.
var forwarded = [][]byte{[]byte(`{"level":"warn"`), []byte(`{"level":"error"`), []byte(`{"level":"fatal"`), []byte(`{"level":"panic"`)}

// Write takes one log line; it returns at once.
func (f *Forwarder) Write(p []byte) (int, error) {
	keep := false
	for _, prefix := range forwarded {
		if bytes.HasPrefix(p, prefix) {
			keep = true
			break
		}
	}
	if !keep {
		return len(p), nil
	}
	if !f.limit.Allow() {
		f.dropped.Add(1)
		return len(p), nil
	}
	select {
	case f.ch <- bytes.Clone(p):
	default:
		f.dropped.Add(1)
	}
	return len(p), nil
}

// Run passes the lines to publish until ctx ends. publish is called from
// Run's goroutine only, so it may take locks the logging code holds.
func (f *Forwarder) Run(ctx context.Context, publish func(payload []byte)) {
	for {
		select {
		case <-ctx.Done():
			return
		case line := <-f.ch:
			if p, ok := f.payload(line); ok {
				publish(p)
			}
		}
	}
}

// payload turns a zerolog line into the published object.
func (f *Forwarder) payload(line []byte) ([]byte, bool) {
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, false
	}
	if m["level"] == "warn" {
		m["level"] = "warning"
	}
	if _, ok := m["message"]; !ok {
		m["message"] = ""
	}
	if n := f.dropped.Swap(0); n > 0 {
		m["dropped"] = n
	}
	p, err := json.Marshal(m)
	return p, err == nil
}
