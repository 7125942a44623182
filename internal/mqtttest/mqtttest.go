// Package mqtttest starts MQTT brokers for tests: a real mosquitto when it
// is installed (the broker users run), else the embedded mochi broker, each
// on a free loopback port, so that no test has to skip. It also has a TCP
// Proxy that can cut a client's connection abruptly, to test wills and
// reconnects without touching the broker, and an MQTT 5 client (V5Client:
// Home Assistant's protocol from 2026.6; paho speaks 3.1.1 only).
//
// It is for tests only: nothing here is meant for production use.
package mqtttest

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/broker"
)

// Kind names a broker implementation.
type Kind string

const (
	// Mosquitto is the real eclipse-mosquitto binary.
	Mosquitto Kind = "mosquitto"
	// Embedded is the in-process mochi broker of package broker.
	Embedded Kind = "embedded"
)

// MosquittoPath is the mosquitto binary found on PATH or in /usr/sbin (where
// Debian installs it), or "" when it is not installed.
func MosquittoPath() string {
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto"} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// Kinds lists the broker kinds to run a suite against: mosquitto when
// installed, and the embedded broker. Under the race detector the embedded
// broker is left out when mosquitto is there, because -race reports mochi
// v2.7.9's own unlocked reads of its retained-message index.
func Kinds() []Kind {
	switch {
	case MosquittoPath() == "":
		return []Kind{Embedded}
	case raceEnabled:
		return []Kind{Mosquitto}
	}
	return []Kind{Mosquitto, Embedded}
}

type options struct {
	kind      Kind
	user      string
	password  string
	tls       bool
	websocket bool
	persist   bool
	acl       string            // mosquitto's acl_file
	users     map[string]string // with acl: mosquitto's users beside anonymous clients
}

// Option configures Start.
type Option func(*options)

// WithKind chooses the broker; the default is mosquitto when installed.
// Asking for mosquitto where it is not installed fails the test.
func WithKind(k Kind) Option { return func(o *options) { o.kind = k } }

// WithPassword requires this username and password (anonymous clients are
// refused).
func WithPassword(user, password string) Option {
	return func(o *options) { o.user, o.password = user, password }
}

// WithTLS makes the listener speak TLS with a server certificate for
// 127.0.0.1 signed by a CA generated for the test; see Broker.CAFile.
func WithTLS() Option { return func(o *options) { o.tls = true } }

// WithWebsocket adds an MQTT-over-websocket listener; see Broker.WSURL.
func WithWebsocket() Option { return func(o *options) { o.websocket = true } }

// WithPersistence makes mosquitto keep retained messages, sessions and the
// messages queued for them across Restart: it saves its database after
// every change (to the test's temporary directory), as a production broker
// with persistence on does periodically. A message is saved once the broker
// has handled the next packet from any client, so a test that wants a
// message to survive a kill publishes one more QoS 1 message (a fence) and
// waits for its acknowledgement first. The embedded broker has no
// persistence: asking for it there fails the test.
func WithPersistence() Option { return func(o *options) { o.persist = true } }

// WithACL starts mosquitto with the ACL file at path and these users
// (name → password) in its password file; anonymous clients are still let
// in, under the file's rules for them (unless WithPassword). Mosquitto
// only: asking for it on the embedded broker fails the test.
func WithACL(path string, users map[string]string) Option {
	return func(o *options) { o.acl, o.users = path, users }
}

// Broker is a broker started for one test.
type Broker struct {
	t    testing.TB
	opts options
	dir  string
	port int
	ws   int
	ca   string

	mu       sync.Mutex
	embedded *broker.Broker
	proc     *exec.Cmd
	exited   chan struct{}
	output   *SyncBuffer
	stopped  bool
}

// Start starts a broker on a free loopback port and returns once it accepts
// connections; t.Cleanup stops it.
func Start(t testing.TB, opts ...Option) *Broker {
	t.Helper()
	b := &Broker{t: t, dir: t.TempDir()}
	for _, o := range opts {
		o(&b.opts)
	}
	if b.opts.kind == "" {
		b.opts.kind = Kinds()[0]
	}
	if b.opts.kind == Mosquitto && MosquittoPath() == "" {
		t.Fatalf("mqtttest: mosquitto is not installed (looked on PATH and in /usr/sbin); use mqtttest.Kinds()")
	}
	if b.opts.persist && b.opts.kind != Mosquitto {
		t.Fatalf("mqtttest: WithPersistence needs mosquitto; the %s broker loses everything on Restart", b.opts.kind)
	}
	if b.opts.acl != "" && b.opts.kind != Mosquitto {
		t.Fatalf("mqtttest: WithACL needs mosquitto (the %s broker has no ACL file)", b.opts.kind)
	}
	if b.opts.tls {
		b.ca = WriteCerts(t, b.dir)
	}
	if b.opts.kind == Mosquitto && (b.opts.user != "" || len(b.opts.users) > 0) {
		b.writePasswordFile()
	}
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		b.port = FreePort(t)
		if b.opts.websocket {
			b.ws = FreePort(t)
		}
		if err = b.start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("mqtttest: start %s: %v", b.opts.kind, err)
	}
	t.Cleanup(b.Stop)
	return b
}

// Kind is the broker implementation that runs.
func (b *Broker) Kind() Kind { return b.opts.kind }

// Addr is the broker's 127.0.0.1:port.
func (b *Broker) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)) }

// URL is the address for clients: tcp://127.0.0.1:port, or ssl:// WithTLS.
func (b *Broker) URL() string {
	if b.opts.tls {
		return "ssl://" + b.Addr()
	}
	return "tcp://" + b.Addr()
}

// WSURL is the websocket address (ws:// or wss://), "" without WithWebsocket.
func (b *Broker) WSURL() string {
	if !b.opts.websocket {
		return ""
	}
	scheme := "ws://"
	if b.opts.tls {
		scheme = "wss://"
	}
	return scheme + net.JoinHostPort("127.0.0.1", strconv.Itoa(b.ws)) + "/"
}

// CAFile is the PEM file of the CA that signed the server certificate
// (WithTLS), or "".
func (b *Broker) CAFile() string { return b.ca }

// Restart kills the broker abruptly (SIGKILL for mosquitto, a close for the
// embedded one) and starts it again on the same port. All broker state —
// retained messages, sessions — is lost, as after a crash without
// persistence, unless the broker was started WithPersistence: then what it
// had saved is back. It returns once the broker accepts connections again.
func (b *Broker) Restart() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.kill()
	var err error
	// The port was just released; another process could take it, but
	// retrying for a moment covers a slow release.
	for attempt := 0; attempt < 20; attempt++ {
		if err = b.start(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.t.Fatalf("mqtttest: restart %s on port %d: %v", b.opts.kind, b.port, err)
}

// Kill stops the broker abruptly and leaves it down (Restart brings it
// back). Clients see their connection drop.
func (b *Broker) Kill() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.kill()
}

// Stop stops the broker; it is safe to call more than once.
func (b *Broker) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return
	}
	b.stopped = true
	if b.proc != nil {
		_ = b.proc.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.exited:
		case <-time.After(5 * time.Second):
			_ = b.proc.Process.Kill()
			<-b.exited
		}
		if b.t.Failed() {
			b.t.Logf("mqtttest: mosquitto output:\n%s", b.output.String())
		}
		b.proc = nil
	}
	if b.embedded != nil {
		_ = b.embedded.Close()
		b.embedded = nil
	}
}

func (b *Broker) kill() {
	if b.proc != nil {
		_ = b.proc.Process.Kill()
		<-b.exited
		b.proc = nil
	}
	if b.embedded != nil {
		_ = b.embedded.Close()
		b.embedded = nil
	}
}

func (b *Broker) start() error {
	if b.opts.kind == Embedded {
		return b.startEmbedded()
	}
	return b.startMosquitto()
}

func (b *Broker) startEmbedded() error {
	// No packet-size limit (MaxPacketSize 0), as mosquitto's default (256
	// MB): tests of the bridge's handling of large payloads need them to
	// arrive.
	opts := broker.Options{Addr: b.Addr(), Logger: zerolog.New(testWriter{b.t}).Level(zerolog.WarnLevel)}
	if b.opts.websocket {
		opts.WSAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(b.ws))
	}
	if b.opts.user != "" {
		opts.Users = map[string]string{b.opts.user: b.opts.password}
	}
	if b.opts.tls {
		cfg, err := serverTLS(b.dir)
		if err != nil {
			return err
		}
		opts.TLSConfig = cfg
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	eb, err := broker.Start(ctx, opts)
	if err != nil {
		return err
	}
	b.embedded = eb
	return nil
}

func (b *Broker) startMosquitto() error {
	conf := filepath.Join(b.dir, "mosquitto.conf")
	var c bytes.Buffer
	if b.opts.persist {
		// Save after every change; the location needs its trailing slash.
		fmt.Fprintf(&c, "persistence true\npersistence_location %s/\nautosave_interval 1\nautosave_on_changes true\n", b.dir)
	} else {
		fmt.Fprintf(&c, "persistence false\n")
	}
	fmt.Fprintf(&c, "log_dest stderr\nlog_type error\nlog_type warning\n")
	if !b.opts.persist {
		// Notices include a line per save, thousands with persistence.
		fmt.Fprintf(&c, "log_type notice\n")
	}
	if os.Geteuid() == 0 {
		// Run as root keeps access to the test's private temporary directory
		// (mosquitto would otherwise switch to the "mosquitto" user).
		fmt.Fprintf(&c, "user root\n")
	}
	listener := func(port int, proto string) {
		fmt.Fprintf(&c, "listener %d 127.0.0.1\n", port)
		if proto != "" {
			fmt.Fprintf(&c, "protocol %s\n", proto)
		}
		if b.opts.tls {
			fmt.Fprintf(&c, "cafile %s\ncertfile %s\nkeyfile %s\n",
				filepath.Join(b.dir, "ca.pem"), filepath.Join(b.dir, "server.pem"), filepath.Join(b.dir, "server.key"))
		}
	}
	// per_listener_settings false: the auth settings below apply to every listener.
	switch {
	case b.opts.user != "":
		fmt.Fprintf(&c, "allow_anonymous false\npassword_file %s\n", filepath.Join(b.dir, "passwd"))
	case len(b.opts.users) > 0:
		fmt.Fprintf(&c, "allow_anonymous true\npassword_file %s\n", filepath.Join(b.dir, "passwd"))
	default:
		fmt.Fprintf(&c, "allow_anonymous true\n")
	}
	if b.opts.acl != "" {
		fmt.Fprintf(&c, "acl_file %s\n", b.opts.acl)
	}
	listener(b.port, "")
	if b.opts.websocket {
		listener(b.ws, "websockets")
	}
	if err := os.WriteFile(conf, c.Bytes(), 0o600); err != nil {
		return fmt.Errorf("write mosquitto config: %w", err)
	}
	out := &SyncBuffer{}
	cmd := exec.Command(MosquittoPath(), "-c", conf)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test binary
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run %s: %w", MosquittoPath(), err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	ports := []int{b.port}
	if b.opts.websocket {
		ports = append(ports, b.ws)
	}
	for _, p := range ports {
		if err := waitPort(p, exited); err != nil {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("mosquitto on port %d: %w; output:\n%s", p, err, out.String())
		}
	}
	b.proc, b.exited, b.output = cmd, exited, out
	return nil
}

func (b *Broker) writePasswordFile() {
	b.t.Helper()
	tool, err := exec.LookPath("mosquitto_passwd")
	if err != nil {
		b.t.Fatalf("mqtttest: mosquitto_passwd not found (it comes with mosquitto): %v", err)
	}
	path := filepath.Join(b.dir, "passwd")
	users := maps.Clone(b.opts.users)
	if users == nil {
		users = map[string]string{}
	}
	if b.opts.user != "" {
		users[b.opts.user] = b.opts.password
	}
	create := "-c"
	for _, u := range slices.Sorted(maps.Keys(users)) {
		args := []string{"-b", path, u, users[u]}
		if create != "" {
			args = append([]string{create}, args...)
			create = ""
		}
		if out, err := exec.Command(tool, args...).CombinedOutput(); err != nil {
			b.t.Fatalf("mqtttest: mosquitto_passwd: %v: %s", err, out)
		}
	}
}

// waitPort polls until 127.0.0.1:port accepts a TCP connection, the process
// exits (exited closed) or 10 s pass.
func waitPort(port int, exited <-chan struct{}) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	wait := 2 * time.Millisecond
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not accepting connections after 10s: %w", err)
		}
		select {
		case <-exited:
			return fmt.Errorf("broker exited before listening")
		case <-time.After(wait):
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mqtttest: find a free port: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatalf("mqtttest: find a free port: %v", err)
	}
	return port
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers: a process's
// output or a logger's, read by the test that owns it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testWriter sends the embedded broker's warnings to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("broker: %s", bytes.TrimSpace(p))
	return len(p), nil
}
