package mqtttest

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections to a broker and can cut them abruptly, as a
// network failure or a crashed client would: the broker sees the connection
// reset and publishes the client's will; the client sees it drop and
// reconnects through the proxy.
type Proxy struct {
	t      testing.TB
	target string
	l      net.Listener

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	down    bool
	held    chan struct{} // non-nil while held; closed on release
	closed  bool
	closing chan struct{}
	wg      sync.WaitGroup
}

// holdDialFor bounds how long a held connection retries reaching the target
// after its release (a broker restarting).
const holdDialFor = 10 * time.Second

// NewProxy listens on a free loopback port and forwards to target
// (host:port); t.Cleanup closes it.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mqtttest: proxy listen: %v", err)
	}
	p := &Proxy{t: t, target: target, l: l, conns: map[net.Conn]struct{}{}, closing: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's 127.0.0.1:port.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// URL is tcp://127.0.0.1:port.
func (p *Proxy) URL() string { return "tcp://" + p.Addr() }

// Sever resets every open connection (both sides) at once.
func (p *Proxy) Sever() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // RST, not FIN: an abrupt failure
		}
		_ = c.Close()
	}
}

// SetDown makes the proxy refuse (accept and reset) new connections while
// down is true, so a client stays disconnected; existing connections are
// not touched (call Sever for that).
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
}

// Hold makes new connections wait instead of failing: while held they are
// accepted but not forwarded; on release (Hold(false)) each is forwarded,
// retrying the target for up to 10 s. A client reconnecting while its broker
// restarts behind a held proxy sees a slow connect, not a refused one, so
// its reconnect back-off does not grow. SetDown takes precedence.
func (p *Proxy) Hold(hold bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case hold && p.held == nil:
		p.held = make(chan struct{})
	case !hold && p.held != nil:
		close(p.held)
		p.held = nil
	}
}

// Close stops accepting, resets every connection and waits for the
// forwarding goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	already := p.closed
	p.closed = true
	p.mu.Unlock()
	if !already {
		close(p.closing)
		_ = p.l.Close()
		p.Sever()
	}
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down || p.closed {
			p.mu.Unlock()
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = c.Close()
			continue
		}
		held := p.held
		if held != nil {
			p.conns[c] = struct{}{} // Sever and Close reach it while it waits
			p.wg.Add(1)
		}
		p.mu.Unlock()
		if held == nil {
			p.forward(c, 0)
			continue
		}
		go func() {
			defer p.wg.Done()
			select {
			case <-held:
				p.forward(c, holdDialFor)
			case <-p.closing:
				_ = c.Close()
			}
		}()
	}
}

// forward dials the target, retrying for up to patience, and pipes c to it.
func (p *Proxy) forward(c net.Conn, patience time.Duration) {
	deadline := time.Now().Add(patience)
	var up net.Conn
	for {
		var err error
		if up, err = net.Dial("tcp", p.target); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = c.Close()
			p.mu.Lock()
			delete(p.conns, c)
			p.mu.Unlock()
			return
		}
		select {
		case <-p.closing:
			_ = c.Close()
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	p.conns[c] = struct{}{}
	p.conns[up] = struct{}{}
	p.wg.Add(2)
	p.mu.Unlock()
	go p.pipe(c, up)
	go p.pipe(up, c)
}

// pipe copies src to dst; when either side ends, both are closed.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}
