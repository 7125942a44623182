package cloud

// The service's rate-limit headers: how much of the account's quota is
// left, read from every answer, success or not.

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// The headers of the two windows the live service is reported to send on
// its answers: API-RateLimit-* is the account's quota (requests a day on
// the live service), X-RateLimit-* a shorter window. Each is a triple:
// the requests the window allows, those left, and when it ends.
const (
	HeaderQuotaLimit     = "API-RateLimit-Limit"
	HeaderQuotaRemaining = "API-RateLimit-Remaining"
	HeaderQuotaReset     = "API-RateLimit-Reset"
	HeaderShortLimit     = "X-RateLimit-Limit"
	HeaderShortRemaining = "X-RateLimit-Remaining"
	HeaderShortReset     = "X-RateLimit-Reset"
)

// windowHeaders are one triple's names as net/http keys them (canonical),
// looked up without canonicalising them again on every answer.
type windowHeaders struct{ limit, remaining, reset string }

var (
	quotaHeaders = windowHeaders{http.CanonicalHeaderKey(HeaderQuotaLimit), http.CanonicalHeaderKey(HeaderQuotaRemaining), http.CanonicalHeaderKey(HeaderQuotaReset)}
	shortHeaders = windowHeaders{http.CanonicalHeaderKey(HeaderShortLimit), http.CanonicalHeaderKey(HeaderShortRemaining), http.CanonicalHeaderKey(HeaderShortReset)}
)

// Bounds of a plausible header value: anything outside is garbage, ignored
// (with one warning per header and client).
const (
	maxRateCount = 1_000_000_000
	// A window ends at most this far ahead; an absolute Reset this far in
	// the past is garbage, one less far in the past is a window that has
	// just ended (the clocks differ a little).
	maxResetAhead = 31 * 24 * time.Hour
	maxResetPast  = 24 * time.Hour
	// Reset's three forms told apart by size: below unixSeconds it is
	// seconds from now (1e9 s are 31 years), from there to unixGap Unix
	// seconds (2001 to 5138), from unixMillis on Unix milliseconds (2001
	// on); what lies between is neither.
	unixSeconds = 1e9
	unixGap     = 1e11
	unixMillis  = 1e12
	unixMaxMs   = 1e14
)

// RateLimit is one window of requests as an answer's headers describe it.
type RateLimit struct {
	// Limit is the requests the window allows; 0 when the answer did not
	// say (or said nonsense).
	Limit int
	// Remaining is what is left of them when the answer was made, valid
	// when HasRemaining.
	Remaining    int
	HasRemaining bool
	// Reset is when the window ends and Remaining starts again from
	// Limit; zero when the answer did not say.
	Reset time.Time
}

// Known reports whether the answer said anything of this window.
func (r RateLimit) Known() bool { return r.Limit > 0 || r.HasRemaining || !r.Reset.IsZero() }

// Spent reports whether the answer said nothing is left of the window.
func (r RateLimit) Spent() bool { return r.HasRemaining && r.Remaining == 0 }

// String reads like "0 of 10000 left until 2026-11-25T00:00:00Z".
func (r RateLimit) String() string {
	var b strings.Builder
	switch {
	case r.HasRemaining && r.Limit > 0:
		fmt.Fprintf(&b, "%d of %d left", r.Remaining, r.Limit)
	case r.HasRemaining:
		fmt.Fprintf(&b, "%d left", r.Remaining)
	case r.Limit > 0:
		fmt.Fprintf(&b, "limit %d", r.Limit)
	default:
		b.WriteString("unknown")
	}
	if !r.Reset.IsZero() {
		b.WriteString(" until ")
		b.WriteString(r.Reset.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// RateLimits is what one answer said of the account's windows.
type RateLimits struct {
	Quota RateLimit // API-RateLimit-*: the account's quota
	Short RateLimit // X-RateLimit-*: a shorter window
	// At is when the answer arrived (the instant "seconds from now" counts from).
	At time.Time
}

// Known reports whether the answer carried any rate-limit header that could
// be read.
func (l RateLimits) Known() bool { return l.Quota.Known() || l.Short.Known() }

// Spent returns the window the answer said is spent (the quota's first),
// if any.
func (l RateLimits) Spent() (RateLimit, bool) {
	switch {
	case l.Quota.Spent():
		return l.Quota, true
	case l.Short.Spent():
		return l.Short, true
	}
	return RateLimit{}, false
}

// headerProblem is a rate-limit header whose value was ignored.
type headerProblem struct {
	header, value, why string
}

// parseRateLimits reads both triples from an answer's headers at now. A
// value that cannot be read is left out of the result and named in
// problems; the rest of its triple stands.
func parseRateLimits(h http.Header, now time.Time) (l RateLimits, problems []headerProblem) {
	l.At = now
	l.Quota, problems = parseWindow(h, quotaHeaders, now, problems)
	l.Short, problems = parseWindow(h, shortHeaders, now, problems)
	return l, problems
}

func parseWindow(h http.Header, names windowHeaders, now time.Time, problems []headerProblem) (RateLimit, []headerProblem) {
	var w RateLimit
	if v, ok := first(h, names.limit); ok {
		switch n, why := parseCount(v); {
		case why != "":
			problems = append(problems, headerProblem{names.limit, v, why})
		case n == 0:
			problems = append(problems, headerProblem{names.limit, v, "a window of no requests"})
		default:
			w.Limit = n
		}
	}
	if v, ok := first(h, names.remaining); ok {
		switch n, why := parseCount(v); {
		case why != "":
			problems = append(problems, headerProblem{names.remaining, v, why})
		case w.Limit > 0 && n > w.Limit:
			problems = append(problems, headerProblem{names.remaining, v, "more left than the limit allows"})
		default:
			w.Remaining, w.HasRemaining = n, true
		}
	}
	if v, ok := first(h, names.reset); ok {
		if t, why := parseReset(v, now); why != "" {
			problems = append(problems, headerProblem{names.reset, v, why})
		} else {
			w.Reset = t
		}
	}
	return w, problems
}

// first returns the header's first value, if the answer has the header.
func first(h http.Header, key string) (string, bool) {
	vs := h[key]
	if len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

// item is a header value's first element: "100, 100;w=60" (the IETF
// draft's list form) reads as "100".
func item(v string) string {
	if i := strings.IndexAny(v, ",;"); i >= 0 {
		v = v[:i]
	}
	return strings.TrimSpace(v)
}

// parseCount reads a count of requests: a whole number from 0 to
// maxRateCount.
func parseCount(v string) (int, string) {
	n, err := strconv.Atoi(item(v))
	switch {
	case err != nil:
		return 0, "not a whole number"
	case n < 0:
		return 0, "negative"
	case n > maxRateCount:
		return 0, "implausibly large"
	}
	return n, ""
}

// parseReset reads when a window ends: seconds from now, Unix seconds or
// Unix milliseconds (told apart by size, see unixSeconds), or an HTTP date.
func parseReset(v string, now time.Time) (time.Time, string) {
	s := item(v)
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t, derr := http.ParseTime(strings.TrimSpace(v))
		if derr != nil {
			return time.Time{}, "neither a number of seconds nor a date"
		}
		return checkReset(t, now)
	}
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return time.Time{}, "not a number"
	case x < 0:
		return time.Time{}, "negative"
	case x < unixSeconds:
		if d := time.Duration(x * float64(time.Second)); d <= maxResetAhead {
			return now.Add(d), ""
		}
		return time.Time{}, "further ahead than a month"
	case x < unixGap:
		sec, frac := math.Modf(x)
		return checkReset(time.Unix(int64(sec), int64(frac*1e9)), now)
	case x >= unixMillis && x < unixMaxMs:
		return checkReset(time.UnixMilli(int64(x)), now)
	}
	return time.Time{}, "neither seconds from now, Unix seconds nor Unix milliseconds"
}

// checkReset bounds an absolute reset: a month ahead at most; a little in
// the past (the clocks differ) is a window ending now.
func checkReset(t, now time.Time) (time.Time, string) {
	switch {
	case t.Sub(now) > maxResetAhead:
		return time.Time{}, "further ahead than a month"
	case now.Sub(t) > maxResetPast:
		return time.Time{}, "more than a day in the past"
	case t.Before(now):
		return now, ""
	}
	return t, ""
}

// readRateLimits reads an answer's rate-limit headers, warning once per
// header (and client) about a value it cannot read.
func (c *Client) readRateLimits(h http.Header, now time.Time) RateLimits {
	l, problems := parseRateLimits(h, now)
	for _, p := range problems {
		c.warnOnce("rate-limit-header:"+p.header, func(ev *zerolog.Event) {
			ev.Str("header", p.header).Str("value", c.clean(clipHeader(p.value))).Str("problem", p.why).
				Msg("a rate-limit header of the cloud's answer cannot be read; ignored (said once per header)")
		})
	}
	return l
}

func clipHeader(v string) string {
	const n = 40
	if len(v) > n {
		return v[:n] + "…"
	}
	return v
}
