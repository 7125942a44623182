// Package poller decides when each device's state, the device list and the
// scenes are read, and writes what it reads into the registry (the single
// store of device state, which tells the MQTT side what changed).
//
// It never talks to the cloud itself: every request goes through the
// scheduler, which owns the request budgets and retries single requests.
// The poller owns timing: reads spread evenly over the interval, an interval
// planned for a daily limit, debounced confirming reads after commands, and
// back-off for offline and failing devices. It knows nothing of MQTT.
//
// Periodic reads and scene rounds are batched on a one-second grid (see
// readGrid): the devices due in the same second go out in one wake of the
// loop instead of one wake each. Waking up costs far more than the reads
// themselves, so this is what keeps an idle daemon cheap. Reads a user
// waits for (confirming reads after commands, reads and refreshes on
// request) are not batched.
package poller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
)

// Scheduler is what the poller needs of internal/scheduler. Each report is
// called exactly once, from another goroutine, unless the call returns an
// error: then the request was not accepted (overload, shutdown) and report
// is never called.
type Scheduler interface {
	State(sku, device string, p scheduler.Priority, report func(cloud.DeviceState, error)) error
	ListDevices(report func([]capability.Device, error)) error
	Scenes(sku, device string, report func(cloud.Scenes, error)) error
	DIYScenes(sku, device string, report func(cloud.Scenes, error)) error
}

// Store is what the poller needs of internal/registry: it writes every
// outcome there. Its methods are called from the poller's goroutine with the
// poller locked, so whatever the store calls in turn must never call the
// poller.
type Store interface {
	SetDevices(list []capability.Device) registry.ListChange
	Seq() uint64
	ApplyState(k capability.Key, st cloud.DeviceState, sentSeq uint64)
	MarkUnreachable(k capability.Key, err error)
	SetScenes(k capability.Key, light []capability.Option, lightOK bool, diy []capability.Option, diyOK bool)
}

// MinInterval is the shortest poll interval: the cloud allows 30 state
// reads a minute per device, one every 2 s. No device is ever read more
// often than this, whatever the reason for the read.
const MinInterval = 2 * time.Second

// Defaults of Config.
const (
	DefaultInterval                  = 60 * time.Second
	DefaultListInterval              = 10 * time.Minute
	DefaultSceneInterval             = 6 * time.Hour
	DefaultConfirmDelay              = 2 * time.Second
	DefaultOfflineMaxInterval        = 10 * time.Minute
	DefaultFailuresBeforeUnreachable = 3
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
	// Below MinInterval it is raised to MinInterval, with a warning. The
	// interval used is rounded up to whole seconds: periodic reads are
	// batched on a one-second grid, so that the devices due in the same
	// second cost the daemon one wake-up instead of one each.
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
	// OfflineMaxInterval caps the back-off of offline and failing devices.
	OfflineMaxInterval time.Duration
	// FailuresBeforeUnreachable is how many reads in a row must fail before
	// the device is reported unreachable.
	FailuresBeforeUnreachable int
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
	if c.OfflineMaxInterval <= 0 {
		c.OfflineMaxInterval = DefaultOfflineMaxInterval
	}
	if c.FailuresBeforeUnreachable <= 0 {
		c.FailuresBeforeUnreachable = DefaultFailuresBeforeUnreachable
	}
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
)

// Stats is a snapshot of the poller for metrics and the health endpoint.
type Stats struct {
	Devices    int           // devices in the list
	Interval   time.Duration // current poll interval of online devices
	Reads      uint64        // state reads completed since start, ok or not
	ReadErrors uint64        // of which failed
	Plan       Plan          // the arithmetic behind Interval
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
	// failedReads counts failed reads in a row: enough of them make the
	// device unreachable. backoffReads counts offline or failed reads in a
	// row, but not those the API key failed (the account's fault, not the
	// device's): each doubles the device's interval.
	failedReads     int
	backoffReads    int
	nextPoll        time.Time
	secondRead      time.Time // a new device's place in the spread of periodic reads, until its first read
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

	kick chan struct{}

	qmu     sync.Mutex
	queue   []func(now time.Time) // results from the scheduler, applied by the loop
	drained []func(now time.Time) // the last queue applied, reused; only the loop touches it
	qclosed bool

	mu            sync.Mutex
	running       bool
	stopped       bool
	interval      time.Duration
	plan          Plan
	devices       map[capability.Key]*device
	agenda        agenda    // the devices by when they next need the loop
	batch         []*device // the devices due in this step, reused
	nextList      time.Time
	listedOnce    bool // a list has arrived
	listInFlight  bool
	listFailures  int
	listWanted    bool
	listWaiters   []func(error)
	listInFlightW []func(error)

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
			Msg("poller: POLL_INTERVAL is below the cloud's limit of one state read per device every 2 s; using 2 s")
	}
	cfg = cfg.withDefaults()
	interval, plan := PlanInterval(0, cfg)
	return &Poller{s: s, store: store, cfg: cfg, log: log,
		kick:     make(chan struct{}, 1),
		interval: interval,
		plan:     plan, devices: make(map[capability.Key]*device),
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
	now := time.Now()
	p.progress = now
	p.nextList = now
	p.mu.Unlock()

	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			p.stop()
			return nil
		case <-p.kick:
		case <-timer.C:
		}
		wake := p.cycle(time.Now)
		timer.Reset(time.Until(wake))
	}
}

// cycle applies the scheduler's reports, sends what is due and runs the
// callbacks; it returns when it next has something to do. clock is
// time.Now but for benchmarks.
func (p *Poller) cycle(clock func() time.Time) time.Time {
	p.qmu.Lock()
	q := p.queue
	p.queue = p.drained[:0]
	p.qmu.Unlock()

	p.mu.Lock()
	now := clock()
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

func (p *Poller) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
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
	batch := p.due(now)
	for _, d := range batch {
		p.stepRead(now, d)
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

// stepRead sends the device's state read if one is due. The caller
// reschedules the device.
func (p *Poller) stepRead(now time.Time, d *device) {
	if due, ok := d.readDue(); !ok || due.After(now) {
		return
	}

	prio := scheduler.PriorityPoll
	if d.readNow || (!d.confirmDue.IsZero() && !d.confirmDue.After(now)) {
		prio = scheduler.PriorityConfirm
		d.confirmDue, d.confirmFirst = time.Time{}, time.Time{}
	}
	waiters := d.nextReadWaiters
	d.readNow, d.nextReadWaiters = false, nil
	sentSeq := p.store.Seq()
	err := p.s.State(d.dev.SKU, d.dev.Device, prio, func(st cloud.DeviceState, err error) {
		p.post(func(now time.Time) { p.onState(now, d, st, err) })
	})
	if err != nil {
		// Not accepted (overload, shutdown): the device is not at fault, so
		// no failure is counted; try again one interval later.
		p.log.Debug().Err(err).Stringer("device", d.dev).Msg("poller: state read not accepted")
		d.nextPoll = onGrid(d.periodBase(now).Add(p.interval))
		p.emitDone(waiters, fmt.Errorf("poller: read %s: %w", d.dev, err))
		return
	}
	d.inFlight = true
	d.lastSent = now
	d.sentSeq = sentSeq
	d.inFlightWaiters = waiters
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// onState applies a state read's outcome.
func (p *Poller) onState(now time.Time, d *device, st cloud.DeviceState, err error) {
	p.progress = now
	p.reads++
	d.inFlight = false
	waiters := d.inFlightWaiters
	d.inFlightWaiters = nil
	if p.devices[d.dev.Key()] != d {
		p.emitDone(waiters, fmt.Errorf("poller: read %s: %w", d.dev, ErrRemoved))
		return
	}
	if err != nil {
		p.readErrors++
		d.failedReads++
		// A refused API key is the account's problem, not the device's: the
		// scheduler already holds every request back for a while, and
		// backing the device off on top would delay its recovery by up to
		// the back-off after the key is accepted again.
		if !cloud.IsAuth(err) {
			d.backoffReads++
		}
		p.log.Debug().Err(err).Stringer("device", d.dev).Int("failures", d.failedReads).Msg("poller: state read failed")
		if d.failedReads >= p.cfg.FailuresBeforeUnreachable {
			p.store.MarkUnreachable(d.dev.Key(), err)
		}
	} else {
		d.failedReads = 0
		if online, known := st.Online(); online || !known {
			d.backoffReads = 0
		} else {
			d.backoffReads++ // offline: read it less often
		}
		p.store.ApplyState(d.dev.Key(), st, d.sentSeq)
	}
	// Every read, whatever its reason, puts the next periodic read one
	// interval later, on the grid: a confirming read takes the periodic
	// read's place. A new device's second read takes its place in the
	// spread instead.
	next := d.periodBase(d.lastSent).Add(p.deviceInterval(d))
	if !d.secondRead.IsZero() {
		next, d.secondRead = d.secondRead, time.Time{}
	}
	d.nextPoll = onGrid(latest(next, now.Add(MinInterval)))
	p.schedule(d)
	p.emitDone(waiters, wrapRead(d.dev, err))
}

func wrapRead(dev capability.Device, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("poller: read %s: %w", dev, err)
}

// deviceInterval is the device's current interval: the poll interval, or
// for a device offline or failing n reads in a row, the interval doubled
// n-1 times, up to OfflineMaxInterval (never below the poll interval).
func (p *Poller) deviceInterval(d *device) time.Duration {
	return scheduler.Backoff(p.interval, max(p.cfg.OfflineMaxInterval, p.interval), d.backoffReads)
}

// sendList asks for the device list.
func (p *Poller) sendList(now time.Time) {
	waiters := p.listWaiters
	p.listWaiters, p.listWanted = nil, false
	err := p.s.ListDevices(func(list []capability.Device, err error) {
		p.post(func(now time.Time) { p.onList(now, list, err) })
	})
	if err != nil {
		p.listInFlightW = waiters
		p.onList(now, nil, fmt.Errorf("poller: device list not accepted: %w", err))
		return
	}
	p.listInFlight = true
	p.listInFlightW = waiters
}

// onList applies a device list: new devices are scheduled, removed ones
// dropped, and the consumer told when anything changed.
func (p *Poller) onList(now time.Time, list []capability.Device, err error) {
	p.progress = now
	p.listInFlight = false
	waiters := p.listInFlightW
	p.listInFlightW = nil
	if err != nil {
		p.listFailures++
		retry := scheduler.Backoff(listRetry, p.cfg.ListInterval, p.listFailures)
		if cloud.IsAuth(err) {
			retry = max(retry, listAuthRetry)
		}
		p.nextList = now.Add(retry)
		ev := p.log.Warn()
		if p.listedOnce {
			ev = p.log.Info() // we have a list; it is only getting older
		}
		ev.Err(err).Int("failures", p.listFailures).Stringer("retry_in", retry).
			Msg("poller: reading the device list failed; check CLOUD_API_KEY if this says unauthorized")
		p.emitDone(waiters, fmt.Errorf("poller: refresh device list: %w", err))
		return
	}
	p.listFailures = 0
	p.nextList = now.Add(p.cfg.ListInterval)
	p.listedOnce = true

	ch := p.store.SetDevices(list)
	for _, dev := range ch.Changed {
		d := p.devices[dev.Key()]
		hadScenes := d.hasLight() || d.hasDIY()
		d.setDev(dev)
		if !hadScenes && (d.hasLight() || d.hasDIY()) {
			d.nextScenes = onGrid(now)
		}
		p.schedule(d) // it may have gained or lost its scenes
	}
	for _, dev := range ch.Removed {
		d := p.devices[dev.Key()]
		delete(p.devices, dev.Key())
		p.unschedule(d)
		p.emitDone(slices.Concat(d.nextReadWaiters, d.sceneWaiters), fmt.Errorf("poller: %s: %w", d.dev, ErrRemoved))
		d.nextReadWaiters, d.sceneWaiters = nil, nil
	}
	if len(ch.Added) > 0 || len(ch.Removed) > 0 || ch.First {
		p.replan(len(ch.All))
	}
	// New devices are read at once, as fast as the scheduler's budgets allow
	// (the state limit is per device, so a start is no 429), and their
	// scene lists fetched right after: Home Assistant shows every state
	// within seconds of a start whatever the interval. Their second reads
	// are spread evenly over the grid instants of the interval after the
	// next, in list order (so no device is read again sooner than one
	// interval), and the periodic reads keep that spread.
	base, slots := onGrid(now), max(int64(p.interval/readGrid), 1)
	for i, dev := range ch.Added {
		spread := base.Add(p.interval + time.Duration(int64(i)*slots/int64(len(ch.Added)))*readGrid)
		d := &device{nextPoll: base, secondRead: spread, nextScenes: base, slot: -1}
		d.setDev(dev)
		p.devices[dev.Key()] = d
		p.schedule(d)
	}
	for i, dev := range ch.All {
		p.devices[dev.Key()].order = i
	}
	if ch.Any() {
		p.log.Info().Int("devices", len(ch.All)).Int("added", len(ch.Added)).Int("removed", len(ch.Removed)).
			Msg("poller: device list changed")
	}
	p.emitDone(waiters, nil)
}

// replan sets the interval for n devices.
func (p *Poller) replan(n int) {
	interval, plan := PlanInterval(n, p.cfg)
	p.interval, p.plan = interval, plan
	switch {
	case plan.OverBudget:
		p.log.Error().EmbedObject(plan).
			Msg("poller: CLOUD_DAILY_LIMIT is too low for this many devices even at one read a day; raise it, lengthen the list and scene intervals or lower the command allowance")
	case plan.Limit > 0:
		p.log.Info().EmbedObject(plan).Msg("poller: poll interval planned for the daily limit")
	default:
		p.log.Info().Int("devices", n).Stringer("interval", interval).Msg("poller: poll interval")
	}
}

// stepScenes starts the device's scene round if one is due. The caller
// reschedules the device.
func (p *Poller) stepScenes(now time.Time, d *device) {
	if due, ok := d.scenesDue(); !ok || due.After(now) {
		return
	}
	light, diy := d.hasLight(), d.hasDIY()
	d.scenesWanted = false
	r := &sceneRound{waiters: d.sceneWaiters}
	d.sceneWaiters = nil
	// Both fetches count before either is sent, so that one refused at
	// once cannot finish the round before the other is sent.
	if light {
		r.pending++
	}
	if diy {
		r.pending++
	}
	d.round = r
	fetch := func(diyKind bool, call func(sku, device string, report func(cloud.Scenes, error)) error) {
		err := call(d.dev.SKU, d.dev.Device, func(sc cloud.Scenes, err error) {
			p.post(func(now time.Time) { p.onScenes(now, d, diyKind, sc, err) })
		})
		if err != nil {
			p.onScenes(now, d, diyKind, cloud.Scenes{}, fmt.Errorf("poller: scene fetch not accepted: %w", err))
		}
	}
	if light {
		fetch(false, p.s.Scenes)
	}
	if diy {
		fetch(true, p.s.DIYScenes)
	}
}

// onScenes records one fetch of a round and finishes the round after its last.
func (p *Poller) onScenes(now time.Time, d *device, diyKind bool, sc cloud.Scenes, err error) {
	p.progress = now
	r := d.round
	r.pending--
	switch {
	case err != nil:
		r.err = errors.Join(r.err, err)
	case diyKind:
		r.diy, r.diyOK = sc.Options(), true
	default:
		r.light, r.lightOK = sc.Options(), true
	}
	if r.pending > 0 {
		return
	}
	d.round = nil
	if p.devices[d.dev.Key()] != d {
		p.emitDone(r.waiters, fmt.Errorf("poller: scenes of %s: %w", d.dev, ErrRemoved))
		return
	}
	if r.err != nil {
		d.sceneFailures++
		retry := scheduler.Backoff(sceneRetry, p.cfg.SceneInterval, d.sceneFailures)
		d.nextScenes = onGrid(now.Add(retry))
		p.log.Info().Err(r.err).Stringer("device", d.dev).Stringer("retry_in", retry).Msg("poller: scene fetch failed")
	} else {
		d.sceneFailures = 0
		d.nextScenes = onGrid(now.Add(p.cfg.SceneInterval))
	}
	p.schedule(d)
	p.store.SetScenes(d.dev.Key(), r.light, r.lightOK, r.diy, r.diyOK)
	var roundErr error
	if r.err != nil {
		roundErr = fmt.Errorf("poller: scenes of %s: %w", d.dev, r.err)
	}
	p.emitDone(r.waiters, roundErr)
}

// lookup returns the device or an error naming it. Called with p.mu held.
func (p *Poller) lookup(sku, id string) (*device, error) {
	if p.stopped {
		return nil, ErrStopped
	}
	d := p.devices[capability.Key{SKU: sku, Device: id}]
	if d == nil {
		return nil, fmt.Errorf("%w %s/%s: not in the cloud's device list (refresh the device list if it was just added)", ErrUnknownDevice, sku, id)
	}
	return d, nil
}

// Confirm asks for a confirming read of the device ConfirmDelay after a
// successful command. A burst of Confirms yields one read, ConfirmDelay
// after the last of them but no later than 3×ConfirmDelay after the first.
// Unknown devices are ignored.
func (p *Poller) Confirm(sku, device string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, err := p.lookup(sku, device)
	if err != nil {
		return
	}
	now := time.Now()
	if d.confirmDue.IsZero() {
		d.confirmFirst = now
	}
	d.confirmDue = scheduler.Earliest(now.Add(p.cfg.ConfirmDelay), d.confirmFirst.Add(confirmWindow*p.cfg.ConfirmDelay))
	p.schedule(d)
	p.wake()
}

// ReadNow asks for a read of the device as soon as its per-device limit
// allows, at confirm priority. done (may be nil) is called once with the
// read's outcome, after the consumer has seen its changes, from the
// poller's goroutine; it must not block. An error return means the request
// was not accepted and done will not be called.
func (p *Poller) ReadNow(sku, device string, done func(error)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, err := p.lookup(sku, device)
	if err != nil {
		return err
	}
	d.readNow = true
	if done != nil {
		d.nextReadWaiters = append(d.nextReadWaiters, done)
	}
	p.schedule(d)
	p.wake()
	return nil
}

// RefreshDevices asks for the device list now. done (may be nil) is called
// once after it was read and applied (nil) or failed, like ReadNow's.
func (p *Poller) RefreshDevices(done func(error)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return ErrStopped
	}
	p.listWanted = true
	if done != nil {
		p.listWaiters = append(p.listWaiters, done)
	}
	p.wake()
	return nil
}

// RefreshScenes asks for the device's scenes and DIY scenes now. done (may
// be nil) is called once after the fetches, like ReadNow's.
func (p *Poller) RefreshScenes(sku, device string, done func(error)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, err := p.lookup(sku, device)
	if err != nil {
		return err
	}
	if !d.hasLight() && !d.hasDIY() {
		return fmt.Errorf("%w: %s lists neither %s nor %s", ErrNoScenes, d.dev, capability.InstanceLightScene, capability.InstanceDIYScene)
	}
	d.scenesWanted = true
	if done != nil {
		d.sceneWaiters = append(d.sceneWaiters, done)
	}
	p.schedule(d)
	p.wake()
	return nil
}

// Progress returns when the poller last made progress: a state read, list
// or scene fetch completed, ok or not (or Run started). A watchdog that
// sees it stand still for several intervals knows the loop is stuck.
func (p *Poller) Progress() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.progress
}

// Stats returns counts for metrics and the health endpoint.
func (p *Poller) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{Devices: len(p.devices), Interval: p.interval, Reads: p.reads, ReadErrors: p.readErrors, Plan: p.plan}
}
