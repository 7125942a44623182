// Package scheduler is the one owner of every cloud request budget: it
// decides when each control command and each read is sent so that the
// cloud's documented token buckets (per account and per device) are never
// exceeded, commands go before confirmation reads, polls and refreshes, and
// a busy device cannot starve the others.
//
// Submitting never blocks: Control, State, ListDevices, Scenes and DIYScenes
// queue the request (coalescing it with a queued one for the same target)
// and return; the answer is given once to the report function, from a
// scheduler goroutine. It retries 429s and transient failures itself.
//
// It is not a cache and does not decide what to read when: the poller and
// the bridge do. It knows nothing of MQTT.
package scheduler

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/cloud"
)

// Cloud is what the scheduler needs of the cloud: the methods of
// *cloud.Client. Errors are classified with cloud.IsRateLimited,
// cloud.IsAuth, cloud.IsRejected; any other error counts as transient.
type Cloud interface {
	ListDevices(ctx context.Context) ([]capability.Device, error)
	State(ctx context.Context, sku, device string) (cloud.DeviceState, error)
	Scenes(ctx context.Context, sku, device string) (cloud.Scenes, error)
	DIYScenes(ctx context.Context, sku, device string) (cloud.Scenes, error)
	Control(ctx context.Context, req cloud.ControlRequest) (cloud.ControlResult, error)
}

// Errors given by the submit methods or to report functions.
var (
	// ErrOverloaded: the queue is full; the request was not accepted.
	ErrOverloaded = errors.New("scheduler: overloaded, the queue is full because requests arrive faster than the cloud's rate limits allow; retry later, or poll less often")
	// ErrClosed: the scheduler has shut down (or is shutting down).
	ErrClosed = errors.New("scheduler: closed, the bridge is shutting down; the request was not accepted")
	// ErrNotSent: the scheduler shut down before the request could be sent
	// (or before a retry of it could be).
	ErrNotSent = errors.New("scheduler: not sent, the bridge shut down first")
	// ErrAuthHoldoff: the request was not sent because the cloud refused
	// the API key a moment ago; the report's error also wraps that refusal,
	// whose hint names the setting to check.
	ErrAuthHoldoff = errors.New("scheduler: not sent, the cloud refused the API key recently")
)

// CommandResult is the outcome of one Control submission. The submitter
// publishes an optimistic state on success and rolls it back on an error.
type CommandResult struct {
	Request  cloud.ControlRequest
	Result   cloud.ControlResult // the cloud's answer when Err is nil
	Err      error               // nil, a cloud error, capability.ErrSuperseded, ErrNotSent, ErrAuthHoldoff
	Attempts int                 // requests sent for it (0: never sent)
	Queued   time.Time           // when it was submitted
	Sent     time.Time           // when its last attempt was sent; zero if never
	Done     time.Time           // when this result was decided
}

type endpoint int

const (
	epDevices endpoint = iota
	epState
	epScenes
	epDIYScenes
	epControl
	numEndpoints
)

func (e endpoint) String() string {
	return [...]string{cloud.EndpointDevices, cloud.EndpointState, cloud.EndpointScenes, cloud.EndpointDIYScenes, cloud.EndpointControl}[e]
}

// device holds one device's buckets and queued work. The account is a
// device with an empty key (its epDevices bucket is the device-list budget).
type device struct {
	key      capability.Key
	buckets  [numEndpoints]*bucket
	busy     [numEndpoints]bool // a request of that endpoint is on the wire
	reads    [numEndpoints]*read
	commands []*command // queued, one per instance, in order of first arrival
	inRing   bool
}

func (d *device) idle(now time.Time) bool {
	if d.inRing || len(d.commands) > 0 {
		return false
	}
	for i := range numEndpoints {
		if d.busy[i] || d.reads[i] != nil || (d.buckets[i] != nil && !d.buckets[i].idle(now)) {
			return false
		}
	}
	return true
}

// attempt is the retry state shared by commands and reads.
type attempt struct {
	sent        int       // requests sent
	failures    int       // transient failures
	rateLimited int       // consecutive 429s
	notBefore   time.Time // no retry before
	giveUpAt    time.Time // commands: no retry after; zero: MaxAttempts decides
	lastSent    time.Time
	lastErr     error // of the last attempt, while it waits for a retry
}

type command struct {
	attempt
	done   func() // as read's
	req    cloud.ControlRequest
	report func(CommandResult)
	dev    *device
	queued time.Time
}

func (c *command) result(err error, now time.Time) CommandResult {
	return CommandResult{Request: c.req, Err: err, Attempts: c.sent, Queued: c.queued, Sent: c.lastSent, Done: now}
}

type read struct {
	attempt
	// done ends the work in hand of a read on the wire (clock.Busy).
	done     func()
	ep       endpoint
	dev      *device
	priority Priority
	waiters  []func(any, error)
	queued   time.Time
	elem     *list.Element
	// first: on the wire as one of the FirstInFlight first reads, not
	// in a steady read slot.
	first bool
}

// Scheduler sends every cloud request within the cloud's budgets. Create it
// with New, start it with Run.
type Scheduler struct {
	cloud Cloud
	cfg   Config
	log   zerolog.Logger
	wake  *clock.Wake
	wg    sync.WaitGroup // request goroutines

	mu                sync.Mutex
	last              time.Time // latest instant handed to a bucket; never goes back
	started           bool
	closed            bool
	devices           map[capability.Key]*device
	account           *device // device-list bucket and the device-list read
	control           *bucket // account control bucket
	ring              []*device
	readQueues        [PriorityRefresh + 1]list.List // queued reads by priority
	queuedCommands    int                            // queued commands
	queuedReadWaiters int                            // queued read waiters
	requestsInFlight  int                            // requests on the wire, commands and reads
	readsInFlight     int                            // reads in flight
	firstInFlight     int                            // first reads in flight beside them (not in requestsInFlight)
	outbox            []func()

	authUntil time.Time
	authErr   error
	// schemeSaid: a scheme mismatch of CLOUD_BASE_URL was logged since
	// the last success (it is logged once, with its fix).
	schemeSaid bool
	lastSweep  time.Time
	quota      quotaModel // quota.go

	counts counters
}

type counters struct {
	coalesced, coalescedReads, superseded, rateLimited, retries, failures uint64
	lastRateLimited                                                       time.Time
	requests                                                              [numEndpoints]uint64
	day                                                                   int // yyyymmdd of requestsToday
	requestsToday                                                         int
	retryAfterCapped                                                      bool // logged once
	cloud                                                                 cloudHealth
}

// New returns a scheduler for c. Config fields left zero (or unusable: see
// Config.Validate) take the spec's defaults. Nothing is sent before Run.
func New(c Cloud, cfg Config, log zerolog.Logger) *Scheduler {
	if err := cfg.Validate(); err != nil {
		log.Warn().Err(err).Msg("unusable settings replaced by defaults")
	}
	cfg = cfg.withDefaults()
	s := &Scheduler{
		cloud:   c,
		cfg:     cfg,
		log:     log,
		wake:    clock.NewWake(cfg.Clock, "scheduler: woken"),
		devices: make(map[capability.Key]*device),
		account: &device{},
		control: newBucket(cfg.margin(cfg.ControlAccount)),
	}
	for i := range s.readQueues {
		s.readQueues[i].Init()
	}
	s.counts.day, s.counts.requestsToday = cfg.RequestsDay, max(cfg.RequestsToday, 0)
	return s
}

// signal wakes the loop; never blocks.
func (s *Scheduler) signal() { s.wake.Notify() }

// nowLocked is the clock's time, never earlier than an instant already
// used.
func (s *Scheduler) nowLocked() time.Time {
	now := s.cfg.Clock.Now()
	if now.Before(s.last) {
		return s.last
	}
	s.last = now
	return now
}

func (s *Scheduler) limitFor(ep endpoint) Limit {
	switch ep {
	case epDevices:
		return s.cfg.margin(s.cfg.DeviceList)
	case epState:
		return s.cfg.margin(s.cfg.State)
	case epScenes:
		return s.cfg.margin(s.cfg.Scenes)
	case epDIYScenes:
		return s.cfg.margin(s.cfg.DIYScenes)
	}
	return s.cfg.margin(s.cfg.ControlDevice)
}

func (s *Scheduler) bucketLocked(d *device, ep endpoint) *bucket {
	if d.buckets[ep] == nil {
		d.buckets[ep] = newBucket(s.limitFor(ep))
	}
	return d.buckets[ep]
}

func (s *Scheduler) deviceLocked(sku, dev string) *device {
	k := capability.Key{SKU: sku, Device: dev}
	d := s.devices[k]
	if d == nil {
		d = &device{key: k}
		s.devices[k] = d
	}
	return d
}

// Control queues a control command. A command for a (device, instance)
// that already has one queued replaces it in place (the older one is
// reported with capability.ErrSuperseded); a command already sent is never
// replaced, the newer one is sent after it. Commands to one device are sent
// one at a time, in the order their instances first arrived.
func (s *Scheduler) Control(req cloud.ControlRequest, report func(CommandResult)) error {
	if req.SKU == "" || req.Device == "" || req.Instance == "" {
		return fmt.Errorf("scheduler: control request %s/%s %q: sku, device and instance must all be set", req.SKU, req.Device, req.Instance)
	}
	if report == nil {
		report = func(CommandResult) {}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	now := s.nowLocked()
	d := s.deviceLocked(req.SKU, req.Device)
	for _, c := range d.commands {
		if c.req.Instance != req.Instance {
			continue
		}
		old := c.result(capability.ErrSuperseded, now)
		oldReport := c.report
		s.outbox = append(s.outbox, func() { oldReport(old) })
		// Keep the position and the back-off (the cloud's Retry-After still
		// holds); the new command has not been sent yet.
		c.req, c.report, c.queued = req, report, now
		c.sent, c.failures, c.lastSent = 0, 0, time.Time{}
		c.giveUpAt = now.Add(CommandMaxAge)
		s.counts.coalesced++
		s.counts.superseded++
		s.signal()
		return nil
	}
	if s.queuedCommands >= s.cfg.MaxQueuedCommands {
		return fmt.Errorf("control %s/%s %s: %w", req.SKU, req.Device, req.Instance, ErrOverloaded)
	}
	c := &command{req: req, report: report, dev: d, queued: now}
	c.giveUpAt = now.Add(CommandMaxAge)
	d.commands = append(d.commands, c)
	s.queuedCommands++
	if !d.inRing {
		d.inRing = true
		s.ring = append(s.ring, d)
	}
	s.signal()
	return nil
}

// State queues a state read of a device at priority p (PriorityConfirm
// after a command, PriorityPoll for periodic reads). A read of the device
// already queued is shared: every report gets the one answer, and the read
// takes the higher of the priorities.
func (s *Scheduler) State(sku, device string, p Priority, report func(cloud.DeviceState, error)) error {
	if sku == "" || device == "" {
		return fmt.Errorf("scheduler: state read %q/%q: sku and device must both be set", sku, device)
	}
	if p < PriorityCommand || p > PriorityRefresh {
		return fmt.Errorf("scheduler: state read %s/%s: unknown priority %d; use one of the Priority constants", sku, device, int(p))
	}
	w := func(v any, err error) {
		st, _ := v.(cloud.DeviceState)
		if report != nil {
			report(st, err)
		}
	}
	return s.submitRead(epState, sku, device, p, w)
}

// ListDevices queues a read of the account's device list (refresh priority).
func (s *Scheduler) ListDevices(report func([]capability.Device, error)) error {
	w := func(v any, err error) {
		ds, _ := v.([]capability.Device)
		if report != nil {
			report(ds, err)
		}
	}
	return s.submitRead(epDevices, "", "", PriorityRefresh, w)
}

// Scenes queues a read of a device's light scenes (refresh priority).
func (s *Scheduler) Scenes(sku, device string, report func(cloud.Scenes, error)) error {
	return s.submitScenes(epScenes, sku, device, report)
}

// DIYScenes queues a read of a device's DIY scenes (refresh priority).
func (s *Scheduler) DIYScenes(sku, device string, report func(cloud.Scenes, error)) error {
	return s.submitScenes(epDIYScenes, sku, device, report)
}

func (s *Scheduler) submitScenes(ep endpoint, sku, device string, report func(cloud.Scenes, error)) error {
	if sku == "" || device == "" {
		return fmt.Errorf("scheduler: %s read %q/%q: sku and device must both be set", ep, sku, device)
	}
	w := func(v any, err error) {
		sc, _ := v.(cloud.Scenes)
		if report != nil {
			report(sc, err)
		}
	}
	return s.submitRead(ep, sku, device, PriorityRefresh, w)
}

func (s *Scheduler) submitRead(ep endpoint, sku, dev string, p Priority, w func(any, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.queuedReadWaiters >= s.cfg.MaxQueuedReads {
		return fmt.Errorf("%s read %s/%s: %w", ep, sku, dev, ErrOverloaded)
	}
	now := s.nowLocked()
	d := s.account
	if ep != epDevices {
		d = s.deviceLocked(sku, dev)
	}
	s.queuedReadWaiters++
	if r := d.reads[ep]; r != nil {
		r.waiters = append(r.waiters, w)
		s.counts.coalesced++
		s.counts.coalescedReads++
		if p < r.priority {
			s.readQueues[r.priority].Remove(r.elem)
			r.priority = p
			r.elem = s.readQueues[p].PushBack(r)
		}
		s.signal()
		return nil
	}
	r := &read{ep: ep, dev: d, priority: p, waiters: []func(any, error){w}, queued: now}
	d.reads[ep] = r
	r.elem = s.readQueues[p].PushBack(r)
	s.signal()
	return nil
}

// Tokens are the tokens left in the scheduler's model of the cloud's
// buckets, not counting those promised to requests on the wire. The Min
// fields are the emptiest bucket of that class among all devices (a device
// never used has a full bucket).
type Tokens struct {
	DeviceList       float64
	ControlAccount   float64
	ControlDeviceMin float64
	StateMin         float64
	ScenesMin        float64
	DIYScenesMin     float64
}

// Stats is a snapshot of the scheduler for metrics and logs.
type Stats struct {
	// Queued counts the requests waiting, by priority (commands under
	// PriorityCommand; a coalesced read counts once).
	Queued         map[Priority]int
	QueuedCommands int
	QueuedReads    int // waiters, counting each coalesced report
	// InFlight counts the requests on the wire; InFlightFirst of those are
	// first reads beside the steady MaxInFlight (Config.FirstInFlight).
	InFlight         int
	InFlightFirst    int
	InFlightCommands int
	// Devices is the number of devices whose buckets are tracked; devices
	// idle with full buckets are forgotten (every minute), so it stays near
	// the number of devices recently used.
	Devices   int
	Coalesced uint64 // submissions merged into a queued request
	// CoalescedReads are the reads of Coalesced (the rest are commands
	// that replaced a queued one).
	CoalescedReads  uint64
	Superseded      uint64 // commands replaced by a newer one
	RateLimited     uint64 // 429 answers
	LastRateLimited time.Time
	Retries         uint64 // requests sent again after a 429 or a transient error
	Failures        uint64 // requests whose failure was reported
	// Requests counts requests that reached the cloud (cloud.Reached: an
	// answer came back, or no answer came in time after the request was
	// written), by endpoint name (Endpoint*).
	Requests map[string]uint64
	// RequestsToday counts the requests that reached the cloud since local
	// midnight (the cloud has a daily limit; the spec does not say how
	// large). Connections refused, unknown hosts, failed TLS handshakes
	// and requests held back are not counted.
	RequestsToday int
	// Day is the day RequestsToday counts, yyyymmdd in local time.
	Day    int
	Tokens Tokens
	// AuthHoldoffUntil is set while requests are failed without being sent
	// because the cloud refused the API key.
	AuthHoldoffUntil time.Time
	// Cloud says whether the cloud answers.
	Cloud CloudHealth
	// Quota is what the cloud's answers said of the account's quota.
	Quota Quota
}

// Stats returns a snapshot of queues, counters and buckets.
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowLocked()
	st := Stats{
		Queued:           make(map[Priority]int, len(s.readQueues)),
		QueuedCommands:   s.queuedCommands,
		QueuedReads:      s.queuedReadWaiters,
		InFlight:         s.requestsInFlight + s.firstInFlight,
		InFlightFirst:    s.firstInFlight,
		InFlightCommands: s.requestsInFlight - s.readsInFlight,
		Devices:          len(s.devices),
		Coalesced:        s.counts.coalesced,
		CoalescedReads:   s.counts.coalescedReads,
		Cloud:            s.counts.cloud.snapshot(),
		Superseded:       s.counts.superseded,
		RateLimited:      s.counts.rateLimited,
		LastRateLimited:  s.counts.lastRateLimited,
		Retries:          s.counts.retries,
		Failures:         s.counts.failures,
		Requests:         make(map[string]uint64, numEndpoints),
	}
	for p := range s.readQueues {
		st.Queued[Priority(p)] = s.readQueues[p].Len()
	}
	st.Queued[PriorityCommand] += s.queuedCommands
	for ep := range numEndpoints {
		st.Requests[ep.String()] = s.counts.requests[ep]
	}
	st.Day = dayOf(now)
	if s.counts.day == st.Day {
		st.RequestsToday = s.counts.requestsToday
	}
	if now.Before(s.authUntil) {
		st.AuthHoldoffUntil = s.authUntil
	}
	st.Quota = s.quotaLocked(now)
	st.Tokens.ControlAccount = s.control.left(now)
	st.Tokens.DeviceList = s.tokensLocked(s.account, epDevices, now)
	// The emptiest per-device bucket of each row, in one pass over the
	// devices (the stats are looked at every few seconds, and a pass costs
	// a map walk of up to every device).
	perDevice := [...]endpoint{epControl, epState, epScenes, epDIYScenes}
	var least [len(perDevice)]float64
	for i, ep := range perDevice {
		least[i] = float64(s.limitFor(ep).Burst)
	}
	for _, d := range s.devices {
		for i, ep := range perDevice {
			least[i] = min(least[i], s.tokensLocked(d, ep, now))
		}
	}
	st.Tokens.ControlDeviceMin = least[0]
	st.Tokens.StateMin = least[1]
	st.Tokens.ScenesMin = least[2]
	st.Tokens.DIYScenesMin = least[3]
	return st
}

func (s *Scheduler) tokensLocked(d *device, ep endpoint, now time.Time) float64 {
	if b := d.buckets[ep]; b != nil {
		return b.left(now)
	}
	return float64(s.limitFor(ep).Burst)
}

func dayOf(t time.Time) int {
	y, m, d := t.Date()
	return y*10000 + int(m)*100 + d
}
