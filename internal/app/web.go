package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/bridge"
	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/web"
)

// The status page (internal/web) over the running daemon: webSource shows
// what the registry, the poller, the scheduler and the settings know, and
// webActions carries the page's buttons out through the same code paths as
// the MQTT requests.

// webSource is the page's web.Source.
type webSource struct {
	mirror   *bridge.Mirror
	reg      *registry.Registry
	poll     *poller.Poller
	sched    *scheduler.Scheduler
	set      *settings
	limits   scheduler.Config // the buckets' capacities
	problems *web.ProblemLog
	errs     *deviceErrors
	// Path says how a device is reached, "cloud" or "local"; nil: every
	// device by the cloud. LAN control sets it, and lanPoll: a local
	// device is read at the LAN poll, not the cloud's interval.
	Path    func(k capability.Key) string
	lanPoll time.Duration
}

// deviceErrors keeps each device's last errors, for the page: of reads
// (the one that made it unreachable, a failed read on request), shown
// until a good read after it, and of commands (every answer on
// <id>/error: rejected or failed commands, refused reads on request),
// shown until the cloud accepts a command of the device after it. The
// page shows the later of the two.
type deviceErrors struct {
	mu   sync.Mutex
	errs map[capability.Key]*errorPair
	now  func() time.Time
}

type errorPair struct {
	read, command deviceError
	commandOK     time.Time // the last command the cloud accepted
}

type deviceError struct {
	msg string
	at  time.Time
}

func newDeviceErrors() *deviceErrors {
	return &deviceErrors{errs: map[capability.Key]*errorPair{}, now: time.Now}
}

func (e *deviceErrors) pair(k capability.Key) *errorPair {
	p := e.errs[k]
	if p == nil {
		p = &errorPair{}
		e.errs[k] = p
	}
	return p
}

// readFailed notes a failed read of the device.
func (e *deviceErrors) readFailed(k capability.Key, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pair(k).read = deviceError{msg, e.now()}
}

// commandFailed notes an answer on the device's <id>/error.
func (e *deviceErrors) commandFailed(k capability.Key, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pair(k).command = deviceError{msg, e.now()}
}

// commandDone is bridge.Options.OnCommand's: a command the cloud accepted
// clears the device's command error.
func (e *deviceErrors) commandDone(next func(scheduler.CommandResult)) func(scheduler.CommandResult) {
	return func(r scheduler.CommandResult) {
		if r.Err == nil {
			e.mu.Lock()
			e.pair(capability.Key{SKU: r.Request.SKU, Device: r.Request.Device}).commandOK = e.now()
			e.mu.Unlock()
		}
		next(r)
	}
}

// last is the device's last error still standing ("" none): v is what the
// registry knows of it (its last good read).
func (e *deviceErrors) last(k capability.Key, v registry.View) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.errs[k]
	if p == nil {
		return ""
	}
	var out deviceError
	if p.read.msg != "" && (!v.Read || p.read.at.After(v.LastRead)) {
		out = p.read
	}
	if p.command.msg != "" && p.command.at.After(p.commandOK) && !p.command.at.Before(out.at) {
		out = p.command
	}
	return out.msg
}

// sink wraps the registry's sink: an unreachable device's error is kept.
func (e *deviceErrors) sink(s registry.Sink) registry.Sink { return errorSink{s, e} }

type errorSink struct {
	registry.Sink
	errs *deviceErrors
}

func (s errorSink) Unreachable(v registry.View, err error) {
	if err != nil {
		s.errs.readFailed(v.Device.Key(), err.Error())
	}
	s.Sink.Unreachable(v, err)
}

// deviceOptions are the devices' options by topic id, as set over MQTT or
// on the page.
func (s *settings) deviceOptions() map[string]deviceSettings {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]deviceSettings, len(s.saved.Devices))
	for id, d := range s.saved.Devices {
		out[id] = d
	}
	return out
}

// status is a device's status on the page.
func status(v registry.View) string {
	switch {
	case !v.Read:
		return web.StatusUnknown
	case !v.Reachable:
		return web.StatusUnreachable
	case !v.Online:
		return web.StatusOffline
	}
	return web.StatusOnline
}

func (s *webSource) row(v registry.View, id string, opts map[string]deviceSettings, ivs map[capability.Key]poller.Interval) web.Device {
	k := v.Device.Key()
	o := opts[id]
	d := web.Device{ID: id, Name: displayName(v.Device, o.Name), Model: v.Device.SKU, Type: v.Device.Type,
		Status: status(v), Disabled: o.Disabled, Path: "cloud", LastError: s.errs.last(k, v)}
	if s.Path != nil {
		d.Path = s.Path(k)
	}
	if v.Read && !v.LastRead.IsZero() {
		t := v.LastRead
		d.LastRead = &t
	}
	switch iv, ok := ivs[k]; {
	case d.Path == "local" && s.lanPoll > 0:
		d.PollInterval = web.Duration(s.lanPoll)
	case ok:
		d.PollInterval, d.OwnInterval = web.Duration(iv.Every), iv.Own
	}
	return d
}

func displayName(d capability.Device, own string) string {
	switch {
	case own != "":
		return own
	case d.Name != "":
		return d.Name
	}
	return d.SKU
}

// Devices implements web.Source.
func (s *webSource) Devices() []web.Device {
	views := s.reg.Views()
	ids, opts, ivs := s.mirror.IDs(), s.set.deviceOptions(), s.poll.Intervals()
	out := make([]web.Device, 0, len(views))
	for _, v := range views {
		id, ok := ids[v.Device.Key()]
		if !ok {
			continue // listed a moment ago: the mirror names it next
		}
		out = append(out, s.row(v, id, opts, ivs))
	}
	return out
}

// Device implements web.Source.
func (s *webSource) Device(id string) (web.DeviceDetail, bool) {
	k, id, ok := s.mirror.KeyOf(id)
	if !ok {
		return web.DeviceDetail{}, false
	}
	v, ok := s.reg.Snapshot(k)
	if !ok {
		return web.DeviceDetail{}, false
	}
	return web.DeviceDetail{Device: s.row(v, id, s.set.deviceOptions(), s.poll.Intervals()),
		Values: v.Values, Capabilities: v.Device.Capabilities}, true
}

// Budget implements web.Source: the figures of bridge/stats and /metrics.
func (s *webSource) Budget() web.Budget {
	st := s.sched.Stats()
	b := web.Budget{RequestsToday: st.RequestsToday, DailyLimit: s.set.dailyLimit(), RateLimited: st.RateLimited,
		QueueDepth: st.QueuedCommands + st.QueuedReads, InFlight: st.InFlight,
		PollInterval: web.Duration(s.poll.Stats().Interval)}
	if !st.LastRateLimited.IsZero() {
		t := st.LastRateLimited
		b.Last429 = &t
	}
	b.Quota = webQuota(st, s.set.dailyLimit(), time.Now()) // metrics.go
	l := s.limits
	capOf := func(l, def scheduler.Limit) float64 {
		if l.Burst < 1 || l.Rate <= 0 {
			return float64(def.Burst)
		}
		return float64(l.Burst)
	}
	b.Buckets = []web.Bucket{
		{Name: "device list", Tokens: st.Tokens.DeviceList, Capacity: capOf(l.DeviceList, scheduler.DefaultDeviceList)},
		{Name: "control (account)", Tokens: st.Tokens.ControlAccount, Capacity: capOf(l.ControlAccount, scheduler.DefaultControlAccount)},
		{Name: "control (fewest of any device)", Tokens: st.Tokens.ControlDeviceMin, Capacity: capOf(l.ControlDevice, scheduler.DefaultControlDevice)},
		{Name: "state (fewest of any device)", Tokens: st.Tokens.StateMin, Capacity: capOf(l.State, scheduler.DefaultState)},
		{Name: "scenes (fewest of any device)", Tokens: st.Tokens.ScenesMin, Capacity: capOf(l.Scenes, scheduler.DefaultScenes)},
	}
	return b
}

// Problems implements web.Source.
func (s *webSource) Problems() []web.Problem { return s.problems.Problems() }

// webActions is the page's web.Actions: the paths of the MQTT requests.
type webActions struct {
	mirror *bridge.Mirror
	poll   *poller.Poller
	set    *settings
	errs   *deviceErrors
	log    zerolog.Logger
}

func (a *webActions) key(id string) (capability.Key, string, error) {
	k, id, ok := a.mirror.KeyOf(id)
	if !ok {
		return capability.Key{}, "", web.ErrUnknownDevice
	}
	return k, id, nil
}

// ReadNow is <id>/get.
func (a *webActions) ReadNow(id string) error {
	k, id, err := a.key(id)
	if err != nil {
		return err
	}
	err = a.poll.ReadNow(k.SKU, k.Device, func(err error) {
		if err != nil {
			a.log.Warn().Err(err).Str("device", k.String()).Msg("read on request failed")
			a.errs.readFailed(k, err.Error())
		}
	})
	switch {
	case errors.Is(err, poller.ErrDisabled):
		return fmt.Errorf("%s is disabled: enable it to read it", id)
	case errors.Is(err, poller.ErrUnknownDevice):
		return fmt.Errorf("%w: %v", web.ErrUnknownDevice, err)
	}
	return err
}

// SetEnabled is device/options {"disabled": !enabled}.
func (a *webActions) SetEnabled(id string, enabled bool) error {
	return a.options(id, map[string]any{"disabled": !enabled})
}

// SetPollInterval is device/options {"poll_interval": interval}, null for "".
func (a *webActions) SetPollInterval(id string, interval string) error {
	var v any
	if interval != "" {
		v = interval
	}
	return a.options(id, map[string]any{"poll_interval": v})
}

func (a *webActions) options(id string, o map[string]any) error {
	k, id, err := a.key(id)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(o)
	if err != nil {
		return err
	}
	_, err = a.set.SetDeviceOptions(id, k, raw)
	return err
}

// RefreshDevices is bridge/request/refresh.
func (a *webActions) RefreshDevices() error { return a.poll.RefreshDevices(nil) }

// RepublishDiscovery is bridge/request/republish.
func (a *webActions) RepublishDiscovery() error {
	a.mirror.Republish()
	return nil
}

// webPage is what the status page needs from Run: the history and the
// problems are fed from the start, the handler made once the parts exist.
type webPage struct {
	history  *web.History
	problems *web.ProblemLog
	errs     *deviceErrors
	// Path says how a device is reached, "cloud" or "local" (the
	// source's Path), and lanPoll how often the LAN reads a local one;
	// set them (setLocal) before the HTTP endpoint starts. nil: every
	// device by the cloud.
	Path    func(k capability.Key) string
	lanPoll time.Duration
}

func newWebPage() *webPage {
	return &webPage{history: web.NewHistory(time.Now()), problems: web.NewProblemLog(0, nil), errs: newDeviceErrors()}
}

// setLocal tells the page which devices the LAN reaches (reg's locations)
// and how often it reads them (LAN_POLL_INTERVAL).
func (w *webPage) setLocal(reg *registry.Registry, poll time.Duration) {
	w.Path, w.lanPoll = connectionOf(reg), poll
}

// pageOptions are the settings of the page's handler: HTTP_ADDR as the
// page judges it, HTTP_HOSTS, HTTP_TOKEN, and /healthz and /metrics.
type pageOptions struct {
	addr            string
	hosts           []string
	token           string
	health, metrics http.Handler
}

// handler is the page over the daemon's parts.
func (w *webPage) handler(o pageOptions, limits scheduler.Config, p parts, log zerolog.Logger) (*web.Handler, *webSource, error) {
	src := &webSource{mirror: p.mirror, reg: p.reg, poll: p.poll, sched: p.sched, set: p.set, limits: limits,
		problems: w.problems, errs: w.errs, Path: w.Path, lanPoll: w.lanPoll}
	act := &webActions{mirror: p.mirror, poll: p.poll, set: p.set, errs: w.errs, log: log}
	h, err := web.New(web.Options{Source: src, Actions: act, History: w.history, Addr: o.addr, Hosts: o.hosts, Token: o.token,
		Health: o.health, Metrics: o.metrics, Log: log.With().Str("component", "http").Logger()})
	return h, src, err
}

// publishLog is the log forwarder's output: bridge/logging and the page's
// recent problems, the same records.
func (w *webPage) publishLog(mirror *bridge.Mirror) func([]byte) {
	return func(p []byte) {
		mirror.PublishLog(p)
		w.problems.AddJSON(p)
	}
}

// noteError is bridge.Options.OnError: an answer on <id>/error.
func (w *webPage) noteError(mirror **bridge.Mirror) func(id, msg string) {
	return func(id, msg string) {
		if k, _, ok := (*mirror).KeyOf(id); ok {
			w.errs.commandFailed(k, msg)
		}
	}
}

// demoHTTPAddr is the demo's HTTP_ADDR when none is set: 127.0.0.1:8080,
// or a free loopback port when that one is taken.
func demoHTTPAddr() string {
	const addr = "127.0.0.1:8080"
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "127.0.0.1:0"
	}
	_ = ln.Close()
	return addr
}

// printPage tells the demo's user where the status page is.
func (m *Main) printPage(url string) {
	if m.Stdout == nil || !m.Config.Demo {
		return
	}
	fmt.Fprintf(m.Stdout, "Status page:            %s/   (devices, today's budget, recent problems)\n\n", url)
}
