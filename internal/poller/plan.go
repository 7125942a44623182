package poller

import (
	"time"

	"github.com/rs/zerolog"
)

const day = 24 * time.Hour

// Plan is the arithmetic behind a poll interval chosen for a daily request
// limit: every figure is requests per day unless it is a duration. It is
// logged when the interval is (re)planned and printed by the README's table.
type Plan struct {
	Devices int // devices the plan is for (read at Interval)
	Limit   int // CLOUD_DAILY_LIMIT; 0 means none and the rest is zero but Configured/Interval/StateRequests

	// Budget is Limit less 10 % headroom: the most the plan lets the bridge send.
	Budget int
	// ListRequests are the device-list refreshes, one per ListInterval.
	ListRequests int
	// SceneRequests are the scene and DIY-scene fetches, one pair per device
	// per SceneInterval: every device is assumed to have both, an upper bound.
	SceneRequests int
	// FirstRequests are the reads of every device at once when the bridge
	// starts (and when a device appears): one per device, the plan
	// allowing one start a day.
	FirstRequests int
	// CommandRequests is the allowance for commands: each costs the control
	// request and its confirming read (CommandsPerDay × 2). Reads on request
	// (the get topic) come out of the same allowance.
	CommandRequests int
	// OwnRequests are the reads of devices with an interval of their own.
	OwnRequests int
	// StateBudget is what is left for periodic state reads.
	StateBudget int

	Configured time.Duration // POLL_INTERVAL after defaults and the 2 s floor
	Needed     time.Duration // shortest interval whose reads fit StateBudget; 0 without a limit
	Interval   time.Duration // max(Configured, Needed) rounded up to whole seconds: the interval used

	// Quota is the interval the account's quota allows, as the cloud's
	// answers describe it (poller/quota.go), when it is longer than the
	// rest of the plan's: Interval then. 0 otherwise.
	Quota time.Duration

	StateRequests int  // periodic state reads at Interval (online devices; offline ones read less)
	Total         int  // StateRequests + FirstRequests + ListRequests + SceneRequests + CommandRequests
	OverBudget    bool // the fixed costs leave less than one read per device a day: Interval is 24 h and Total exceeds Budget
}

// PlanInterval returns the poll interval for devices devices under cfg, and
// the arithmetic behind it. Without a DailyLimit it is the configured
// interval (after defaults and the floor). With one, it is the larger of
// the configured interval and the shortest interval at which a day's
// requests (periodic reads, list refreshes, scene fetches and the command
// allowance) stay within the limit less 10 % headroom. When even one read per
// device a day does not fit, the plan says OverBudget and the interval is 24 h.
// The interval is rounded up to whole seconds, the reads' grid, so that the
// plan counts the reads really made. It is pure.
func PlanInterval(devices int, cfg Config) (time.Duration, Plan) {
	cfg = cfg.withDefaults()
	p := Plan{Devices: max(devices, 0), Limit: max(cfg.DailyLimit, 0), Configured: cfg.Interval, Interval: cfg.Interval}
	for _, own := range cfg.OwnIntervals {
		p.OwnRequests += perDay(gridUp(max(own, MinInterval)))
	}
	all := p.Devices + len(cfg.OwnIntervals)
	if p.Limit > 0 && p.Devices > 0 {
		p.Budget = p.Limit - p.Limit/10 // 10 % headroom, rounded in the limit's favour
		p.ListRequests = perDay(cfg.ListInterval)
		p.SceneRequests = 2 * all * perDay(cfg.SceneInterval)
		p.FirstRequests = all
		p.CommandRequests = 2 * cfg.commandsPerDay()
		p.StateBudget = p.Budget - p.ListRequests - p.SceneRequests - p.FirstRequests - p.CommandRequests - p.OwnRequests
		perDevice := p.StateBudget / p.Devices
		if p.StateBudget <= 0 || perDevice < 1 {
			p.OverBudget = true
			p.Needed = day
		} else {
			// ceil(day/Needed) ≤ perDevice when Needed ≥ day/perDevice; whole
			// seconds, rounded up, keep the logs and the README readable.
			secs := (int64(day/time.Second) + int64(perDevice) - 1) / int64(perDevice)
			p.Needed = time.Duration(secs) * time.Second
		}
		p.Interval = max(p.Configured, p.Needed)
	}
	p.Interval = gridUp(p.Interval)
	p.StateRequests = p.Devices * perDay(p.Interval)
	p.Total = p.StateRequests + p.OwnRequests + p.FirstRequests + p.ListRequests + p.SceneRequests + p.CommandRequests
	return p.Interval, p
}

// withQuota makes q, the interval the account's quota allows, the plan's
// interval, and counts its reads.
func (p *Plan) withQuota(q time.Duration) {
	p.Quota, p.Interval = q, q
	p.StateRequests = p.Devices * perDay(q)
	p.Total = p.StateRequests + p.OwnRequests + p.FirstRequests + p.ListRequests + p.SceneRequests + p.CommandRequests
}

// perDay is how many requests one every d makes in a day, the first at the
// start of the day.
func perDay(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((day + d - 1) / d)
}

// MarshalZerologObject logs the plan as fields.
func (p Plan) MarshalZerologObject(e *zerolog.Event) {
	e.Int("devices", p.Devices).
		Int("daily_limit", p.Limit).
		Int("budget", p.Budget).
		Int("state_reads", p.StateRequests).
		Int("list_refreshes", p.ListRequests).
		Int("scene_fetches", p.SceneRequests).
		Int("first_reads", p.FirstRequests).
		Int("own_interval_reads", p.OwnRequests).
		Int("commands_reserved", p.CommandRequests).
		Int("total", p.Total).
		Stringer("configured", p.Configured).
		Stringer("needed", p.Needed).
		Stringer("interval", p.Interval).
		Stringer("quota_interval", p.Quota).
		Bool("over_budget", p.OverBudget)
}
