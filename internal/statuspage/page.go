// Package statuspage connects the status page (internal/web) to the running
// daemon: it fills web.Source from the registry, poller, scheduler, settings
// and Mirror, carries out web.Actions on the same code paths as the MQTT
// requests, and keeps what only the page shows: requests by hour, recent
// problems and each device's last error. It serves and publishes nothing.
package statuspage

import (
	"encoding/json"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/bridge"
	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/settings"
	"cloud2mqtt/internal/web"
)

// Mirror is what the page asks of the bridge's Mirror: the devices' topic
// ids both ways, and the republish of bridge/request/republish.
type Mirror interface {
	IDs() map[capability.Key]string
	KeyOf(ref string) (capability.Key, string, bool)
	Republish()
}

// Registry is what the page reads of the registry.
type Registry interface {
	Views() []registry.View
	Snapshot(k capability.Key) (registry.View, bool)
	Device(k capability.Key) (capability.Device, bool)
}

// Poller is what the page reads of the poller and asks of it.
type Poller interface {
	Stats() poller.Stats
	Intervals() map[capability.Key]poller.Interval
	ReadNow(sku, device string, done func(error)) error
	RefreshDevices(done func(error)) error
}

// Scheduler is what the page reads of the scheduler.
type Scheduler interface {
	Stats() scheduler.Stats
}

// Settings is what the page reads of the run-time settings and changes
// (its changes logged as made on the page).
type Settings interface {
	Devices() map[string]settings.Device
	DailyLimit() int
	SetDeviceOptionsFrom(from settings.Origin, id string, k capability.Key, raw json.RawMessage) (any, error)
}

// Parts are the running daemon's parts the page shows and acts on.
type Parts struct {
	Mirror    Mirror
	Registry  Registry
	Poller    Poller
	Scheduler Scheduler
	Settings  Settings
	// Limits are the scheduler's configuration: its buckets' capacities.
	Limits scheduler.Config
	// LANPoll is how often the LAN reads a device it reaches (LAN_POLL_INTERVAL;
	// 0: off); the page shows it as such a device's poll interval.
	LANPoll time.Duration
}

// Page is what the page keeps from the start, before the parts exist: requests
// by hour (kept across restarts), recent problems and last errors. It is fed
// by OnCounted, AddLog, Observer, CommandDone and ErrorAnswered; Handler makes
// the page once the parts exist.
type Page struct {
	now      func() time.Time
	history  *web.History
	problems *web.ProblemLog
	errs     *web.DeviceErrors
}

// New returns an empty record whose history starts now. now is the daemon's
// clock (nil: time.Now).
func New(now func() time.Time) *Page {
	if now == nil {
		now = time.Now
	}
	return &Page{now: now, history: web.NewHistory(now()), problems: web.NewProblemLog(0, now), errs: web.NewDeviceErrors(now)}
}

// OnCounted is scheduler.Config.OnCounted: the chart counts what the day's
// count counts.
func (p *Page) OnCounted(endpoint string, at time.Time) { p.history.Observe(endpoint, at) }

// AddLog keeps a log record published on bridge/logging among the recent
// problems, so that the page and the topic show the same records.
func (p *Page) AddLog(record []byte) { p.problems.AddJSON(record) }

// Observer is the page's hooks as the registry's observer: the read error
// that made a device unreachable is its last error.
func (p *Page) Observer() registry.Observer {
	return registry.Observer{Unreachable: func(v registry.View, err error) {
		if err != nil {
			p.errs.ReadFailed(v.Device.Key(), bridge.UserText(err))
		}
	}}
}

// CommandDone hears every command's outcome; an accepted command clears the
// error of its instance's last command.
func (p *Page) CommandDone(r scheduler.CommandResult) {
	if r.Err == nil {
		p.errs.CommandAccepted(capability.Key{SKU: r.Request.SKU, Device: r.Request.Device}, r.Request.Instance)
	}
}

// ErrorAnswered is bridge.Options.OnError: it records an answer on <id>/error,
// which stands until a good read or an accepted command of that instance.
func (p *Page) ErrorAnswered(k capability.Key, instance string, read bool, msg string) {
	if read {
		p.errs.ReadFailed(k, msg)
		return
	}
	p.errs.CommandFailed(k, instance, msg)
}

// Handler builds the page over the parts with the handler's options o; log
// takes the page's log as the "http" component and the actions' warnings.
func (p *Page) Handler(o web.Options, parts Parts, log zerolog.Logger) (*web.Handler, error) {
	o.Source = &source{Parts: parts, problems: p.problems, errs: p.errs, now: p.now}
	o.Actions = &actions{Parts: parts, errs: p.errs, log: log}
	o.History = p.history
	o.Now = p.now
	o.Log = log.With().Str("component", "http").Logger()
	return web.New(o)
}
