package scheduler

import (
	"errors"
	"fmt"
	"math"
	"time"

	"golang.org/x/time/rate"

	"cloud2mqtt/internal/clock"
)

// Limit is one token bucket: Rate tokens per second refill, at most Burst
// stored. Every request of the bucket's endpoint takes one token.
type Limit struct {
	Rate  rate.Limit
	Burst int
}

// PerMinute builds a Limit of n requests per minute with the given burst.
func PerMinute(n float64, burst int) Limit {
	return Limit{Rate: rate.Limit(n / 60), Burst: burst}
}

// PerSecond builds a Limit of n requests per second with the given burst.
func PerSecond(n float64, burst int) Limit {
	return Limit{Rate: rate.Limit(n), Burst: burst}
}

func (l Limit) valid() bool {
	return l.Rate > 0 && l.Burst >= 1 && !math.IsInf(float64(l.Rate), 0) && !math.IsNaN(float64(l.Rate))
}

// Config holds the scheduler's budgets and policies. The zero value of any
// field means its default; the defaults are the spec's rate-limit table.
// Plain fields: the daemon maps its own configuration onto them.
type Config struct {
	// DeviceList is the account's budget for the device list (spec: 30/min, burst 30).
	DeviceList Limit
	// ControlAccount is the account's control budget (spec: 12/s, burst 80).
	ControlAccount Limit
	// ControlDevice is each device's control budget (spec: 2/s, burst 6).
	ControlDevice Limit
	// State is each device's state-read budget (spec: 30/min, burst 30).
	State Limit
	// Scenes is each device's light-scene budget (spec: 30/min, burst 30).
	Scenes Limit
	// DIYScenes is each device's DIY-scene budget. The spec gives none; the
	// default is the scenes budget, in a bucket of its own.
	DIYScenes Limit

	// SafetyMargin is the fraction (0 to 0.5) of every rate and burst held
	// back, for a cloud whose buckets run slightly tighter than documented.
	// Default 0: the scheduler already assumes each request reaches the
	// cloud as late as its answer comes back, so latency never overspends.
	SafetyMargin float64

	// MaxInFlight bounds the requests on the wire at once (default 8).
	MaxInFlight int
	// CommandSlots of those are kept for control commands (default 1), so a
	// burst of reads never delays a command by more than one request time.
	CommandSlots int
	// FirstInFlight bounds the first reads (PriorityFirst) on the wire at
	// once beside MaxInFlight's requests (default DefaultFirstInFlight): a
	// start reads every device at once, as far as this allows, instead of
	// MaxInFlight-CommandSlots at a time. Beyond it, first reads wait for
	// the steady read slots like any read, before the periodic ones.
	FirstInFlight int

	// MaxAttempts bounds the attempts of a read failing with transient
	// errors (5xx, timeouts) before its failure is reported (default 4);
	// commands are retried for CommandMaxAge instead.
	// Rate-limited (429) attempts do not count: they are retried until sent.
	MaxAttempts int

	// RequestsToday and RequestsDay (yyyymmdd, local time) seed the count
	// of requests sent today, as a previous run left it in the state
	// directory: a restart does not forget what the daily limit has spent.
	RequestsToday, RequestsDay int

	// MaxQueuedCommands bounds the commands waiting to be sent (default 1000).
	MaxQueuedCommands int
	// MaxQueuedReads bounds the waiting reads, counting every coalesced
	// waiter (default 2000).
	MaxQueuedReads int

	// OnHeld, when set, is called when a device's state read got a 429 and
	// waits (Held says the same until then), so that whoever waits for
	// that read can hear of it now. It must not block.
	OnHeld func(sku, device string, h Hold)
	// OnFirstReadsDone, when set, is called when the last first read on
	// the wire beside the steady slots is answered and no first read
	// waits: a start's burst is over (again after each device list that
	// adds devices). The daemon closes the idle connections the burst
	// opened. It must not block.
	OnFirstReadsDone func()
	// OnChange, when set, is called after each request's outcome is
	// settled (the counts of Stats may have changed). It must not block.
	OnChange func()
	// OnCounted, when set, is called for every request counted in
	// Stats.RequestsToday, with its endpoint (cloud.Endpoint*) and the time
	// it was counted: the same requests, for a history by hour. It is
	// called with the scheduler locked: it must not block nor call it.
	OnCounted func(endpoint string, at time.Time)

	// Clock is the scheduler's time: its buckets, back-offs, hold-offs
	// and the loop's timer (nil: clock.Real). Tests of the whole bridge
	// jump it (clocktest) over RetryMax, AuthHoldoff or MaxRetryAfter
	// instead of shortening them.
	Clock clock.Clock
}

// Defaults of Config, the spec's rate-limit table.
var (
	DefaultDeviceList     = PerMinute(30, 30)
	DefaultControlAccount = PerSecond(12, 80)
	DefaultControlDevice  = PerSecond(2, 6)
	DefaultState          = PerMinute(30, 30)
	DefaultScenes         = PerMinute(30, 30)
	DefaultDIYScenes      = PerMinute(30, 30)
)

// DefaultMaxInFlight is Config.MaxInFlight's default: the most requests on
// the wire at once, and so the connections worth keeping open to the cloud.
const DefaultMaxInFlight = 8

// DefaultFirstInFlight is Config.FirstInFlight's default: how many of a
// start's first reads are on the wire at once, each on its own connection.
// 100 is aiohttp's default connection limit, so the cloud sees nothing unusual.
const DefaultFirstInFlight = 100

// CommandMaxAge is how long a command failing with transient errors (the
// cloud unreachable, 5xx, timeouts) is retried, from when it was queued,
// instead of MaxAttempts times: a user's command outlives a short outage of
// the cloud.
const CommandMaxAge = 2 * time.Minute

// ShutdownTimeout is how long Run waits, after its context ends, for the
// requests on the wire before cancelling them.
const ShutdownTimeout = 10 * time.Second

// Back-offs and hold-offs: policies, not settings. Tests wait them out by
// jumping Config.Clock.
const (
	// RetryBase is the first back-off after a transient error or a 429
	// without Retry-After; it doubles per attempt, with jitter.
	RetryBase = time.Second
	// RetryMax caps the back-off.
	RetryMax = 30 * time.Second
	// AuthHoldoff is how long after a 401 every request is failed without
	// being sent, so a wrong key does not hammer the cloud. After it, one
	// request at a time is sent until one is answered without a 401: a key
	// still refused costs one request per hold-off.
	AuthHoldoff = time.Minute
	// MaxRetryAfter caps the wait a 429's Retry-After asks for: a longer
	// one is capped, and said once in the log, so that a bogus header
	// cannot stop a device's reads for an hour.
	MaxRetryAfter = 5 * time.Minute
)

const (
	defaultCommandSlots      = 1
	defaultMaxAttempts       = 4
	defaultMaxQueuedCommands = 1000
	defaultMaxQueuedReads    = 2000
	maxSafetyMargin          = 0.5
)

// Validate reports every field set to a value the scheduler cannot use,
// naming the field and the fix. Zero values are fine (they mean the default).
func (c Config) Validate() error {
	var errs []error
	limits := []struct {
		name string
		l    Limit
	}{
		{"DeviceList", c.DeviceList}, {"ControlAccount", c.ControlAccount},
		{"ControlDevice", c.ControlDevice}, {"State", c.State},
		{"Scenes", c.Scenes}, {"DIYScenes", c.DIYScenes},
	}
	for _, l := range limits {
		if l.l != (Limit{}) && !l.l.valid() {
			errs = append(errs, fmt.Errorf("scheduler: %s limit %v/s burst %d: rate must be positive and finite and burst at least 1", l.name, float64(l.l.Rate), l.l.Burst))
		}
	}
	if c.SafetyMargin < 0 || c.SafetyMargin > maxSafetyMargin || math.IsNaN(c.SafetyMargin) {
		errs = append(errs, fmt.Errorf("scheduler: SafetyMargin %v: must be between 0 and %v", c.SafetyMargin, maxSafetyMargin))
	}
	nonNegative := []struct {
		name string
		v    int64
	}{
		{"MaxInFlight", int64(c.MaxInFlight)}, {"CommandSlots", int64(c.CommandSlots)}, {"FirstInFlight", int64(c.FirstInFlight)},
		{"MaxAttempts", int64(c.MaxAttempts)}, {"MaxQueuedCommands", int64(c.MaxQueuedCommands)},
		{"MaxQueuedReads", int64(c.MaxQueuedReads)},
	}
	for _, f := range nonNegative {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("scheduler: %s is negative: use 0 for the default or a positive value", f.name))
		}
	}
	maxInFlight, slots := c.MaxInFlight, c.CommandSlots
	if maxInFlight <= 0 {
		maxInFlight = DefaultMaxInFlight
	}
	if slots <= 0 {
		slots = defaultCommandSlots
	}
	if slots >= maxInFlight {
		errs = append(errs, fmt.Errorf("scheduler: CommandSlots %d must be below MaxInFlight %d, or reads could never be sent", slots, maxInFlight))
	}
	return errors.Join(errs...)
}

// withDefaults replaces zero and unusable values with the defaults.
func (c Config) withDefaults() Config {
	lim := func(l *Limit, def Limit) {
		if !l.valid() {
			*l = def
		}
	}
	lim(&c.DeviceList, DefaultDeviceList)
	lim(&c.ControlAccount, DefaultControlAccount)
	lim(&c.ControlDevice, DefaultControlDevice)
	lim(&c.State, DefaultState)
	lim(&c.Scenes, DefaultScenes)
	lim(&c.DIYScenes, DefaultDIYScenes)
	if c.SafetyMargin < 0 || c.SafetyMargin > maxSafetyMargin || math.IsNaN(c.SafetyMargin) {
		c.SafetyMargin = 0
	}
	positive := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	positive(&c.MaxInFlight, DefaultMaxInFlight)
	positive(&c.FirstInFlight, DefaultFirstInFlight)
	positive(&c.MaxAttempts, defaultMaxAttempts)
	positive(&c.MaxQueuedCommands, defaultMaxQueuedCommands)
	positive(&c.MaxQueuedReads, defaultMaxQueuedReads)
	positive(&c.CommandSlots, defaultCommandSlots)
	if c.CommandSlots >= c.MaxInFlight {
		c.CommandSlots = c.MaxInFlight - 1
		if c.CommandSlots == 0 {
			c.MaxInFlight, c.CommandSlots = 2, 1
		}
	}
	c.Clock = clock.Or(c.Clock)
	return c
}

// margin applies the safety margin to a limit.
func (c Config) margin(l Limit) Limit {
	if c.SafetyMargin == 0 {
		return l
	}
	out := Limit{Rate: l.Rate * rate.Limit(1-c.SafetyMargin), Burst: int(float64(l.Burst) * (1 - c.SafetyMargin))}
	if out.Burst < 1 {
		out.Burst = 1
	}
	return out
}
