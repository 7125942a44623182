// Package app wires the daemon together and runs it: cloud client, scheduler,
// poller, registry, settings, MQTT bridge, HTTP endpoint, events, state
// directory and systemd; it also runs -check and the devices command.
// cmd/bridge is a thin shell around Main, and end-to-end tests start Main
// in-process against a test broker and a simulated cloud.
package app

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/bridge"
	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/events"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/local"
	"cloud2mqtt/internal/logging"
	"cloud2mqtt/internal/mqtt"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/settings"
)

// ShutdownGrace bounds how long shutdown waits for commands in flight.
const ShutdownGrace = 5 * time.Second

// Main is one running daemon.
type Main struct {
	Config  config.Config
	Version string
	Log     zerolog.Logger
	// HTTPClient, when set, is used for the cloud (tests inject transports).
	HTTPClient *http.Client
	// LogForward, when set, is fed Log's lines; Run publishes the warnings and
	// errors on <base>/bridge/logging.
	LogForward *logging.Forwarder
	// Ingress, when its Addr is set (app mode), also serves the status
	// page to Home Assistant's ingress proxy (http.go).
	Ingress Ingress
	// LANClient, when set, replaces LAN_LISTEN and LAN_SCAN_TARGETS and turns
	// local control on (the demo's simulated lights, a test's).
	LANClient *lan.Config
	// Events, when set, replaces CLOUD_EVENTS_URL's broker as the source of
	// device events (the demo's simulator); it calls deliver until ctx ends.
	Events func(ctx context.Context, deliver func(events.Event))
	// OnReady, when set, is called once, when the first device list is in,
	// with where the daemon is reached (the demo prints its instructions).
	OnReady func(Ready)
	// Clock is the daemon's time (nil: clock.Real), used by every part and timer
	// so that tests can jump over a hold-off instead of waiting for it.
	Clock clock.Clock

	mu      sync.Mutex
	run     *parts // the running parts, once the broker is connected
	metrics *metrics
	reached Ready // the addresses served so far
	ready   chan struct{}
	// connectRetry, set by tests, is paho's wait between attempts before the
	// first connect (0: its default); paho sleeps it on the system clock.
	connectRetry time.Duration
}

// Ready is where a running daemon is reached.
type Ready struct {
	// BrokerURL is the MQTT broker's URL the bridge is connected to (the
	// embedded broker's when it runs one).
	BrokerURL string
	// PageURL is the status page's base URL on HTTP_ADDR, IngressURL the
	// ingress listener's; "" when off.
	PageURL, IngressURL string
}

// Run runs the daemon until ctx ends, then shuts down in order: the poller
// stops, commands in flight finish (at most ShutdownGrace), "offline" is
// published and the broker connection closed. It returns nil on a clean
// shutdown.
func (m *Main) Run(ctx context.Context) error {
	cfg := m.Config
	m.Log.Info().Str("version", m.Version).Object("config", cfg).Msg("starting cloud2mqtt")
	logWarnings(Problems(cfg, nil), m.Log)
	ready := m.readyChan()

	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	env, err := m.environment(ctx)
	if err != nil {
		return err
	}
	defer env.close()
	d, err := m.assemble(cfg, env)
	if err != nil {
		return err
	}
	if d.lan != nil {
		defer d.lan.Close() // its socket, on every way out (Run closes it too)
	}
	if err := d.connect(ctx); err != nil {
		if ctx.Err() != nil {
			m.Log.Info().Msg("stopped before the MQTT broker was reached")
			return nil
		}
		return err
	}
	// The broker is up and the state directory read, so systemd may go on; the
	// cloud may stay unreachable for long at boot, and the watchdog covers that.
	d.sd.Ready()
	m.mu.Lock()
	m.run, m.metrics = &d.parts, d.met
	m.reached.BrokerURL = env.mqttURL
	m.mu.Unlock()
	d.met.register(d.sched, d.poll, d.reg, d.conn)
	d.start(ctx)
	if err := m.serve(ctx, &wg, d); err != nil {
		cancel()
		d.shutdown()
		return err
	}
	m.runBackground(ctx, &wg, d, ready)
	if m.OnReady != nil {
		wg.Add(1)
		go func() { defer wg.Done(); m.tellReady(ctx, ready) }()
	}
	<-ctx.Done()
	d.shutdown()
	return nil
}

// pageURL is the URL a user on this machine opens for the listener; one on
// every interface (0.0.0.0, reported as [::]) is reached at 127.0.0.1.
func pageURL(bound net.Addr) string {
	host, port, err := net.SplitHostPort(bound.String())
	if err != nil {
		return "http://" + bound.String()
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// tellReady calls OnReady once the first device list is in, after the start's
// log lines, so that what it prints does not scroll away under them.
func (m *Main) tellReady(ctx context.Context, ready <-chan struct{}) {
	select {
	case <-ready:
	case <-ctx.Done():
		return
	}
	m.mu.Lock()
	r := m.reached
	m.mu.Unlock()
	m.OnReady(r)
}

// parts are the daemon's components the background loop, the health
// answer and /metrics read.
type parts struct {
	mirror *bridge.Mirror
	reg    *registry.Registry
	sched  *scheduler.Scheduler
	poll   *poller.Poller
	conn   *mqtt.Client
	set    *settings.Settings
	lan    *local.Router // nil: LAN control off
	br     *bridge.Bridge
}

// clock is m.Clock, or the real clock when it is nil.
func (m *Main) clock() clock.Clock { return clock.Or(m.Clock) }

// readyChan is closed once the first device list is in (tests wait for it
// with WaitReady, export_test.go); it may be asked for before Run starts.
func (m *Main) readyChan() chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ready == nil {
		m.ready = make(chan struct{})
	}
	return m.ready
}

// httpClient returns the cloud's HTTP client and a closeIdle that closes its
// idle connections when the daemon made the transport (else a no-op).
func (m *Main) httpClient() (_ *http.Client, closeIdle func()) {
	if m.HTTPClient != nil {
		return m.HTTPClient, func() {}
	}
	t := cloudTransport()
	return &http.Client{Timeout: m.Config.Cloud.Timeout, Transport: t}, t.CloseIdleConnections
}

// countRequest counts a cloud request in the metrics (cloud.Config.OnRequest).
func (m *Main) countRequest(endpoint string, status int) {
	m.mu.Lock()
	met := m.metrics
	m.mu.Unlock()
	if met != nil {
		met.observeRequest(endpoint, status)
	}
}

// cloudTransport keeps as many idle connections to the cloud as the scheduler
// may have requests in flight, so that batched reads reuse them instead of
// paying a TLS handshake each; the daemon closes the surplus after the first reads.
func cloudTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = scheduler.DefaultMaxInFlight + scheduler.DefaultFirstInFlight
	t.MaxIdleConns = max(t.MaxIdleConns, t.MaxIdleConnsPerHost)
	return t
}

func schedulerConfig(c config.Config) scheduler.Config {
	l := c.Limits
	return scheduler.Config{
		DeviceList:     scheduler.PerMinute(float64(l.DevicesPerMinute), l.DevicesPerMinute),
		ControlAccount: scheduler.PerSecond(float64(l.ControlPerSecond), l.ControlBurst),
		ControlDevice:  scheduler.PerSecond(float64(l.DeviceControlPerSecond), l.DeviceControlBurst),
		State:          scheduler.PerMinute(float64(l.StatePerMinute), l.StatePerMinute),
		Scenes:         scheduler.PerMinute(float64(l.ScenesPerMinute), l.ScenesPerMinute),
		DIYScenes:      scheduler.PerMinute(float64(l.ScenesPerMinute), l.ScenesPerMinute),
	}
}
