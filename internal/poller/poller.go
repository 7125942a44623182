// Package poller decides when each device's state, the device list and the
// scenes are read, and writes what it reads into the registry (the single
// store of device state, which tells the MQTT side what changed).
//
// It never talks to the cloud itself: every request goes through the
// scheduler, which owns the request budgets and retries single requests.
// The poller owns timing: reads spread evenly over the interval, an interval
// planned for a daily limit, those reads shared by how often each device
// changes (share.go, activity.go), debounced confirming reads after
// commands, and back-off for offline and failing devices. It knows nothing
// of MQTT.
//
// Periodic reads and scene rounds are batched on a grid (grid.go), because
// waking up costs an idle daemon more than the reads; reads a user waits
// for are not batched.
package poller

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/statedir"
)

// Scheduler is what the poller needs of internal/scheduler. Each report is
// called exactly once, from another goroutine, unless the call returns an
// error: then the request was not accepted (overload, shutdown) and report
// is never called.
type Scheduler interface {
	State(sku, device string, p scheduler.Priority, report func(cloud.DeviceState, error)) error
	// Held says whether the device's state reads wait for a hold-off of
	// the bridge's (a refused key, a 429's Retry-After), and until when.
	Held(sku, device string) (scheduler.Hold, bool)
	ListDevices(report func([]capability.Device, error)) error
	Scenes(sku, device string, report func(cloud.Scenes, error)) error
	DIYScenes(sku, device string, report func(cloud.Scenes, error)) error
	// Quota is what the cloud's answers said of the account's quota: the
	// periodic reads and scene rounds are paced within it (quota.go).
	Quota() scheduler.Quota
}

// Store is what the poller needs of internal/registry: it writes every
// outcome there. Its methods are called from the poller's goroutine with the
// poller locked, so whatever the store calls in turn must never call the
// poller.
type Store interface {
	SetDevices(list []capability.Device) registry.ListChange
	Seq() uint64
	ApplyState(k capability.Key, st registry.State, sentSeq uint64)
	MarkUnreachable(k capability.Key, err error)
	MarkStateless(k capability.Key)
	SetScenes(k capability.Key, light []capability.Option, lightOK bool, diy []capability.Option, diyOK bool)
}

// MinInterval is the shortest poll interval: the cloud allows 30 state
// reads a minute per device, one every 2 s. No device is ever read more
// often than this, whatever the reason for the read.
const MinInterval = 2 * time.Second

// Defaults of Config.
const (
	DefaultInterval      = 60 * time.Second
	DefaultListInterval  = 10 * time.Minute
	DefaultSceneInterval = 6 * time.Hour
	DefaultConfirmDelay  = 2 * time.Second
)

// Policies, not settings: tests wait them out by jumping Config.Clock.
const (
	// OfflineMaxInterval caps the back-off of offline and failing devices.
	OfflineMaxInterval = 10 * time.Minute
	// FailuresBeforeUnreachable is how many reads in a row must fail
	// before the device is reported unreachable.
	FailuresBeforeUnreachable = 3
	// StatelessRecheck is how long a device whose state reads the cloud
	// refuses ("devices not exist": a group made in the vendor's app) goes
	// unread: a device-list refresh at least this long after its last
	// read reads it once more (a read on request always does).
	StatelessRecheck = 30 * time.Minute
)

// confirmWindow bounds the debounce of confirming reads: a burst of commands
// is confirmed no later than confirmWindow × ConfirmDelay after its first.
const confirmWindow = 3

// First retry of a failed device list and of failed scene fetches; each
// further failure doubles it, up to ListInterval and SceneInterval.
const (
	listRetry     = 10 * time.Second
	listAuthRetry = time.Minute // a wrong API key stays wrong: no faster than this
	sceneRetry    = time.Minute
)

// Config tunes the poller. Zero fields take the defaults above.
type Config struct {
	// Interval is how often each online device is read (POLL_INTERVAL).
	// Below MinInterval it is raised to MinInterval, with a warning; it is
	// rounded up to whole seconds, the grid periodic reads are batched on.
	Interval time.Duration
	// DailyLimit is the account's request limit per day (CLOUD_DAILY_LIMIT),
	// 0 for none. With a limit the interval is planned by PlanInterval.
	DailyLimit int
	// CommandsPerDay is how many commands a day the DailyLimit plan keeps
	// room for, each with its confirming read. Default DailyLimit/20, which
	// with their reads is 10 % of the limit.
	CommandsPerDay int
	// ListInterval is how often the device list is refreshed.
	ListInterval time.Duration
	// SceneInterval is how often each device's scenes are refreshed.
	SceneInterval time.Duration
	// ConfirmDelay is how long after the last of a burst of commands the
	// confirming read is made.
	ConfirmDelay time.Duration
	// Grid is the grid of periodic reads and scene rounds; 0 (the
	// default) lets the poller choose it from the interval and the number
	// of devices (periodicGrid). Tests of other timings fix it at 1 s.
	Grid time.Duration
	// OwnIntervals are the intervals of the devices with one of their own
	// (SetDeviceOptions): the plan counts their reads as a fixed cost and
	// spreads the rest over the other devices. Set by the poller.
	OwnIntervals []time.Duration
	// Clock is the poller's time: when reads are due and the loop's
	// timer (nil: clock.Real). Tests of the whole bridge jump it
	// (clocktest) over an interval instead of shortening it.
	Clock clock.Clock

	// QuietFactor (POLL_QUIET_FACTOR) above 1 shares the periodic reads of
	// the devices at the common interval by how often each changes
	// (share.go): a quiet device is read at least every QuietFactor ×
	// the interval. 0 and 1 read every device at the interval.
	QuietFactor int
	// StateRow is the spacing of the per-device state-read row
	// (LIMIT_STATE_PER_MINUTE: a minute over it); a share reads a device at
	// most half as often. 0: MinInterval.
	StateRow time.Duration
	// Activity is what the poller learns of how often each device changes;
	// the daemon makes it before the registry, whose observer it is. nil:
	// the poller makes its own (it then learns from its reads alone).
	Activity *Activity
	// StateDir keeps what was learned across restarts (activity.json);
	// "" for none.
	StateDir statedir.Dir
	// OnInterval, when set, hears of a device's planned interval and why
	// when the reason changes or the interval moves by a quarter: at once
	// after a change of the plan, else at most every 5 min (tellEvery;
	// bridge/devices). It is called from the poller's goroutine, unlocked;
	// it must not block nor call the poller.
	OnInterval func(k capability.Key, iv Interval)
}

func (c Config) withDefaults() Config {
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	c.Interval = max(c.Interval, MinInterval)
	c.DailyLimit = max(c.DailyLimit, 0)
	if c.ListInterval <= 0 {
		c.ListInterval = DefaultListInterval
	}
	if c.SceneInterval <= 0 {
		c.SceneInterval = DefaultSceneInterval
	}
	if c.ConfirmDelay <= 0 {
		c.ConfirmDelay = DefaultConfirmDelay
	}
	c.Clock = clock.Or(c.Clock)
	return c
}

func (c Config) commandsPerDay() int {
	if c.CommandsPerDay > 0 {
		return c.CommandsPerDay
	}
	return c.DailyLimit / 20
}

// Errors returned by the request methods; test with errors.Is.
var (
	ErrStopped       = errors.New("poller: not running: the bridge is shutting down")
	ErrUnknownDevice = errors.New("poller: unknown device")
	ErrNoScenes      = errors.New("poller: device has no scene capabilities")
	ErrRemoved       = errors.New("poller: device was removed from the device list")
	ErrDisabled      = errors.New("poller: device is disabled; enable it with bridge/request/device/options")
)

// Stats is a snapshot of the poller for metrics and the health endpoint.
type Stats struct {
	Devices  int           // devices in the list
	Interval time.Duration // current poll interval of online devices
	// Grid is the grid of the periodic reads (periodicGrid): they go out
	// in batches at its instants, whole multiples of it since the zero
	// time, so work timed to its instants shares their wake-ups.
	Grid       time.Duration
	Reads      uint64 // state reads completed since start, ok or not
	ReadErrors uint64 // of which failed
	Plan       Plan   // the arithmetic behind Interval
	// ListFailures counts failed device-list reads in a row.
	ListFailures int
	// QuotaWait is set while the periodic reads wait for a window of the
	// account's quota to renew (what is left is the reserve).
	QuotaWait time.Time
}

// device is everything the poller knows and plans about one device.
// Guarded by Poller.mu.
type device struct {
	dev capability.Device
	// Whether dev has the light-scene and DIY-scene capabilities, cached
	// by setDev.
	withLight, withDIY bool

	order int       // index in Poller.list: same-instant reads go out in list order
	slot  int       // index in Poller.agenda, -1 when not in it
	dueAt time.Time // when it next needs the loop: its key in Poller.agenda
	// own is the device's own poll interval (0: the poller's), disabled a
	// device the user asked not to read; both set with SetDeviceOptions.
	own      time.Duration
	disabled bool
	// share is its interval when the reads are shared by how often the
	// devices change (share.go; 0: the poller's); told is what
	// OnInterval last heard of it.
	share time.Duration
	// placed is the interval its next periodic read was placed at: a
	// share is compared with it, so that shares drifting a little at each
	// look move the read once they drifted far enough in all.
	placed time.Duration
	told   Interval
	// local: reached over the LAN (local.go), read by the cloud only for
	// what the LAN lacks.
	local localReads
	// stateless: the cloud refuses its state reads ("devices not exist":
	// an app-made group); it is not read but on request or after a list
	// refresh (StatelessRecheck).
	stateless bool
	// heldUntil: a read on request waits for the bridge's hold-off.
	heldUntil time.Time
	// pacedUntil, scenesPacedUntil: the periodic read, the scene round
	// wait for the quota (quota.go).
	pacedUntil, scenesPacedUntil time.Time

	// failedReads counts failed reads in a row: enough of them make the
	// device unreachable. backoffReads counts offline or failed reads in a
	// row, but not those the API key failed (the account's fault, not the
	// device's): each doubles the device's interval.
	failedReads     int
	backoffReads    int
	nextPoll        time.Time
	secondRead      time.Time // a new device's place in the spread of periodic reads, until its first read
	inSpread        bool      // its next periodic read is its place in the spread: the shares leave it there
	lastSent        time.Time
	sentSeq         uint64 // the store's Seq when the read in flight was sent
	inFlight        bool
	readNow         bool
	confirmFirst    time.Time     // first Confirm of the pending burst
	confirmDue      time.Time     // zero: no confirm pending
	nextReadWaiters []func(error) // ReadNow callers of the read not yet sent
	inFlightWaiters []func(error) // ReadNow callers of the read in flight

	scenesWanted  bool // RefreshScenes asked for a round
	nextScenes    time.Time
	round         *sceneRound // the round in flight, nil when none
	sceneFailures int
	sceneWaiters  []func(error) // RefreshScenes callers of the next round
}

// sceneRound is a device's scene round in flight: its fetches' results
// until the last of them reports. A device has one every few hours, for
// moments, so it is made per round rather than kept in every device.
type sceneRound struct {
	pending        int // fetches not yet reported
	light, diy     []capability.Option
	lightOK, diyOK bool
	err            error
	waiters        []func(error) // RefreshScenes callers of this round
}

func (d *device) hasLight() bool { return d.withLight }
func (d *device) hasDIY() bool   { return d.withDIY }

// setDev sets the device's definition and what is cached of it.
func (d *device) setDev(dev capability.Device) {
	d.dev = dev
	_, d.withLight = dev.Capability(capability.InstanceLightScene)
	_, d.withDIY = dev.Capability(capability.InstanceDIYScene)
}

// Poller reads devices on a schedule through a Scheduler and writes what it
// reads into a Store. Create it with New and start it with Run; its methods
// are safe for concurrent use.
type Poller struct {
	s     Scheduler
	store Store
	cfg   Config
	log   zerolog.Logger

	kick *clock.Wake

	qmu     sync.Mutex
	queue   []func(now time.Time) // results from the scheduler, applied by the loop
	drained []func(now time.Time) // the last queue applied, reused; only the loop touches it
	qclosed bool

	mu            sync.Mutex
	running       bool
	stopped       bool
	interval      time.Duration
	grid          time.Duration // of periodic reads and scene rounds (periodicGrid)
	plan          Plan
	planLogged    planLine // what the last "poll interval" line said
	pace          pacer    // quota.go
	demand        float64  // paced requests a second the plan makes without the quota
	readRate      float64  // periodic reads a second the plan makes
	paced         int      // devices read at the common interval
	devices       map[capability.Key]*device
	options       map[capability.Key]DeviceOptions // by SetDeviceOptions, also for devices not listed yet
	locals        map[capability.Key]localReads    // by SetLocal, also for devices not listed yet
	agenda        agenda                           // the devices by when they next need the loop
	batch         []*device                        // the devices due in this step, reused
	nextList      time.Time
	listedOnce    bool // a list has arrived
	listInFlight  bool
	listFailures  int
	listWanted    bool
	listWaiters   []func(error)
	listInFlightW []func(error)

	// What is learned of the devices' changes (activity.go) and the
	// shares it gives (share.go): worked out again when the plan changed
	// (sharesStale) or, while reads teach something (learning), at most
	// every reshareEvery; told (OnInterval) at most every tellEvery but
	// after a change of the plan; saved every activitySaveEvery.
	act         *Activity
	sharesStale bool
	learning    bool
	nextShare   time.Time
	nextTell    time.Time
	nextSave    time.Time
	cands       []*device // reused by reshare
	// owed is the reads the shared devices' reads owe the plain plan
	// (share.go): it accrues at owedRate, the plain plan's reads a second
	// for them, from owedAt on; each read sent spends one. It is held
	// within one read of each device either way (owedCap), so that a
	// start's first reads, a hold or an outage never turn into a burst.
	owed, owedRate, owedCap float64
	owedAt                  time.Time

	progress   time.Time
	reads      uint64
	readErrors uint64
	effects    []func() // callbacks, run by the loop after unlocking
}

// New returns a poller that asks s for every request and writes what it
// reads into store. Nothing happens before Run.
func New(s Scheduler, store Store, cfg Config, log zerolog.Logger) *Poller {
	if cfg.Interval > 0 && cfg.Interval < MinInterval {
		log.Warn().Stringer("configured", cfg.Interval).Stringer("used", MinInterval).
			Msg("POLL_INTERVAL is below the cloud's limit of one state read per device every 2 s; using 2 s")
	}
	cfg = cfg.withDefaults()
	interval, plan := PlanInterval(0, cfg)
	act := cfg.Activity
	if act == nil {
		act = NewActivity(cfg.Clock)
	}
	restoreActivity(act, cfg.StateDir, cfg.Clock.Now(), log)
	return &Poller{s: s, store: store, cfg: cfg, log: log,
		kick:     clock.NewWake(cfg.Clock, "poller: woken"),
		interval: interval, grid: readGrid,
		plan: plan, pace: newPacer(), devices: make(map[capability.Key]*device),
		options: make(map[capability.Key]DeviceOptions), act: act,
	}
}

// Run reads the device list and then the devices until ctx ends. It
// returns nil once ctx is done and the poller has stopped; requests still
// waiting get ErrStopped. Reports of requests in flight that arrive later
// are dropped. Run may be called once.
func (p *Poller) Run(ctx context.Context) error {
	p.mu.Lock()
	if p.running || p.stopped {
		p.mu.Unlock()
		return errors.New("poller: Run called twice; create a new poller instead")
	}
	p.running = true
	clk := p.cfg.Clock // read under the lock: SetConfig replaces p.cfg
	now := clk.Now()
	p.progress = now
	p.nextList = now
	p.nextSave = now.Add(activitySaveEvery)
	p.mu.Unlock()

	timer := clk.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			p.stop()
			return nil
		case <-p.kick.C():
		case <-timer.C():
		}
		woken := p.kick.Take()
		timer.ResetAt(p.cycle())
		woken()
	}
}

// cycle applies the scheduler's reports, sends what is due and runs the
// callbacks; it returns when it next has something to do.
func (p *Poller) cycle() time.Time {
	p.qmu.Lock()
	q := p.queue
	p.queue = p.drained[:0]
	p.qmu.Unlock()

	p.mu.Lock()
	now := p.cfg.Clock.Now()
	p.lookQuota(now)
	for _, apply := range q {
		apply(now)
	}
	clear(q) // keeps no report alive
	p.drained = q
	wake := p.step(now)
	effects := p.effects
	p.effects = nil
	p.mu.Unlock()

	for _, f := range effects {
		f()
	}
	return wake
}

// stop fails every waiting request and drops later reports.
func (p *Poller) stop() {
	p.qmu.Lock()
	p.qclosed = true
	p.queue = nil
	p.qmu.Unlock()

	p.mu.Lock()
	p.stopped = true
	saveActivity(p.act, p.cfg.StateDir, p.cfg.Clock.Now(), p.log)
	var waiters []func(error)
	waiters = append(waiters, p.listWaiters...)
	waiters = append(waiters, p.listInFlightW...)
	p.listWaiters, p.listInFlightW = nil, nil
	for _, d := range p.devices {
		waiters = append(waiters, d.nextReadWaiters...)
		waiters = append(waiters, d.inFlightWaiters...)
		waiters = append(waiters, d.sceneWaiters...)
		d.nextReadWaiters, d.inFlightWaiters, d.sceneWaiters = nil, nil, nil
		if d.round != nil {
			waiters = append(waiters, d.round.waiters...)
			d.round.waiters = nil
		}
	}
	p.mu.Unlock()
	for _, w := range waiters {
		w(ErrStopped)
	}
}

// post hands a scheduler report to the loop; it never blocks.
func (p *Poller) post(apply func(now time.Time)) {
	p.qmu.Lock()
	if !p.qclosed {
		p.queue = append(p.queue, apply)
	}
	p.qmu.Unlock()
	p.wake()
}

func (p *Poller) wake() { p.kick.Notify() }

// answered records progress when a request's outcome reached the cloud.
func (p *Poller) answered(now time.Time, err error) {
	if cloud.Reached(err) {
		p.progress = now
	}
}

// emit queues a callback for after the lock is released.
func (p *Poller) emit(f func()) { p.effects = append(p.effects, f) }

func (p *Poller) emitDone(waiters []func(error), err error) {
	for _, w := range waiters {
		p.emit(func() { w(err) })
	}
}

// step sends every request that is due and returns the earliest instant
// something else falls due. Called with p.mu held.
func (p *Poller) step(now time.Time) time.Time {
	if !p.listInFlight && (p.listWanted || !now.Before(p.nextList)) {
		p.sendList(now)
	}
	p.learnt(now)
	batch := p.due(now)
	// Reads before scene rounds: within a quota, what is left goes to the
	// reads first.
	for _, d := range batch {
		p.stepRead(now, d)
	}
	for _, d := range batch {
		p.stepScenes(now, d)
		p.schedule(d)
	}
	clear(batch) // keeps no removed device alive
	wake := now.Add(day)
	if !p.listInFlight {
		wake = scheduler.Earliest(wake, p.nextList)
	}
	if len(p.agenda) > 0 {
		wake = scheduler.Earliest(wake, p.agenda[0].dueAt)
	}
	return wake
}
