// Package app wires the daemon together: the cloud client, the scheduler,
// the poller, the MQTT connection, the bridge, the HTTP endpoint, events and
// systemd notifications. cmd/bridge is a thin shell around Main; end-to-end
// tests start Main in-process against a test broker and a simulated cloud.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/bridge"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/local"
	"cloud2mqtt/internal/logging"
	"cloud2mqtt/internal/mqtt"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/statedir"
	"cloud2mqtt/internal/topic"
)

// ShutdownGrace bounds how long shutdown waits for commands in flight.
const ShutdownGrace = 5 * time.Second

// Main is one running daemon.
type Main struct {
	Config  config.Config
	Version string
	Log     zerolog.Logger
	// Stdout receives the demo mode's instructions.
	Stdout io.Writer
	// HTTPClient, when set, is used for the cloud (tests inject transports).
	HTTPClient *http.Client
	// LogForward, when set, is fed Log's lines (cmd/bridge puts it beside
	// the output): Run publishes the warnings and errors on
	// <base>/bridge/logging.
	LogForward *logging.Forwarder

	mu      sync.Mutex
	sched   *scheduler.Scheduler
	poll    *poller.Poller
	conn    *mqtt.Client
	metrics *metrics
	httpURL string
	ready   chan struct{}
	tune    tuning // timings tests shorten; zero: the defaults
	// tuneConfigs, set by tests (export_test.go), shortens hold-offs,
	// back-offs and retry intervals in the scheduler's, the poller's and the
	// MQTT client's configuration.
	tuneConfigs func(*scheduler.Config, *poller.Config, *mqtt.Config)
	// lan is the LAN router (nil: LAN control off); lanClient, set by
	// tests, replaces the LAN client's settings (lan.go).
	lan       *local.Router
	lanClient *lan.Config

	// pageAddr, when set, is the address the status page takes HTTP_ADDR
	// to be for its loopback rule (tests: bound to loopback, judged as
	// not).
	pageAddr string
}

// Run runs the daemon until ctx ends, then shuts down in order: the poller
// stops, commands in flight finish (at most ShutdownGrace), "offline" is
// published and the broker connection closed. It returns nil on a clean
// shutdown.
func (m *Main) Run(ctx context.Context) error {
	cfg := m.Config
	if cfg.Demo && cfg.HTTP.Addr == "" {
		cfg.HTTP.Addr = demoHTTPAddr() // the demo shows its status page
	}
	log := m.Log
	log.Info().Str("version", m.Version).Object("config", cfg).Msg("starting cloud2mqtt")
	layout := topic.New(cfg.MQTT.BaseTopic)
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

	client, err := cloud.New(cloud.Config{
		BaseURL: env.baseURL, APIKey: env.apiKey, KeyHeader: cfg.Cloud.KeyHeader,
		HTTPClient: m.httpClient(), Logger: log,
	})
	if err != nil {
		return err
	}
	met := newMetrics(m.Version)
	dir := statedir.Dir(cfg.State.Dir)
	tune := m.tuning()
	// Every change of a figure the bridge shows or keeps wakes the stats
	// and the state directory's writer.
	kicks := newNotifier(2)
	statsKick, saveKick := kicks[0], kicks[1]
	scfg := schedulerConfig(cfg)
	scfg.AuthHoldoff, scfg.MaxRetryAfter, scfg.OnChange = tune.authHoldoff, tune.maxRetryAfter, kicks.notify
	// The poller hears of reads held by a 429 (it answers who waits for
	// them); it is made below, before the scheduler runs.
	var poll *poller.Poller
	scfg.OnHeld = func(sku, device string, h scheduler.Hold) { poll.Held(sku, device, h) }
	// The status page: its chart counts what the day's count counts.
	page := newWebPage()
	scfg.OnCounted = page.history.Observe
	if s := readSpent(dir, log); s.Requests > 0 {
		scfg.RequestsToday, scfg.RequestsDay = s.Requests, s.Day
	}
	pcfg := poller.Config{
		Interval: cfg.Poll.Interval, DailyLimit: cfg.Cloud.DailyLimit,
		ListInterval: cfg.Poll.DeviceListInterval, SceneInterval: cfg.Poll.SceneInterval,
		StatelessRecheck: tune.statelessRecheck,
	}
	mcfg := mqtt.Config{
		URL: env.mqttURL, CAFile: cfg.MQTT.CAFile, CertFile: cfg.MQTT.CertFile, KeyFile: cfg.MQTT.KeyFile,
		Username: cfg.MQTT.Username, Password: cfg.MQTT.Password.Reveal(), ClientID: cfg.MQTT.ClientID,
		StateTopic: layout.BridgeState(), Logger: log,
	}
	if m.tuneConfigs != nil {
		m.tuneConfigs(&scfg, &pcfg, &mcfg)
	}
	sched := scheduler.New(client, scfg, log.With().Str("component", "scheduler").Logger())

	var mirror *bridge.Mirror
	mirror = bridge.NewMirror(bridge.Options{
		Layout: layout,
		Discovery: discovery.Config{
			Prefix: cfg.HA.DiscoveryPrefix, Layout: layout, Version: m.Version,
			BridgeID: topic.DeviceID("bridge", layout.Base), DailyLimit: cfg.Cloud.DailyLimit,
			Local: cfg.Local.Enabled || cfg.Demo,
		},
		DiscoveryEnabled: cfg.HA.Discovery,
		HAStatusTopic:    cfg.HA.StatusTopic,
		Health:           m.health,
		OnCommand:        page.errs.commandDone(met.observeCommand),
		OnError:          page.noteError(&mirror),
		Log:              log.With().Str("component", "bridge").Logger(),
	})
	lanr, err := m.newLocal(cfg, env)
	if err != nil {
		return err
	}
	if lanr != nil {
		defer lanr.Close() // its socket, on every way out (Run closes it too)
	}
	reg := registry.New(page.errs.sink(withLANSink(notifyingSink{mirror, kicks.notify}, lanr)), log.With().Str("component", "registry").Logger())
	restoreState(dir, reg, log)
	poll = poller.New(sched, reg, pcfg, log.With().Str("component", "poller").Logger())
	set := newSettings(cfg, dir, log, poll, mirror)
	set.apply()
	br := bridge.New(mirror, reg, poll, sched, set)
	if lanr != nil {
		lanr.Bind(reg, poll)
		br.SetLocal(lanr)
		page.Path = connectionOf(reg)
	}
	// On the first connect, subscribe before the client says "online" (a
	// command sent on seeing it must be taken); on every (re)connect,
	// publish through this connection and republish everything retained
	// (the broker may have lost it).
	var subscribed sync.Once
	var subErr error
	conn, err := mqtt.Connect(ctx, mcfg, func(c *mqtt.Client) {
		subscribed.Do(func() {
			for _, f := range br.Subscriptions() {
				if subErr = c.Subscribe(f, 1, br.Handle); subErr != nil {
					return
				}
			}
		})
		mirror.Connected(c)
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if subErr != nil {
		conn.Close(context.Background())
		return subErr
	}
	// The broker is up and the state directory read: systemd may go on
	// (the cloud may be unreachable for long at boot; the watchdog and
	// /healthz watch the rest).
	sd := Systemd{Log: log}
	sd.Ready()
	m.mu.Lock()
	m.sched, m.poll, m.conn, m.metrics = sched, poll, conn, met
	m.mu.Unlock()
	met.register(sched, poll, reg, conn)

	schedCtx, stopSched := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSched()
	schedDone := make(chan struct{})
	go func() {
		defer close(schedDone)
		if err := sched.Run(schedCtx); err != nil {
			log.Error().Err(err).Msg("scheduler stopped")
		}
	}()
	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		if err := poll.Run(pollCtx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error().Err(err).Msg("poller stopped")
		}
	}()

	if cfg.HTTP.Addr != "" {
		if exposedAddr(cfg.HTTP.Addr) {
			log.Warn().Str("HTTP_ADDR", cfg.HTTP.Addr).
				Msg("HTTP_ADDR listens on every interface: the status page, /metrics and /healthz are open to the network (devices, request counts, errors; actions only with HTTP_TOKEN); set HTTP_ADDR=127.0.0.1:PORT unless another host must see them")
		}
		h, _, err := page.handler(m.webAddr(cfg.HTTP.Addr), cfg.HTTP.Token.Reveal(), scfg, parts{mirror, reg, sched, poll, conn, set, lanr}, log)
		var url string
		if err == nil {
			url, err = m.serveHTTP(ctx, &wg, cfg.HTTP.Addr, met, h)
		}
		if err != nil {
			cancel()
			<-pollDone
			stopSched()
			<-schedDone
			conn.Close(context.Background())
			return err
		}
		m.mu.Lock()
		m.httpURL = url
		m.mu.Unlock()
		m.printPage(url)
	}
	if m.LogForward != nil {
		wg.Add(1)
		go func() { defer wg.Done(); m.LogForward.Run(ctx, page.publishLog(mirror)) }()
	}
	if env.events != nil {
		wg.Add(1)
		go func() { defer wg.Done(); env.events(ctx, mirror) }()
	}

	if lanr != nil {
		wg.Add(1)
		go func() { defer wg.Done(); lanr.Run(ctx) }()
	}
	wg.Add(4)
	go func() { defer wg.Done(); br.Run(ctx) }()
	go func() { defer wg.Done(); persist(ctx, saveKick, tune.saveDelay, dir, reg, sched, log) }()
	go func() {
		defer wg.Done()
		m.background(ctx, ready, statsKick, parts{mirror, reg, sched, poll, conn, set, lanr})
	}()
	go func() {
		defer wg.Done()
		sd.Watchdog(ctx, poll.Progress, func() time.Duration { return staleAfter(poll.Stats().Interval) })
	}()

	<-ctx.Done()
	sd.Stopping()
	log.Info().Msg("shutting down: finishing commands in flight")
	stopPoll()
	<-pollDone
	saveState(dir, reg, log)
	stopSched()
	select {
	case <-schedDone:
	case <-time.After(ShutdownGrace):
		log.Warn().Dur("grace", ShutdownGrace).Msg("commands still in flight after the grace period; leaving them")
	}
	saveSpent(dir, sched.Stats(), log)
	closeCtx, done := context.WithTimeout(context.Background(), 2*time.Second)
	defer done()
	conn.Close(closeCtx)
	log.Info().Msg("stopped")
	return nil
}

// parts are the daemon's components the background loop reads.
type parts struct {
	mirror *bridge.Mirror
	reg    *registry.Registry
	sched  *scheduler.Scheduler
	poll   *poller.Poller
	conn   *mqtt.Client
	set    *settings
	lan    *local.Router // nil: LAN control off
}

// tuning is m.tune with the defaults filled in.
func (m *Main) tuning() tuning {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tune.withDefaults()
}

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

func (m *Main) httpClient() *http.Client {
	base := m.HTTPClient
	if base == nil {
		base = &http.Client{Timeout: m.Config.Cloud.Timeout, Transport: cloudTransport()}
	}
	c := *base
	c.Transport = observe(c.Transport, func(endpoint string, status int) {
		m.mu.Lock()
		met := m.metrics
		m.mu.Unlock()
		if met != nil {
			met.observeRequest(endpoint, status)
		}
	})
	return &c
}

// cloudTransport is net/http's default transport keeping as many idle
// connections to the cloud as the scheduler has requests in flight: with the
// default of 2, reads sent together (the poller batches them) would open
// and close connections, a TLS handshake each, every second.
func cloudTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = scheduler.DefaultMaxInFlight
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

// health is the answer of /healthz and the health request: healthy when the
// broker is connected, the cloud answers (not every request failing for
// cloudGrace) and the poller progresses (reads the cloud answered).
func (m *Main) health() (bool, []string, any) {
	m.mu.Lock()
	conn, poll, sched := m.conn, m.poll, m.sched
	m.mu.Unlock()
	var reasons []string
	if conn == nil || !conn.Connected() {
		reasons = append(reasons, "not connected to the MQTT broker")
	}
	details := map[string]any{}
	if poll != nil {
		st := poll.Stats()
		stale := staleAfter(st.Interval)
		last := poll.Progress()
		details["devices"] = st.Devices
		details["poll_interval"] = st.Interval.String()
		if !last.IsZero() {
			details["last_progress"] = last.UTC().Format(time.RFC3339)
		}
		if last.IsZero() || time.Since(last) > stale {
			reasons = append(reasons, fmt.Sprintf("the poller has made no progress for more than %s", stale.Round(time.Second)))
		}
	}
	if sched != nil {
		st := sched.Stats()
		now := time.Now()
		if !st.AuthHoldoffUntil.IsZero() && now.Before(st.AuthHoldoffUntil) {
			reasons = append(reasons, "the cloud refuses the API key: check CLOUD_API_KEY")
		} else if failing, why := cloudFailing(st.Cloud, now, m.tuning().cloudGrace); failing {
			reasons = append(reasons, why)
		}
		details["requests_today"] = st.RequestsToday
		if !st.Cloud.LastAnswer.IsZero() {
			details["cloud_last_answer"] = st.Cloud.LastAnswer.UTC().Format(time.RFC3339)
		}
	}
	return len(reasons) == 0, reasons, details
}

// staleAfter is how long without poller progress counts as stuck: three
// poll intervals (at least a minute each) and half a minute more.
func staleAfter(interval time.Duration) time.Duration {
	return 3*max(interval, time.Minute) + 30*time.Second
}
