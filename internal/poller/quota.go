package poller

import (
	"math"
	"time"

	"cloud2mqtt/internal/scheduler"
)

// Reads within the account's quota (scheduler.Quota), so that what is left
// of a window lasts until it renews with a reserve kept for commands, reads
// on request and the device list. Only periodic reads and scene rounds are
// paced: the plan lengthens the interval to what the quota allows in the
// long run (replan), and the pacer, a token bucket filled at what is left
// over the time left, holds them within the current window.

// The pacing rule's figures.
const (
	// reserveShare of a window's limit is kept for commands with their
	// confirming reads and reads on request, at least reserveMin (a
	// command and its read); the device list's refreshes due before the
	// window renews are kept besides.
	reserveShare = 10
	reserveMin   = 2
	// readsShare of what the quota allows in the long run goes to the
	// periodic reads; the rest is the scene rounds' share (and slack).
	readsShare = 0.9
	// replanChange is how much the quota's long-run allowance must move
	// before the interval is planned again.
	replanChange = 0.1
	// paceRecheck bounds a paced wait, so that a change of the quota (an
	// answer, a window renewed) is seen within it.
	paceRecheck = time.Minute
)

// QuotaReserve is what the bridge keeps back of a window of limit
// requests over d of its time: the share for commands and the device-list
// refreshes due in d (every listInterval).
func QuotaReserve(limit int, d, listInterval time.Duration) int {
	return reserve(limit, d, listInterval)
}

// QuotaInterval is the poll interval at which n devices' periodic reads fit
// a quota of limit requests a span, as the bridge plans when the cloud
// tells it one (0: it does not bind at all, a day: not even that fits).
func QuotaInterval(n, limit int, span, listInterval time.Duration) time.Duration {
	pc := pacer{capacity: capacityOf(limit, span, listInterval)}
	return pc.quotaInterval(n, 0)
}

// capacityOf is the periodic reads a second a window allows in the long
// run: readsShare of its limit less the reserve, over its span.
func capacityOf(limit int, span, listInterval time.Duration) float64 {
	if limit <= 0 || span <= 0 {
		return 0
	}
	full := float64(limit-reserve(limit, span, listInterval)) * readsShare / span.Seconds()
	return max(full, math.SmallestNonzeroFloat64)
}

// reserve is what a window keeps back over d of its time: the share for
// commands and the device-list refreshes due in d.
func reserve(limit int, d, listInterval time.Duration) int {
	r := max(reserveMin, (limit+reserveShare-1)/reserveShare)
	if listInterval > 0 && d > 0 {
		r += int((d + listInterval - 1) / listInterval)
	}
	return r
}

// pacer is the poller's view of the quota now. Guarded by Poller.mu.
type pacer struct {
	// capacity is the periodic reads a second the quota allows in the
	// long run (readsShare of each window's limit less its reserve, over
	// its span: the lowest of the windows); 0 when no quota is known.
	capacity float64
	// budget is the paced requests the windows allow until they renew
	// (what is left less the requests pending and the reserve), less those
	// paced since it was looked at; math.MaxInt without a quota. until is
	// when the window that sets it renews.
	budget int
	until  time.Time
	// reads are the periodic reads a second the plan makes: a scene round
	// goes only when what is left besides them until the window renews
	// has room for it.
	reads float64
	// renewed: a window ended and is taken to be full again until an
	// answer says how long the new one is: until then the quota binds
	// (a window first seen near its end looks shorter than it is).
	renewed bool
	// tight: the quota binds, reads and scene rounds take tokens.
	tight  bool
	rate   float64 // tokens a second: what is left over the time left
	burst  float64
	tokens float64
	share  float64 // the scene rounds' tokens, filled at (1-readsShare)·rate, at most sceneBurst
	at     time.Time
}

const sceneBurst = 2 // one round: both lists

func newPacer() pacer { return pacer{budget: math.MaxInt} }

// look takes the quota now; decide follows with the plan's demand.
func (pc *pacer) look(now time.Time, q scheduler.Quota, listInterval time.Duration) {
	pc.refill(now)
	pc.capacity, pc.budget, pc.until, pc.rate, pc.renewed = 0, math.MaxInt, time.Time{}, math.Inf(1), false
	for _, w := range q.Windows {
		if !w.Paced() {
			continue
		}
		pc.renewed = pc.renewed || w.Renewed
		left := w.Reset.Sub(now)
		if left <= 0 {
			continue
		}
		allow := w.Remaining - q.Pending - reserve(w.Limit, left, listInterval)
		if allow < pc.budget {
			pc.budget, pc.until = allow, w.Reset
		}
		pc.rate = min(pc.rate, float64(max(allow, 0))/left.Seconds())
		if c := capacityOf(w.Limit, w.Span, listInterval); c > 0 && (pc.capacity == 0 || c < pc.capacity) {
			pc.capacity = c
		}
	}
}

// decide says whether the quota binds: demand is the paced requests a
// second the plan makes without it (periodic reads and scene fetches),
// reads the periodic reads a second it makes, readers the devices read
// periodically, whose first reads may go at once when what is left allows.
func (pc *pacer) decide(demand, reads float64, readers int) {
	pc.reads = reads
	if pc.budget == math.MaxInt {
		pc.tight, pc.rate = false, 0
		return
	}
	was := pc.tight
	pc.tight = pc.renewed || pc.rate < demand || (pc.capacity > 0 && pc.capacity < demand)
	pc.burst = max(sceneBurst, math.Min(float64(max(pc.budget, 0)), float64(readers)))
	if !was && pc.tight {
		pc.tokens, pc.share = pc.burst, sceneBurst // a bucket starts full
	}
	pc.tokens = min(pc.tokens, pc.burst)
}

// refill brings the tokens up to now at the rate in force.
func (pc *pacer) refill(now time.Time) {
	if pc.tight && now.After(pc.at) {
		dt := now.Sub(pc.at).Seconds()
		pc.tokens = min(pc.burst, pc.tokens+pc.rate*dt)
		pc.share = min(sceneBurst, pc.share+pc.rate*(1-readsShare)*dt)
	}
	pc.at = now
}

// take asks for n paced requests now, scenes for a scene round's: it
// returns now when they may go (and counts them), else when to ask again.
func (pc *pacer) take(now time.Time, n int, scenes bool) time.Time {
	if pc.budget == math.MaxInt {
		return now
	}
	if pc.budget < n {
		return pc.wait(now, pc.until)
	}
	if scenes && float64(pc.budget-n) < pc.reads*pc.until.Sub(now).Seconds() {
		return pc.wait(now, pc.until) // the reads come first
	}
	if pc.tight {
		pc.refill(now)
		need := float64(n)
		var wait float64 // seconds
		if pc.tokens < need {
			wait = (need - pc.tokens) / pc.rate
		}
		if scenes && pc.share < need {
			wait = max(wait, (need-pc.share)/(pc.rate*(1-readsShare)))
		}
		if wait > 0 {
			return pc.wait(now, now.Add(time.Duration(math.Ceil(wait*1e9))))
		}
		pc.tokens -= need
		if scenes {
			pc.share -= need
		}
	}
	pc.budget -= n
	return now
}

// wait is when a paced request asks again: at until, on the grid, but no
// later than paceRecheck (a new answer may allow it sooner).
func (pc *pacer) wait(now, until time.Time) time.Time {
	if until.IsZero() || until.Sub(now) > paceRecheck {
		until = now.Add(paceRecheck)
	}
	return onGrid(until)
}

// held is when paced requests wait for a window to renew (zero when they
// do not).
func (pc *pacer) held() time.Time {
	if pc.budget != math.MaxInt && pc.budget <= 0 {
		return pc.until
	}
	return time.Time{}
}

// lookQuota takes the scheduler's quota and replans when what it allows in
// the long run moved. Called with p.mu held, before the reports are
// applied: a device list's answer plans by the quota it said.
func (p *Poller) lookQuota(now time.Time) {
	before := p.pace.capacity
	p.pace.look(now, p.s.Quota(), p.cfg.ListInterval)
	p.pace.decide(p.demand, p.readRate, p.paced)
	after := p.pace.capacity
	if before == after || len(p.devices) == 0 {
		return
	}
	if before > 0 && after > 0 && math.Abs(after-before) < replanChange*before {
		p.pace.capacity = before // a small move: keep the plan
		return
	}
	p.replan()
	p.rescheduleAll(now)
}

// quotaInterval is the interval at which n devices' periodic reads fit what
// the quota allows in the long run besides own, the reads a second of the
// devices with an interval of their own; 0 without a quota.
func (pc *pacer) quotaInterval(n int, own float64) time.Duration {
	if pc.capacity <= 0 || n <= 0 {
		return 0
	}
	avail := pc.capacity - own
	if avail <= 0 || float64(n)/avail > day.Seconds() {
		return day
	}
	return gridUp(time.Duration(math.Ceil(float64(n) / avail * 1e9)))
}
