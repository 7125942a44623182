package app

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/bridge"
	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/mqtt"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/settings"
	"cloud2mqtt/internal/statedir"
	"cloud2mqtt/internal/statuspage"
	"cloud2mqtt/internal/topic"
)

// The steps of Run: assemble the parts, connect to the broker, start the
// loops, serve HTTP, start the background work, and shut down in order.

// running is one run's parts and what its steps share.
type running struct {
	parts
	cfg       config.Config
	log       zerolog.Logger
	clk       clock.Clock
	env       *environment
	met       *metrics
	dir       statedir.Dir
	statsKick *listener
	saveKick  *listener
	setKick   *clock.Wake // a change of settings, for bridge/info at once
	page      *statuspage.Page
	scfg      scheduler.Config
	mcfg      mqtt.Config
	sd        Systemd

	// Set by start: the loops' stops and their ends.
	stopPoll, stopSched func()
	pollDone, schedDone chan struct{}
}

// assemble builds every part in constructor order (scheduler, mirror, LAN
// router, registry, restored state, poller, settings, bridge); nothing runs yet.
func (m *Main) assemble(cfg config.Config, env *environment) (*running, error) {
	log := m.Log

	var sched *scheduler.Scheduler // the answers' rate-limit headers tell it the quota
	clk := m.clock()
	hc, closeIdle := m.httpClient()
	client, err := cloud.New(cloud.Config{
		BaseURL: env.baseURL, APIKey: env.apiKey, KeyHeader: cfg.Cloud.KeyHeader, KeySource: cfg.APIKeySource(),
		HTTPClient: hc, OnRequest: m.countRequest, Logger: log,
		OnLimits: func(l cloud.RateLimits) { sched.ObserveLimits(l) },
		Now:      clk.Now, // resets and Retry-After on the scheduler's clock
	})
	if err != nil {
		return nil, err
	}
	d := &running{cfg: cfg, log: log, clk: clk, env: env, met: newMetrics(m.Version, clk), dir: statedir.Dir(cfg.State.Dir),
		page: statuspage.New(clk.Now), sd: Systemd{Log: log, Clock: clk}}
	// Every change of a figure the bridge shows or keeps wakes the stats
	// and the state directory's writer.
	kicks := newNotifier(clk, "stats: a change")
	d.statsKick = kicks[0]
	if d.dir != "" { // else no writer takes the changes
		kicks = append(kicks, newNotifier(clk, "state directory: a change")...)
		d.saveKick = kicks[1]
	}
	pcfg := m.configs(d, kicks)
	// A start's burst of first reads opened a connection each: closed once
	// answered, the steady reads keep their few.
	d.scfg.OnFirstReadsDone = closeIdle
	d.sched = scheduler.New(client, d.scfg, log.With().Str("component", "scheduler").Logger())
	sched = d.sched
	d.mirror = m.newMirror(d)
	if d.lan, err = m.newLocal(cfg, clk); err != nil {
		return nil, err
	}
	// What the poller learns of the devices' changes hears of the registry's too (the LAN, commands).
	d.reg = registry.NewOn(clk, log.With().Str("component", "registry").Logger(), append(d.observers(kicks), pcfg.Activity.Observer())...)
	restoreState(d.dir, d.reg, log)
	d.poll = poller.New(d.sched, d.reg, pcfg, log.With().Str("component", "poller").Logger())
	d.setKick = clock.NewWake(clk, "bridge/info: a change of settings")
	d.set = settings.New(cfg, d.dir, log, d.poll, d.mirror, d.setKick.Notify)
	d.set.Apply()
	d.met.dailyLimit = d.set.DailyLimit
	d.br = bridge.New(d.mirror, d.reg, d.poll, d.sched, d.set)
	if d.lan != nil {
		d.lan.Bind(d.reg, d.poll)
		d.br.SetLocal(d.lan)
	}
	return d, nil
}

// observers are the registry's, in the order it tells them a change: the page's
// errors, the mirror, the LAN router, then the stats' and state writer's kicks.
func (d *running) observers(kicks notifier) []registry.Observer {
	obs := []registry.Observer{d.page.Observer(), d.mirror.Observer()}
	if d.lan != nil {
		obs = append(obs, registry.Observer{Devices: func(all, _, _ []capability.Device) { d.lan.SetDevices(all) }})
	}
	return append(obs, registry.Observer{Changed: kicks.notify})
}

// configs fills the scheduler's and the MQTT client's configuration in d
// and returns the poller's, all on the daemon's clock.
func (m *Main) configs(d *running, kicks notifier) poller.Config {
	cfg := d.cfg
	d.scfg = schedulerConfig(cfg)
	d.scfg.Clock, d.scfg.OnChange = d.clk, kicks.notify
	// The poller hears of reads held by a 429 (it answers who waits for
	// them); it is made after the scheduler, before the scheduler runs.
	d.scfg.OnHeld = func(sku, device string, h scheduler.Hold) { d.poll.Held(sku, device, h) }
	// The status page: its chart counts what the day's count counts, and
	// goes on from the hours saved beside it.
	d.scfg.OnCounted = d.page.OnCounted
	d.page.RestoreHistory(d.dir, d.log)
	if s := readSpent(d.dir, d.log); s.Requests > 0 {
		d.scfg.RequestsToday, d.scfg.RequestsDay = s.Requests, s.Day
	}
	pcfg := poller.Config{
		Interval: cfg.Poll.Interval, DailyLimit: cfg.Cloud.DailyLimit,
		ListInterval: cfg.Poll.DeviceListInterval, SceneInterval: cfg.Poll.SceneInterval,
		Clock: d.clk,
		// Reads shared by how often each device changes; bridge/devices says how often and why.
		QuietFactor: cfg.Poll.QuietFactor, StateRow: time.Minute / time.Duration(max(cfg.Limits.StatePerMinute, 1)),
		Activity: poller.NewActivity(d.clk), StateDir: d.dir,
		OnInterval: func(k capability.Key, iv poller.Interval) {
			d.mirror.SetPolling(k, bridge.Polling{Every: iv.Every, Why: iv.Why})
		},
	}
	layout := topic.New(cfg.MQTT.BaseTopic)
	d.mcfg = mqtt.Config{
		URL: d.env.mqttURL, CAFile: cfg.MQTT.CAFile, CertFile: cfg.MQTT.CertFile, KeyFile: cfg.MQTT.KeyFile,
		Username: d.env.mqttUser, Password: d.env.mqttPassword, ClientID: cfg.MQTT.ClientID,
		Record: d.env.mqttRecord, QueuedMaxAge: cfg.MQTT.QueuedCommandMaxAge,
		StateTopic: layout.BridgeState(), Logger: d.log, ConnectRetryInterval: m.connectRetry, Clock: d.clk,
	}
	return pcfg
}

// newMirror is everything the bridge publishes, one of the registry's
// observers.
func (m *Main) newMirror(d *running) *bridge.Mirror {
	cfg := d.cfg
	layout := topic.New(cfg.MQTT.BaseTopic)
	return bridge.NewMirror(bridge.Options{
		Layout: layout,
		Discovery: discovery.Config{
			Prefix: cfg.HA.DiscoveryPrefix, Layout: layout, Version: m.Version,
			BridgeID: topic.DeviceID("bridge", layout.Base), DailyLimit: cfg.Cloud.DailyLimit,
			Local: cfg.Local.Enabled,
		},
		DiscoveryEnabled: cfg.HA.Discovery,
		HAStatusTopic:    cfg.HA.StatusTopic,
		Health:           m.health,
		// Each command's outcome goes to the page and the metrics.
		OnCommand: func(r scheduler.CommandResult) { d.page.CommandDone(r); d.met.observeCommand(r) },
		OnError:   d.page.ErrorAnswered,
		Clock:     d.clk,
		Log:       d.log.With().Str("component", "bridge").Logger(),
	})
}

// lanPoll is how often the LAN reads a device it reaches (0: LAN control
// off), which the page shows as such a device's poll interval.
func (d *running) lanPoll() time.Duration {
	if d.lan == nil {
		return 0
	}
	return d.cfg.Local.PollInterval
}

// connect connects to the broker. The first connect subscribes before the
// bridge says "online", so that a command sent on seeing it is taken; every
// connect republishes everything retained, which the broker may have lost.
func (d *running) connect(ctx context.Context) error {
	var subscribed sync.Once
	var subErr error
	conn, err := mqtt.Connect(ctx, d.mcfg, func(c *mqtt.Client) {
		subscribed.Do(func() {
			for _, f := range d.br.Subscriptions() {
				if subErr = c.Subscribe(f, 1, d.br.Handle); subErr != nil {
					return
				}
			}
		})
		d.mirror.Connected(c)
	})
	if err != nil {
		return err
	}
	if subErr != nil {
		conn.Close(context.Background())
		return subErr
	}
	d.conn = conn
	return nil
}

// start runs the scheduler and the poller. The scheduler outlives ctx
// (shutdown lets commands in flight finish); the poller ends with it.
func (d *running) start(ctx context.Context) {
	schedCtx, stopSched := context.WithCancel(context.WithoutCancel(ctx))
	pollCtx, stopPoll := context.WithCancel(ctx)
	d.stopSched, d.stopPoll = stopSched, stopPoll
	d.schedDone, d.pollDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(d.schedDone)
		if err := d.sched.Run(schedCtx); err != nil {
			d.log.Error().Err(err).Msg("scheduler stopped")
		}
	}()
	go func() {
		defer close(d.pollDone)
		if err := d.poll.Run(pollCtx); err != nil && !errors.Is(err, context.Canceled) {
			d.log.Error().Err(err).Msg("poller stopped")
		}
	}()
}

// runBackground starts everything that runs beside the loops until ctx ends,
// on wg.
func (m *Main) runBackground(ctx context.Context, wg *sync.WaitGroup, d *running, ready chan struct{}) {
	goWG := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	if m.LogForward != nil {
		// bridge/logging and the page's recent problems: the same records.
		goWG(func() {
			m.LogForward.Run(ctx, func(p []byte) { d.mirror.PublishLog(p); d.page.AddLog(p) })
		})
	}
	if d.env.events != nil {
		goWG(func() { d.env.events(ctx, publishEvent(d.mirror, d.poll)) })
	}
	if d.lan != nil {
		goWG(func() { d.lan.Run(ctx) })
	}
	goWG(func() { d.br.Run(ctx) })
	goWG(func() {
		persist(ctx, d.clk, d.saveKick, d.dir, d.reg, d.sched, d.poll.Stats, d.page.SaveHistory, d.log)
	})
	goWG(func() { m.background(ctx, ready, d.statsKick, d.setKick, d.parts) })
	goWG(func() {
		progress := func() time.Time { return readProgress(d.poll, d.sched, d.clk.Now()) }
		d.sd.Watchdog(ctx, progress, func() time.Duration { return staleAfter(d.poll.Stats().Interval) })
	})
}

// shutdown stops the poller, then the scheduler (after saving state; commands
// in flight get ShutdownGrace), then the broker connection, which says "offline".
func (d *running) shutdown() {
	d.sd.Stopping()
	d.log.Info().Msg("shutting down: finishing commands in flight")
	d.stopPoll()
	<-d.pollDone
	saveState(d.dir, d.reg, d.log)
	d.stopSched()
	grace := d.clk.NewTimer(ShutdownGrace)
	defer grace.Stop()
	select {
	case <-d.schedDone:
	case <-grace.C():
		d.log.Warn().Dur("grace", ShutdownGrace).Msg("commands still in flight after the grace period; leaving them")
	}
	saveSpent(d.dir, d.sched.Stats(), d.log)
	d.page.SaveHistory(d.dir, d.log)
	closeCtx, done := context.WithTimeout(context.Background(), 2*time.Second)
	defer done()
	d.conn.Close(closeCtx)
	d.log.Info().Msg("stopped")
}
