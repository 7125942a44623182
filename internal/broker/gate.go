package broker

import (
	"net"
	"sync"
	"time"

	"github.com/mochi-mqtt/server/v2/listeners"
)

// gate stands between the listeners and mochi so that Close can end every
// connection and wait for mochi to be done with each: mochi v2.7.9 Adds to
// its clients' WaitGroup concurrently with its Wait when a connection
// arrives during Close (mochi-mqtt/server#488).
type gate struct {
	mu      sync.Mutex
	closing bool
	conns   map[net.Conn]struct{}
	serving sync.WaitGroup
}

func newGate() *gate { return &gate{conns: map[net.Conn]struct{}{}} }

// wrap puts l behind the gate.
func (g *gate) wrap(l listeners.Listener) listeners.Listener { return &gated{Listener: l, g: g} }

// gated is a listener behind the gate.
type gated struct {
	listeners.Listener
	g *gate
}

func (l *gated) Serve(establish listeners.EstablishFn) {
	l.Listener.Serve(func(id string, c net.Conn) error {
		if !l.g.enter(c) {
			_ = c.Close()
			return nil
		}
		defer l.g.leave(c)
		return establish(id, c)
	})
}

// enter admits c unless the broker is closing.
func (g *gate) enter(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return false
	}
	g.serving.Add(1)
	g.conns[c] = struct{}{}
	return true
}

func (g *gate) leave(c net.Conn) {
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
	g.serving.Done()
}

// shut refuses new connections, closes those being served and waits, at
// most wait, until mochi has returned from each. It reports whether they
// all ended in time.
func (g *gate) shut(wait time.Duration) bool {
	g.mu.Lock()
	g.closing = true
	open := make([]net.Conn, 0, len(g.conns))
	for c := range g.conns {
		open = append(open, c)
	}
	g.mu.Unlock()
	for _, c := range open {
		_ = c.Close()
	}
	done := make(chan struct{})
	go func() {
		g.serving.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(wait):
		return false
	}
}
