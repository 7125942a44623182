package scheduler

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/cloud"
)

// settleLocked accounts an answer (or failure) against the buckets the
// request used and decides whether it is retried. When it is not, the
// error to report is returned.
func (s *Scheduler) settleLocked(now time.Time, ep endpoint, d *device, a *attempt, err error, buckets ...*bucket) (retry bool, _ error) {
	a.lastErr = err
	if err == nil {
		for _, b := range buckets {
			b.answered(now)
		}
		a.rateLimited = 0
		s.keyAcceptedLocked(a.lastSent)
		s.schemeSaid = false
		return false, nil
	}
	ev := func(e *zerolog.Event) *zerolog.Event {
		e = e.Str("endpoint", ep.String()).Int("attempt", a.sent)
		if d.key.Device != "" {
			e = e.Str("sku", d.key.SKU).Str("device", d.key.Device)
		}
		return e
	}
	if retryAfter, ok := cloud.IsRateLimited(err); ok {
		// The cloud's bucket is empty: empty ours (both, for control: the
		// answer does not say whether the account or the device ran out).
		for _, b := range buckets {
			b.limited(now)
		}
		s.counts.rateLimited++
		s.counts.lastRateLimited = now
		a.rateLimited++
		wait := s.retryAfterLocked(retryAfter)
		if wait <= 0 {
			wait = s.backoff(a.rateLimited)
		}
		a.notBefore = now.Add(wait)
		// A 429 of a spent quota holds every read and command until the
		// quota renews, not only this request.
		s.quota.advance(now)
		if until, held := s.quotaHoldLocked(now, err); held {
			if until.After(a.notBefore) {
				a.notBefore = until
			}
			a.lastErr = s.quota.holdErr
		}
		s.counts.cloud.heldUntil(a.notBefore)
		ev(s.log.Warn()).Dur("retry_after", retryAfter).Dur("wait", a.notBefore.Sub(now)).Msg("rate limited by the cloud (429), bucket emptied, will retry")
		if s.closed {
			s.counts.failures++
			return false, fmt.Errorf("%w: %w", ErrNotSent, err)
		}
		return true, nil
	}
	for _, b := range buckets {
		b.answered(now)
	}
	switch {
	case cloud.IsAuth(err):
		if !now.Before(s.authUntil) {
			ev(s.log.Error()).Err(err).Dur("holdoff", AuthHoldoff).
				Msg("the cloud refused the API key; failing requests without sending them for a while")
		}
		s.authUntil = now.Add(AuthHoldoff)
		s.authErr = err
		s.counts.failures++
		return false, err
	case cloud.IsSchemeMismatch(err):
		// CLOUD_BASE_URL's scheme does not match the server: no retry
		// helps, and every request says the same, so the fix is logged
		// once (until a request succeeds).
		if !s.schemeSaid {
			s.schemeSaid = true
			s.log.Error().Err(err).Msg("the cloud's address has the wrong scheme; every request fails until CLOUD_BASE_URL is changed (said once)")
		}
		s.counts.failures++
		return false, err
	case cloud.IsRejected(err):
		s.keyAcceptedLocked(a.lastSent) // a 400 or 404 comes after the key was checked
		s.counts.failures++
		return false, err
	}
	a.failures++
	if s.closed {
		s.counts.failures++
		return false, err
	}
	if a.giveUpAt.IsZero() && a.failures >= s.cfg.MaxAttempts || !a.giveUpAt.IsZero() && !now.Before(a.giveUpAt) {
		ev(s.log.Warn()).Err(err).Msg("giving up after transient failures")
		s.counts.failures++
		return false, fmt.Errorf("scheduler: gave up after %d attempts: %w", a.sent, err)
	}
	wait := s.backoff(a.failures)
	if !a.giveUpAt.IsZero() && now.Add(wait).After(a.giveUpAt) {
		wait = max(a.giveUpAt.Sub(now), 0) // one last try when the command is due to give up
	}
	a.notBefore = now.Add(wait)
	ev(s.log.Debug()).Err(err).Time("retry_at", a.notBefore).Msg("transient failure, will retry")
	return true, nil
}

// keyAcceptedLocked takes an answer past the key check (a success, a 400 or
// 404) to a request sent at sent. Only a request sent once the refusal's
// hold-off was over says the key is accepted now: one sent before the
// refusal came back was checked before it or beside it, so the hold-off
// stands, and with it the refusal that every request held back wraps
// (authHoldErrLocked).
func (s *Scheduler) keyAcceptedLocked(sent time.Time) {
	if !sent.Before(s.authUntil) {
		s.authErr = nil
	}
}

// authHoldErrLocked is the error of a request held back by the hold-off
// after a refused key: ErrAuthHoldoff wrapping the refusal.
func (s *Scheduler) authHoldErrLocked() error {
	if s.authErr == nil {
		return ErrAuthHoldoff
	}
	return fmt.Errorf("%w: %w", ErrAuthHoldoff, s.authErr)
}

// backoff is the wait before the nth retry: RetryBase doubled per retry,
// capped at RetryMax, with jitter (between half and all of it).
func (s *Scheduler) backoff(n int) time.Duration {
	d := Backoff(RetryBase, RetryMax, n)
	half := d / 2
	return half + rand.N(d-half+1)
}

// Backoff is the exponential back-off used for every retry of the bridge:
// base after n ≤ 1 failures, doubled for each further one, capped at limit.
func Backoff(base, limit time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}
