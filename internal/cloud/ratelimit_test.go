package cloud

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var rlNow = time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC)

func TestParseRateLimits(t *testing.T) {
	inAnHour := rlNow.Add(time.Hour)
	cases := []struct {
		name     string
		header   http.Header
		quota    RateLimit
		short    RateLimit
		problems []string // headers named as unreadable
	}{
		{name: "absent", header: http.Header{}},
		{
			name: "reset in seconds from now",
			header: http.Header{"Api-Ratelimit-Limit": {"10000"}, "Api-Ratelimit-Remaining": {"9876"},
				"Api-Ratelimit-Reset": {"3600"}},
			quota: RateLimit{Limit: 10000, Remaining: 9876, HasRemaining: true, Reset: inAnHour},
		},
		{
			name:   "reset in Unix seconds",
			header: http.Header{"Api-Ratelimit-Limit": {"10000"}, "Api-Ratelimit-Reset": {strconv.FormatInt(inAnHour.Unix(), 10)}},
			quota:  RateLimit{Limit: 10000, Reset: inAnHour},
		},
		{
			name:   "reset in Unix milliseconds",
			header: http.Header{"Api-Ratelimit-Remaining": {"0"}, "Api-Ratelimit-Reset": {strconv.FormatInt(inAnHour.UnixMilli(), 10)}},
			quota:  RateLimit{Remaining: 0, HasRemaining: true, Reset: inAnHour},
		},
		{
			name:   "reset as an HTTP date",
			header: http.Header{"Api-Ratelimit-Reset": {inAnHour.Format(http.TimeFormat)}},
			quota:  RateLimit{Reset: inAnHour},
		},
		{
			name:   "fractional seconds from now",
			header: http.Header{"X-Ratelimit-Reset": {"1.5"}},
			short:  RateLimit{Reset: rlNow.Add(1500 * time.Millisecond)},
		},
		{
			name:   "an absolute reset just past is a window ending now",
			header: http.Header{"X-Ratelimit-Reset": {strconv.FormatInt(rlNow.Add(-2*time.Second).Unix(), 10)}},
			short:  RateLimit{Reset: rlNow},
		},
		{
			name: "the short window apart from the quota",
			header: http.Header{"Api-Ratelimit-Limit": {"10000"}, "X-Ratelimit-Limit": {"100"},
				"X-Ratelimit-Remaining": {"7"}, "X-Ratelimit-Reset": {"42"}},
			quota: RateLimit{Limit: 10000},
			short: RateLimit{Limit: 100, Remaining: 7, HasRemaining: true, Reset: rlNow.Add(42 * time.Second)},
		},
		{
			name:   "the list form of the IETF draft: its first item",
			header: http.Header{"X-Ratelimit-Limit": {"100, 100;w=60"}, "X-Ratelimit-Remaining": {" 50 "}},
			short:  RateLimit{Limit: 100, Remaining: 50, HasRemaining: true},
		},
		{
			name: "garbage is left out, the rest of the triple stands",
			header: http.Header{"Api-Ratelimit-Limit": {"lots"}, "Api-Ratelimit-Remaining": {"12"},
				"Api-Ratelimit-Reset": {"-5"}, "X-Ratelimit-Limit": {"0"}, "X-Ratelimit-Remaining": {"1e3"},
				"X-Ratelimit-Reset": {"NaN"}},
			quota:    RateLimit{Remaining: 12, HasRemaining: true},
			problems: []string{"Api-Ratelimit-Limit", "Api-Ratelimit-Reset", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"},
		},
		{
			name:     "more left than the limit",
			header:   http.Header{"Api-Ratelimit-Limit": {"10"}, "Api-Ratelimit-Remaining": {"11"}},
			quota:    RateLimit{Limit: 10},
			problems: []string{"Api-Ratelimit-Remaining"},
		},
		{
			name: "resets out of bounds",
			header: http.Header{"Api-Ratelimit-Reset": {"999999999"}, // 31 years from now
				"X-Ratelimit-Reset": {"50000000000"}}, // neither seconds nor milliseconds
			problems: []string{"Api-Ratelimit-Reset", "X-Ratelimit-Reset"},
		},
		{
			name:     "an absolute reset long past",
			header:   http.Header{"Api-Ratelimit-Reset": {strconv.FormatInt(rlNow.Add(-48*time.Hour).Unix(), 10)}},
			problems: []string{"Api-Ratelimit-Reset"},
		},
		{
			name:     "a count too large",
			header:   http.Header{"Api-Ratelimit-Limit": {"99999999999"}},
			problems: []string{"Api-Ratelimit-Limit"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, problems := parseRateLimits(tc.header, rlNow)
			if !sameWindow(l.Quota, tc.quota) || !sameWindow(l.Short, tc.short) {
				t.Errorf("got quota %+v short %+v\nwant quota %+v short %+v", l.Quota, l.Short, tc.quota, tc.short)
			}
			var named []string
			for _, p := range problems {
				named = append(named, p.header)
			}
			if strings.Join(named, ",") != strings.Join(tc.problems, ",") {
				t.Errorf("problems %v, want %v", problems, tc.problems)
			}
			if l.Known() != (tc.quota.Known() || tc.short.Known()) {
				t.Errorf("Known() = %v", l.Known())
			}
		})
	}
}

func sameWindow(a, b RateLimit) bool {
	return a.Limit == b.Limit && a.Remaining == b.Remaining && a.HasRemaining == b.HasRemaining && a.Reset.Equal(b.Reset)
}

// Every answer's headers reach OnLimits, a success's as a failure's, and
// a 429 that says the quota is spent says so, and when it renews, in its
// error.
func TestOnLimitsEveryAnswer(t *testing.T) {
	reset := time.Now().Add(time.Hour).Truncate(time.Second)
	var mu sync.Mutex
	var got []RateLimits
	status := 200
	c, logs := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		st := status
		mu.Unlock()
		w.Header().Set(HeaderQuotaLimit, "45")
		w.Header().Set(HeaderQuotaReset, strconv.FormatInt(reset.Unix(), 10))
		if st == 429 {
			w.Header().Set(HeaderQuotaRemaining, "0")
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(429)
			return
		}
		w.Header().Set(HeaderQuotaRemaining, "44")
		w.Header().Set(HeaderShortLimit, "garbage")
		_, _ = w.Write([]byte(`{"code":200,"message":"success","data":[]}`))
	}, func(cfg *Config) {
		cfg.OnLimits = func(l RateLimits) {
			mu.Lock()
			got = append(got, l)
			mu.Unlock()
		}
	})
	for range 2 {
		if _, err := c.ListDevices(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	status = 429
	mu.Unlock()
	_, err := c.ListDevices(t.Context())
	var ae *APIError
	if !errors.As(err, &ae) || ae.Kind != ErrRateLimited {
		t.Fatalf("err = %v, want a 429", err)
	}
	if w, spent := ae.Limits.Spent(); !spent || w.Limit != 45 || !w.Reset.Equal(reset) {
		t.Errorf("the 429's limits %+v do not say the quota of 45 is spent until %v", ae.Limits, reset)
	}
	if msg := err.Error(); !strings.Contains(msg, "quota of 45 is spent") || !strings.Contains(msg, reset.UTC().Format(time.RFC3339)) {
		t.Errorf("the error %q does not say the quota is spent and when it renews", msg)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("OnLimits called %d times, want once per answer (3)", len(got))
	}
	if got[0].Quota.Remaining != 44 || got[0].Quota.Limit != 45 || got[2].Quota.Remaining != 0 {
		t.Errorf("OnLimits got %+v", got)
	}
	if w := logs.warnings(t); len(w) != 1 || w[0]["header"] != "X-Ratelimit-Limit" {
		t.Errorf("want one warning naming X-Ratelimit-Limit for two garbage answers, got %v", w)
	}
}

// Answers without the headers change nothing: OnLimits is not called, and
// an error carries no limits.
func TestNoHeadersNoLimits(t *testing.T) {
	called := false
	c, _ := newTestClient(t, answerWith(429, `{"code":429,"msg":"Too Many Requests"}`, "Retry-After", "7"),
		func(cfg *Config) { cfg.OnLimits = func(RateLimits) { called = true } })
	_, err := c.ListDevices(t.Context())
	var ae *APIError
	if !errors.As(err, &ae) || ae.Limits.Known() {
		t.Fatalf("err = %#v", err)
	}
	if called {
		t.Error("OnLimits called for an answer without rate-limit headers")
	}
	if !strings.Contains(err.Error(), "retry after 7s") {
		t.Errorf("a 429 without headers lost its hint: %v", err)
	}
}

// TestResetOnTheConfiguredClock: a reset given in seconds from now is an
// instant of Config.Now's clock, the one the daemon's scheduler compares
// it with (a test's jumped clock, or the real one).
func TestResetOnTheConfiguredClock(t *testing.T) {
	noon := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var got RateLimits
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(HeaderQuotaLimit, "45")
		w.Header().Set(HeaderQuotaRemaining, "44")
		w.Header().Set(HeaderQuotaReset, "90")
		_, _ = w.Write([]byte(`{"code":200,"message":"success","data":[]}`))
	}, func(cfg *Config) {
		cfg.Now = func() time.Time { return noon }
		cfg.OnLimits = func(l RateLimits) { got = l }
	})
	if _, err := c.ListDevices(t.Context()); err != nil {
		t.Fatal(err)
	}
	if want := noon.Add(90 * time.Second); !got.Quota.Reset.Equal(want) {
		t.Errorf("reset %s, want %s (90 s after the configured clock's now)", got.Quota.Reset, want)
	}
}
