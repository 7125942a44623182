package scheduler

import (
	"errors"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
)

// What the requests' outcomes say of the cloud, and the hold-offs that keep
// reads of a device waiting.

// CloudHealth says whether the cloud answers: LastAnswer is when a request
// last succeeded; FailingSince, when set, is when the first failure after
// it came (a request that did not reach the cloud, a 5xx, a 401, a 429, a
// device list refused), and Err the last of those failures. A request the
// cloud refused for what it asked (a 400 or 404 about a device) says
// nothing either way.
//
// HeldUntil is set while the last failure is a 429: until when requests
// wait because the cloud asked (its Retry-After, capped at MaxRetryAfter,
// or the spent quota's renewal; the latest of the waits). A 429 is an
// answer: the cloud is there and asks the bridge to wait, which no restart
// would shorten. A failure of another kind after it starts a new run
// (FailingSince, Failures), as after a success.
type CloudHealth struct {
	LastAnswer   time.Time
	FailingSince time.Time
	Failures     int // failures since LastAnswer (or the last 429's wait)
	Err          error
	HeldUntil    time.Time
}

// Failing reports whether the cloud has failed every request for at least
// grace (a single blip does not count), as of now.
func (h CloudHealth) Failing(now time.Time, grace time.Duration) bool {
	return !h.FailingSince.IsZero() && now.Sub(h.FailingSince) >= grace
}

type cloudHealth struct{ CloudHealth }

func (h *cloudHealth) snapshot() CloudHealth { return h.CloudHealth }

// observe records one request's outcome. Called with s.mu held.
func (h *cloudHealth) observe(now time.Time, ep endpoint, err error) {
	switch {
	case err == nil:
		h.CloudHealth = CloudHealth{LastAnswer: now}
		return
	case cloud.IsRejected(err) && ep != epDevices:
		return // the cloud answered; it refused this request only
	case errors.Is(err, ErrNotSent):
		return
	}
	if _, limited := cloud.IsRateLimited(err); !limited && !h.HeldUntil.IsZero() {
		h.FailingSince, h.Failures, h.HeldUntil = time.Time{}, 0, time.Time{}
	}
	if h.FailingSince.IsZero() {
		h.FailingSince = now
	}
	h.Failures++
	h.Err = err
}

// heldUntil records the wait a 429 asked for (after observe counted it).
func (h *cloudHealth) heldUntil(until time.Time) {
	if until.After(h.HeldUntil) {
		h.HeldUntil = until
	}
}

// countLocked counts a request that was on the wire (sent at sent), if it
// reached the cloud, against the day's budget and the quota (and its pace
// when paced), and what its outcome says of the cloud.
func (s *Scheduler) countLocked(ep endpoint, now, sent time.Time, err error, paced bool) {
	s.counts.cloud.observe(now, ep, err)
	if !cloud.Reached(err) {
		return
	}
	s.quota.count(now, sent, paced)
	s.counts.requests[ep]++
	if day := dayOf(now); day != s.counts.day {
		s.counts.day, s.counts.requestsToday = day, 0
	}
	s.counts.requestsToday++
	if s.cfg.OnCounted != nil {
		s.cfg.OnCounted(ep.String(), now)
	}
}

// retryAfterLocked is the wait a 429 asks for, capped at MaxRetryAfter (said
// once in the log).
func (s *Scheduler) retryAfterLocked(asked time.Duration) time.Duration {
	if asked <= MaxRetryAfter {
		return asked
	}
	if !s.counts.retryAfterCapped {
		s.counts.retryAfterCapped = true
		s.log.Warn().Dur("retry_after", asked).Dur("used", MaxRetryAfter).
			Msg("the cloud asked to wait longer than the bridge waits after a 429; waiting the most it waits instead (said once)")
	}
	return MaxRetryAfter
}

// Hold is why and until when the reads of a device wait without being
// sent: the cloud refused the API key a moment ago (every request waits),
// the account's quota is spent (every request waits), or it answered the
// device's last state read with 429 and asked to wait.
type Hold struct {
	Until time.Time
	Err   error // wraps ErrAuthHoldoff, ErrQuotaSpent (a *QuotaError), or the 429 (cloud.IsRateLimited)
}

// ErrReadsHeld is wrapped by the error of a read on request that has to wait
// for a hold-off: the read is made when reads resume.
var ErrReadsHeld = errors.New("scheduler: reads are held back")

// HeldBack reports whether err is the outcome of a request the bridge held
// back itself instead of sending it: the hold-off after a refused key
// (ErrAuthHoldoff), a spent quota (ErrQuotaSpent), a hold-off a read on
// request was told of (ErrReadsHeld), or the shutdown (ErrNotSent). It says
// nothing of the device the request was about, whatever cause it wraps.
func HeldBack(err error) bool {
	return errors.Is(err, ErrAuthHoldoff) || errors.Is(err, ErrQuotaSpent) ||
		errors.Is(err, ErrReadsHeld) || errors.Is(err, ErrNotSent)
}

// Held returns the hold-off the device's state reads wait for, if any (ok
// false when a read would go as soon as its budget allows).
func (s *Scheduler) Held(sku, device string) (h Hold, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowLocked()
	if now.Before(s.authUntil) {
		return Hold{Until: s.authUntil, Err: s.authHoldErrLocked()}, true
	}
	if now.Before(s.quota.holdUntil) {
		return Hold{Until: s.quota.holdUntil, Err: s.quota.holdErr}, true
	}
	d := s.devices[capability.Key{SKU: sku, Device: device}]
	if d == nil {
		return Hold{}, false
	}
	if r := d.reads[epState]; r != nil && r.rateLimited > 0 && r.notBefore.After(now) && r.lastErr != nil {
		return Hold{Until: r.notBefore, Err: r.lastErr}, true
	}
	return Hold{}, false
}
