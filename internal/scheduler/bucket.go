package scheduler

import (
	"math"
	"time"

	"golang.org/x/time/rate"
)

// bucket mirrors one of the cloud's token buckets, pessimistically: a
// request holds a token while on the wire and takes it when its answer
// arrives, the latest instant the cloud could have taken it, so that
// whatever the latency no request finds the cloud's bucket empty.
//
// Every method is called under the scheduler's lock with instants that
// never go backwards (rate.Limiter credits time twice if they do).
type bucket struct {
	lim      *rate.Limiter
	inflight int
}

func newBucket(l Limit) *bucket {
	return &bucket{lim: rate.NewLimiter(l.Rate, l.Burst)}
}

// readyAt returns the instant from which one more request may be sent, or
// the zero time when only an answer can free a token (the bucket is
// committed up to its burst).
func (b *bucket) readyAt(now time.Time) time.Time {
	need := float64(b.inflight + 1)
	tokens := b.lim.TokensAt(now)
	if tokens >= need {
		return now
	}
	if need > float64(b.lim.Burst()) {
		return time.Time{}
	}
	secs := (need - tokens) / float64(b.lim.Limit())
	// Round up to the microsecond so the instant really holds the token.
	wait := time.Duration(math.Ceil(secs*1e6)) * time.Microsecond
	return now.Add(wait)
}

// ready reports whether a request may be sent now.
func (b *bucket) ready(now time.Time) bool {
	return b.lim.TokensAt(now) >= float64(b.inflight+1)
}

// send counts a request on the wire.
func (b *bucket) send() { b.inflight++ }

// answered takes the token of a request whose answer arrived.
func (b *bucket) answered(now time.Time) {
	b.inflight--
	b.lim.ReserveN(now, 1)
}

// limited records a 429 for a request on the wire: the cloud's bucket is
// empty now, so ours is emptied too.
func (b *bucket) limited(now time.Time) {
	b.inflight--
	b.empty(now)
}

// empty takes every whole token left.
func (b *bucket) empty(now time.Time) {
	if t := b.lim.TokensAt(now); t > 0 {
		b.lim.ReserveN(now, int(math.Ceil(t)))
	}
}

// left is the tokens not yet promised to a request on the wire.
func (b *bucket) left(now time.Time) float64 {
	return b.lim.TokensAt(now) - float64(b.inflight)
}

// idle reports whether the bucket is full with nothing on the wire, so
// forgetting it (a new bucket starts full) changes nothing.
func (b *bucket) idle(now time.Time) bool {
	return b.inflight == 0 && b.lim.TokensAt(now) >= float64(b.lim.Burst())
}
