package cloudsim

import (
	"net/http"
	"strconv"
	"time"

	"cloud2mqtt/internal/cloud"
)

// Quota is Limit requests in each Window, as the live service is reported
// to keep. Windows are aligned on the Unix epoch, so a 24 h window renews
// at midnight UTC; a zero Limit turns it off.
type Quota struct {
	Limit  int
	Window time.Duration
	// Reset is how the headers say when the window renews.
	Reset ResetFormat
}

// ResetFormat is a form of the Reset header (all three are seen in the wild).
type ResetFormat int

const (
	ResetSeconds   ResetFormat = iota // seconds from now (the default)
	ResetUnix                         // Unix seconds
	ResetUnixMilli                    // Unix milliseconds
)

// ParseResetFormat reads a ResetFormat's name: "seconds", "unix" or
// "unix-ms".
func ParseResetFormat(s string) (ResetFormat, bool) {
	switch s {
	case "seconds", "":
		return ResetSeconds, true
	case "unix":
		return ResetUnix, true
	case "unix-ms":
		return ResetUnixMilli, true
	}
	return 0, false
}

// Buckets of the quota's refusals, as counted in Counts.RateLimited.
const (
	BucketQuota      = "quota"       // Options.Quota (API-RateLimit-*)
	BucketShortQuota = "short-quota" // Options.ShortQuota (X-RateLimit-*)
)

func (q Quota) on() bool { return q.Limit > 0 && q.Window > 0 }

// quotaWindow is one Quota's count.
type quotaWindow struct {
	Quota
	bucket  string
	headers [3]string // limit, remaining, reset
	slot    int64     // the window the count is of
	used    int
}

func newQuotaWindow(q Quota, bucket string, limit, remaining, reset string) *quotaWindow {
	if !q.on() {
		return nil
	}
	return &quotaWindow{Quota: q, bucket: bucket, headers: [3]string{limit, remaining, reset}}
}

// roll starts a new count when now is in a later window.
func (w *quotaWindow) roll(now time.Time) {
	if slot := now.UnixNano() / int64(w.Window); slot != w.slot {
		w.slot, w.used = slot, 0
	}
}

func (w *quotaWindow) reset() time.Time { return time.Unix(0, (w.slot+1)*int64(w.Window)) }

// setHeaders tells what is left of the window.
func (w *quotaWindow) setHeaders(h http.Header, now time.Time) {
	h.Set(w.headers[0], strconv.Itoa(w.Limit))
	h.Set(w.headers[1], strconv.Itoa(max(w.Limit-w.used, 0)))
	var v string
	switch reset := w.reset(); w.Reset {
	case ResetUnix:
		v = strconv.FormatInt((reset.UnixNano()+int64(time.Second)-1)/int64(time.Second), 10)
	case ResetUnixMilli:
		v = strconv.FormatInt(reset.UnixMilli(), 10)
	default:
		v = strconv.FormatInt(retryAfterSeconds(reset.Sub(now)), 10)
	}
	h.Set(w.headers[2], v)
}

// quotas are the account's windows; s.mu guards them.
type quotas struct{ w []*quotaWindow }

func newQuotas(o Options) quotas {
	var q quotas
	if w := newQuotaWindow(o.Quota, BucketQuota, cloud.HeaderQuotaLimit, cloud.HeaderQuotaRemaining, cloud.HeaderQuotaReset); w != nil {
		q.w = append(q.w, w)
	}
	if w := newQuotaWindow(o.ShortQuota, BucketShortQuota, cloud.HeaderShortLimit, cloud.HeaderShortRemaining, cloud.HeaderShortReset); w != nil {
		q.w = append(q.w, w)
	}
	return q
}

// spend counts one request against every window, or refuses it (counting
// nothing) when one is spent; the headers say what is left after it.
func (s *Sim) spend(now time.Time) (http.Header, *answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.quotas.w) == 0 {
		return nil, nil
	}
	var refused *quotaWindow
	for _, w := range s.quotas.w {
		w.roll(now)
		if w.used >= w.Limit && (refused == nil || w.reset().After(refused.reset())) {
			refused = w
		}
	}
	if refused == nil {
		for _, w := range s.quotas.w {
			w.used++
		}
	}
	h := http.Header{}
	for _, w := range s.quotas.w {
		w.setHeaders(h, now)
	}
	if refused == nil {
		return h, nil
	}
	a := s.tooMany("", refused.bucket, refused.reset().Sub(now))
	for k, v := range h {
		a.header[k] = v
	}
	return h, a
}

// QuotaLeft is what is left of the account's quota (Options.Quota) now,
// and when it renews; ok is false without one.
func (s *Sim) QuotaLeft() (left int, renews time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.quotas.w {
		if w.bucket == BucketQuota {
			w.roll(s.now())
			return w.Limit - w.used, w.reset(), true
		}
	}
	return 0, time.Time{}, false
}

// SpendQuota spends up to n requests of every quota window, as another app
// sharing the account would, and returns how many it spent.
func (s *Sim) SpendQuota(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	spent := 0
	for _, w := range s.quotas.w {
		w.roll(s.now())
		k := max(min(n, w.Limit-w.used), 0)
		w.used += k
		if w.bucket == BucketQuota {
			spent = k
		}
	}
	return spent
}
