// Package broker runs the embedded MQTT broker (mochi-mqtt) used by demo mode,
// MQTT_URL=embedded and tests on machines without mosquitto.
//
// It is a convenience, not a production broker: everything is kept in memory
// (retained messages, persistent sessions and their queued QoS 1 messages are
// lost when the process ends) and, unless Options.Users is set, every client
// may connect anonymously. It listens on loopback by default; binding it to
// another address (e.g. ":1883") exposes an unauthenticated broker to the
// network. With Options.Owner (the daemon's: the bridge) only the owner
// publishes to the bridge's topics but the commands (acl.go). With
// Options.MaxPacketSize (the daemon's: 65 KiB, a command's 64 KiB and its
// topic) a client sending a larger packet is disconnected before the packet
// is read, except the owner.
package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"slices"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/rs/zerolog"
)

// DefaultAddr is where the embedded broker listens when Options.Addr is empty.
const DefaultAddr = "127.0.0.1:1883"

// Options configures the embedded broker.
type Options struct {
	// Addr is the MQTT (TCP) listen address, e.g. "127.0.0.1:1883", or
	// "127.0.0.1:0" for a free port (see Broker.Addr). Empty means DefaultAddr.
	// A host other than loopback exposes the broker to the network.
	Addr string
	// WSAddr, when set, adds an MQTT-over-websocket listener (ws://, or wss://
	// with TLSConfig). A port of 0 picks a free port.
	WSAddr string
	// TLSConfig, when set, makes both listeners speak TLS (ssl://, wss://).
	TLSConfig *tls.Config
	// Users, when not empty, requires a username and password from this map
	// (username → password); otherwise anonymous clients are allowed.
	Users map[string]string
	// Owner, when set, reserves the bridge's topics to the client that
	// logs in with Broker.OwnerLogin (acl.go).
	Owner *Owner
	// MaxPacketSize, when positive, bounds the packets a client may send,
	// checked at each packet's fixed header so that a larger one is never
	// read (the connection is closed). The daemon sets
	// DefaultMaxPacketSize; 0 is no limit. The owner is exempt: the
	// bridge's device list and discovery configs may be larger than a
	// command.
	MaxPacketSize int
	// Logger receives the broker's warnings and errors (mochi's own log at
	// info and below is discarded: it logs every connection).
	Logger zerolog.Logger
}

// Broker is a running embedded broker.
type Broker struct {
	srv    *mochi.Server
	addr   string
	wsAddr string
	tls    bool
	log    zerolog.Logger
	gate   *gate    // every listener's connections (gate.go)
	acl    *aclHook // who may connect and publish (acl.go)
}

// Start starts the broker and returns once its listeners accept
// connections. ctx bounds only the start; stop the broker with Close.
func Start(ctx context.Context, opts Options) (*Broker, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("broker: start: %w", err)
	}
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	if _, _, err := net.SplitHostPort(opts.Addr); err != nil {
		return nil, fmt.Errorf("broker: listen address %q: %w (want host:port, e.g. %s)", opts.Addr, err, DefaultAddr)
	}
	log := opts.Logger.With().Str("component", "broker").Logger()
	srv := mochi.New(&mochi.Options{
		Logger:       slog.New(quietHandler{zerolog.NewSlogHandler(log)}),
		InlineClient: false,
	})
	acl := newACLHook(maps.Clone(opts.Users), cloneOwner(opts.Owner), log)
	if err := srv.AddHook(acl, nil); err != nil {
		return nil, fmt.Errorf("broker: add auth hook: %w", err)
	}
	if err := adjust(srv); err != nil { // MQTT 5 clients, retained messages (v5.go)
		return nil, fmt.Errorf("broker: add hooks: %w", err)
	}

	b := &Broker{srv: srv, tls: opts.TLSConfig != nil, log: log, gate: newGate(), acl: acl}
	guard := func(l listeners.Listener) listeners.Listener {
		if opts.MaxPacketSize <= 0 {
			return b.gate.wrap(l)
		}
		return b.gate.wrap(&guarded{Listener: l, max: opts.MaxPacketSize, onRefuse: func(remote string, size int) {
			log.Warn().Str("remote", remote).Int("size", size).Int("limit", opts.MaxPacketSize).
				Msg("client sent a packet over the embedded broker's size limit; disconnected")
		}})
	}
	tcp := listeners.NewTCP(listeners.Config{Type: listeners.TypeTCP, ID: "tcp", Address: opts.Addr, TLSConfig: opts.TLSConfig})
	if err := srv.AddListener(guard(tcp)); err != nil {
		// The caller names its setting and the fix (MQTT_LISTEN, -events-addr).
		return nil, fmt.Errorf("broker: listen on %s: %w", opts.Addr, err)
	}
	b.addr = tcp.Address()
	if opts.WSAddr != "" {
		ws, err := freeAddr(opts.WSAddr)
		if err != nil {
			_ = srv.Close()
			return nil, err
		}
		l := listeners.NewWebsocket(listeners.Config{Type: listeners.TypeWS, ID: "ws", Address: ws, TLSConfig: opts.TLSConfig})
		if err := srv.AddListener(guard(l)); err != nil {
			_ = srv.Close()
			return nil, fmt.Errorf("broker: websocket listener on %s: %w", ws, err)
		}
		b.wsAddr = ws
	}
	if err := srv.Serve(); err != nil {
		_ = srv.Close()
		return nil, fmt.Errorf("broker: serve: %w", err)
	}
	if b.wsAddr != "" {
		// The websocket listener binds inside its own goroutine: wait for it.
		if err := waitListening(ctx, b.wsAddr); err != nil {
			_ = srv.Close()
			return nil, fmt.Errorf("broker: websocket listener on %s did not start: %w", b.wsAddr, err)
		}
	}
	log.Debug().Str("addr", b.addr).Str("ws_addr", b.wsAddr).Bool("tls", b.tls).Msg("embedded broker listening")
	return b, nil
}

// URL is the address for clients: "tcp://host:port" (or "ssl://" with TLS).
func (b *Broker) URL() string {
	if b.tls {
		return "ssl://" + b.addr
	}
	return "tcp://" + b.addr
}

// Close stops the listeners, disconnects every client (their wills are
// published) and returns when the client goroutines have ended.
func (b *Broker) Close() error {
	// mochi v2.7.9 can deadlock in Close when a client comes or goes at the
	// same moment (mochi-mqtt/server#488), so every connection ends first
	// (gate.go), and the wait is bounded: shutdown must never hang.
	done := make(chan error, 1)
	go func() {
		if !b.gate.shut(closeTimeout) {
			done <- errors.New("clients still being served")
			return
		}
		b.srv.Listeners.CloseAll(b.disconnectClients)
		done <- b.srv.Close()
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("broker: close: %w", err)
		}
		return nil
	case <-time.After(closeTimeout):
		b.log.Warn().Dur("waited", closeTimeout).Msg("embedded broker did not close in time (a known mochi deadlock); leaving it")
		return fmt.Errorf("broker: close: not done after %s", closeTimeout)
	}
}

// disconnectClients disconnects the clients of one listener, as mochi's
// own closer does, but reading the client list under a single read lock.
func (b *Broker) disconnectClients(listener string) {
	for _, cl := range b.srv.Clients.GetAll() {
		if cl.Net.Listener == listener && !cl.Closed() {
			_ = b.srv.DisconnectClient(cl, packets.ErrServerShuttingDown)
		}
	}
}

// closeTimeout bounds Close.
const closeTimeout = 3 * time.Second

// freeAddr resolves port 0 to a free port, for listeners (websocket) that do
// not report the port they bound.
func freeAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("broker: websocket address %q: %w (want host:port)", addr, err)
	}
	if port != "0" {
		return addr, nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", fmt.Errorf("broker: find a free port on %s: %w", host, err)
	}
	a := l.Addr().String()
	if err := l.Close(); err != nil {
		return "", fmt.Errorf("broker: find a free port on %s: %w", host, err)
	}
	return a, nil
}

func waitListening(ctx context.Context, addr string) error {
	host, port, _ := net.SplitHostPort(addr)
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	target := net.JoinHostPort(host, port)
	var d net.Dialer
	var last error
	for i := 0; i < 100; i++ {
		c, err := d.DialContext(ctx, "tcp", target)
		if err == nil {
			return c.Close()
		}
		last = err
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t := time.NewTimer(time.Duration(i+1) * 5 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return last
}

// quietHandler passes mochi's warnings and errors on to zerolog's slog
// handler, leaving out what is routine for a broker: a client going away
// (its connection closed, EOF).
type quietHandler struct{ slog.Handler }

func (h quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	routine := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Resolve().Any().(error); ok && (errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF)) {
			routine = true
			return false
		}
		return true
	})
	if routine {
		return nil
	}
	if r.Message == "" {
		r.Message = "client connection failed" // mochi logs these with the error alone
	}
	return h.Handler.Handle(ctx, r)
}

func (h quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return quietHandler{h.Handler.WithAttrs(as)}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{h.Handler.WithGroup(name)}
}

// cloneOwner copies o, so that the caller's slices cannot change the rule.
func cloneOwner(o *Owner) *Owner {
	if o == nil {
		return nil
	}
	return &Owner{ClientID: o.ClientID, Reserved: slices.Clone(o.Reserved), Open: slices.Clone(o.Open)}
}
