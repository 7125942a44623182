package scheduler

// The account's quota as the cloud's answers describe it: what is left of
// each window and when it renews, learned from every answer's rate-limit
// headers (cloud.Config.OnLimits → ObserveLimits); reads and commands held
// while it is spent; and the pace at which requests spend it. The poller
// plans its reads within it (poller/quota.go).

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"cloud2mqtt/internal/cloud"
)

// Where a quota's figures come from.
const (
	QuotaLearned    = "learned"    // the cloud's answers said it
	QuotaConfigured = "configured" // CLOUD_DAILY_LIMIT
)

// The windows of Quota.Windows, in this order.
const (
	WindowQuota = iota // API-RateLimit-*: the account's quota
	WindowShort        // X-RateLimit-*: a shorter window
	numWindows
)

// windowNames name the windows after their headers.
var windowNames = [numWindows]string{"API-RateLimit", "X-RateLimit"}

// resetTolerance is how far two answers' resets may differ and still be the
// same window: "seconds from now" is rounded to whole seconds by the
// service and counted from when the answer arrived here.
const resetTolerance = 2 * time.Second

// QuotaWindow is one window of the account's requests as the cloud's
// answers describe it.
type QuotaWindow struct {
	// Name is the headers' prefix: "API-RateLimit" or "X-RateLimit".
	Name string
	// Limit is the requests the window allows; 0 when no answer said.
	Limit int
	// Remaining is what is left: the lowest figure an answer of this window
	// gave, less the requests that reached the cloud after it (valid when
	// HasRemaining). Requests queued or on the wire are Quota.Pending.
	Remaining    int
	HasRemaining bool
	// Reset is when the window ends and Remaining starts again from Limit;
	// zero when no answer said.
	Reset time.Time
	// Span is the window's length as far as answers showed it: the longest
	// time from an answer to its window's end (the whole window once an
	// answer came at its start).
	Span time.Duration
	// Observed is when an answer last said something of the window.
	Observed time.Time
	// Renewed: the window ended since the last answer; Remaining is taken
	// to be the Limit again and Reset one Span later, until an answer says.
	Renewed bool
}

// Known reports whether any answer said anything of the window.
func (w QuotaWindow) Known() bool { return !w.Observed.IsZero() }

// Paced reports whether the window says enough to plan by: what is left and
// when it renews.
func (w QuotaWindow) Paced() bool { return w.HasRemaining && !w.Reset.IsZero() }

// String reads like "API-RateLimit: 12 of 45 left until 18:03:00Z".
func (w QuotaWindow) String() string {
	lim := cloud.RateLimit{Limit: w.Limit, Remaining: w.Remaining, HasRemaining: w.HasRemaining, Reset: w.Reset}
	return w.Name + ": " + lim.String()
}

// Quota is what the scheduler knows of the account's request quota.
type Quota struct {
	// Windows are the account's quota (WindowQuota) and the shorter
	// window (WindowShort); a window no answer described is not Known.
	Windows [numWindows]QuotaWindow
	// Pending are the requests queued or on the wire: they will spend the
	// quota too.
	Pending int
	// HeldUntil is set while reads and commands wait because a window is
	// spent (Held says the same, with HeldErr: a *QuotaError).
	HeldUntil time.Time
	HeldErr   error
	// Pace is the requests a second that reached the cloud over the last
	// PaceOver (up to ten minutes); 0 with PaceOver 0 until a minute of
	// them was seen. First reads (PriorityFirst: a start's burst, a new
	// device's first) are left out: they are no hourly rate.
	Pace     float64
	PaceOver time.Duration
}

// Known reports whether any answer described a window.
func (q Quota) Known() bool {
	for _, w := range q.Windows {
		if w.Known() {
			return true
		}
	}
	return false
}

// ErrQuotaSpent is wrapped by the error of requests held because the
// account's quota is spent (a *QuotaError).
var ErrQuotaSpent = errors.New("scheduler: the account's request quota is spent")

// QuotaError says which window is spent and when it renews; Err is the 429
// that said so, if one did.
type QuotaError struct {
	Window QuotaWindow
	Err    error
}

func (e *QuotaError) Error() string {
	var b strings.Builder
	b.WriteString(ErrQuotaSpent.Error())
	fmt.Fprintf(&b, " (%s)", e.Window)
	if !e.Window.Reset.IsZero() {
		b.WriteString("; it renews at ")
		b.WriteString(e.Window.Reset.UTC().Format(time.RFC3339))
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap gives errors.Is ErrQuotaSpent and errors.As the 429.
func (e *QuotaError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrQuotaSpent}
	}
	return []error{ErrQuotaSpent, e.Err}
}

// quotaModel is the scheduler's knowledge of the quota. Every method is
// called under the scheduler's lock with instants that never go back.
type quotaModel struct {
	w         [numWindows]quotaWindow
	holdUntil time.Time // reads and commands wait until then
	holdErr   error
	pace      paceMeter
}

type quotaWindow struct {
	QuotaWindow
	// ended is when the window last ended (renewed by advance): the first
	// answer of the next one says its length exactly.
	ended time.Time
	// since counts the requests that reached the cloud, sent after the
	// answer that said Remaining arrived: they cannot be in it. (Those
	// sent before it may be; they are taken to be, which at worst
	// overstates what is left by the requests on the wire then.)
	since int
}

// observe takes what an answer said.
func (m *quotaModel) observe(l cloud.RateLimits) {
	for i, r := range [numWindows]cloud.RateLimit{l.Quota, l.Short} {
		if r.Known() {
			m.w[i].observe(windowNames[i], r, l.At)
		}
	}
}

func (w *quotaWindow) observe(name string, r cloud.RateLimit, at time.Time) {
	w.Name = name
	same := !w.Renewed && !w.Reset.IsZero() && !r.Reset.IsZero() && absDur(r.Reset.Sub(w.Reset)) <= resetTolerance
	if r.Limit > 0 {
		w.Limit = r.Limit
	}
	if !r.Reset.IsZero() {
		left := r.Reset.Sub(at)
		w.Span = max(w.Span, left.Truncate(time.Second))
		// The first answer after a window ended: from that end to this
		// reset is one window, if no window went by unseen (the answer
		// came in the first third of it).
		if exact := r.Reset.Sub(w.ended).Round(time.Second); w.Renewed && !w.ended.IsZero() && exact > 0 && exact*2 <= left*3 {
			w.Span = exact
		}
		if !same {
			w.Reset = r.Reset
		}
	}
	if r.HasRemaining {
		if same && w.HasRemaining {
			// Answers overtake each other: within a window, what is left
			// only goes down.
			w.Remaining = min(w.remaining(), r.Remaining)
		} else {
			w.Remaining = r.Remaining
		}
		w.HasRemaining, w.since = true, 0
	}
	w.Observed = at
	w.Renewed = false
}

// count counts a request that reached the cloud at now, sent at sent;
// in the pace only when paced (not a first read).
func (m *quotaModel) count(now, sent time.Time, paced bool) {
	if paced {
		m.pace.add(now)
	}
	for i := range m.w {
		if w := &m.w[i]; w.HasRemaining && sent.After(w.Observed) {
			w.since++
		}
	}
}

// remaining is Remaining less the requests that reached the cloud since an
// answer said it.
func (w *quotaWindow) remaining() int { return max(w.Remaining-w.since, 0) }

// advance renews the windows that ended before now: the Limit is left
// again, until one Span later (unknown without a Span).
func (m *quotaModel) advance(now time.Time) {
	for i := range m.w {
		w := &m.w[i]
		if w.Reset.IsZero() || now.Before(w.Reset) {
			continue
		}
		w.ended = w.Reset
		if w.Span > 0 {
			for !now.Before(w.Reset) {
				w.Reset = w.Reset.Add(w.Span)
			}
		} else {
			w.Reset = time.Time{}
		}
		w.Remaining, w.HasRemaining, w.since = w.Limit, w.Limit > 0, 0
		w.Observed = now // requests sent from now on spend the new window
		w.Renewed = true
	}
}

// spent returns the window that has nothing left and the instant it renews
// (the latest, when both are spent).
func (m *quotaModel) spent(now time.Time) (QuotaWindow, bool) {
	var out QuotaWindow
	found := false
	for i := range m.w {
		w := &m.w[i]
		if !w.HasRemaining || w.remaining() > 0 || w.Reset.IsZero() || !w.Reset.After(now) {
			continue
		}
		if !found || w.Reset.After(out.Reset) {
			out, found = w.snapshot(), true
		}
	}
	return out, found
}

func (w *quotaWindow) snapshot() QuotaWindow {
	s := w.QuotaWindow
	s.Remaining = w.remaining()
	return s
}

// ObserveLimits takes what an answer's rate-limit headers said (the cloud
// client's Config.OnLimits): the scheduler then knows what is left of the
// account's quota. When a window is spent, reads and commands wait until
// it renews (at most Config.MaxRetryAfter at a time; then one request at a
// time finds out whether it did). Safe to call from any goroutine.
func (s *Scheduler) ObserveLimits(l cloud.RateLimits) {
	if !l.Known() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowLocked()
	s.quota.advance(now)
	s.quota.observe(l)
	s.quotaHoldLocked(now, nil)
}

// quotaHoldLocked starts a hold when a window is spent and none is on (or
// the last one ended: the request that ended it was answered "spent"
// again). cause is the 429 that said so, if one did. It returns the hold.
func (s *Scheduler) quotaHoldLocked(now time.Time, cause error) (time.Time, bool) {
	if now.Before(s.quota.holdUntil) {
		var qe *QuotaError
		if cause != nil && errors.As(s.quota.holdErr, &qe) && qe.Err == nil {
			// The 429 that followed says it too. A new error: the old one
			// may be read outside the lock.
			s.quota.holdErr = &QuotaError{Window: qe.Window, Err: cause}
		}
		return s.quota.holdUntil, true
	}
	w, spent := s.quota.spent(now)
	if !spent {
		return time.Time{}, false
	}
	until := w.Reset
	if capped := now.Add(MaxRetryAfter); until.After(capped) {
		until = capped
	}
	s.quota.holdUntil = until
	s.quota.holdErr = &QuotaError{Window: w, Err: cause}
	s.log.Warn().Str("window", w.Name).Int("limit", w.Limit).Time("renews", w.Reset).Time("held_until", until).
		Msg("the account's request quota is spent; reads and commands wait until it renews (commands stay queued, the latest value of each wins)")
	return until, true
}

// quotaProbingLocked reports whether a window is still spent after its hold
// ended: then one request at a time is sent, whose answer says whether it
// renewed.
func (s *Scheduler) quotaProbingLocked(now time.Time) bool {
	_, spent := s.quota.spent(now)
	return spent
}

// Quota returns what the scheduler knows of the account's quota now.
func (s *Scheduler) Quota() Quota {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.quotaLocked(s.nowLocked())
}

func (s *Scheduler) quotaLocked(now time.Time) Quota {
	s.quota.advance(now)
	q := Quota{Pending: s.queuedCommands + s.requestsInFlight + s.firstInFlight}
	for p := range s.readQueues {
		q.Pending += s.readQueues[p].Len()
	}
	for i := range s.quota.w {
		q.Windows[i] = s.quota.w[i].snapshot()
	}
	if now.Before(s.quota.holdUntil) {
		q.HeldUntil, q.HeldErr = s.quota.holdUntil, s.quota.holdErr
	}
	q.Pace, q.PaceOver = s.quota.pace.rate(now)
	return q
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// paceMeter counts requests in ten-second slots over the last ten minutes.
type paceMeter struct {
	slots [paceSlots]uint32
	slot  int64     // index (since the Unix epoch) of the newest slot
	first time.Time // first request counted
}

const (
	paceSlot  = 10 * time.Second
	paceSlots = 60
	// paceMin is the least time a pace is measured over.
	paceMin = time.Minute
)

func (p *paceMeter) add(now time.Time) {
	if p.first.IsZero() {
		p.first = now
	}
	p.roll(now)
	p.slots[p.slot%paceSlots]++
}

// roll makes the slot of now the newest, emptying those it skips.
func (p *paceMeter) roll(now time.Time) {
	cur := now.UnixNano() / int64(paceSlot)
	if cur <= p.slot {
		return
	}
	for i := p.slot + 1; i <= cur && i <= p.slot+paceSlots; i++ {
		p.slots[i%paceSlots] = 0
	}
	p.slot = cur
}

// rate is the requests a second over the last ten minutes (or since the
// first request, when that is sooner), and the time it is measured over;
// zero before a minute of requests.
func (p *paceMeter) rate(now time.Time) (float64, time.Duration) {
	if p.first.IsZero() {
		return 0, 0
	}
	p.roll(now)
	over := min(now.Sub(p.first), paceSlots*paceSlot)
	if over < paceMin {
		return 0, 0
	}
	var n uint64
	for _, c := range p.slots {
		n += uint64(c)
	}
	return float64(n) / over.Seconds(), over
}
