package scheduler_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

// quotaAccount is an account with a quota of limit requests in windows of
// window, aligned on multiples of it since the Unix epoch (as cloudsim's
// are): a request beyond the quota is answered 429, and every answer says
// what is left, as the live service is reported to.
type quotaAccount struct {
	limit  int
	window time.Duration

	mu   sync.Mutex
	used map[int64]int
	n429 int
}

func newQuotaAccount(f *fakeCloud, limit int, window time.Duration) *quotaAccount {
	q := &quotaAccount{limit: limit, window: window, used: map[int64]int{}}
	f.fail = func(call, int) error { return q.take() }
	f.limits = func(_ call, err error) cloud.RateLimits { return q.headers(err) }
	return q
}

func (q *quotaAccount) slot(now time.Time) int64 { return now.UnixNano() / int64(q.window) }

func (q *quotaAccount) reset(now time.Time) time.Time {
	return time.Unix(0, (q.slot(now)+1)*int64(q.window))
}

func (q *quotaAccount) take() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	if q.used[q.slot(now)] >= q.limit {
		q.n429++
		return &cloud.APIError{Kind: cloud.ErrRateLimited, Endpoint: cloud.EndpointState, HTTPStatus: 429, Msg: "too many requests",
			RetryAfter: q.reset(now).Sub(now)}
	}
	q.used[q.slot(now)]++
	return nil
}

func (q *quotaAccount) headers(error) cloud.RateLimits {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	return cloud.RateLimits{At: now, Quota: cloud.RateLimit{Limit: q.limit, Remaining: q.limit - q.used[q.slot(now)],
		HasRemaining: true, Reset: q.reset(now)}}
}

func (q *quotaAccount) rateLimited() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n429
}

// A 429 whose headers say the quota is spent holds every read and command
// until the quota renews: commands stay queued, the latest value of each
// instance wins, reads on request hear why and until when, and everything
// goes once the window renews.
func TestQuotaSpentHoldsUntilItRenews(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.respond = func(call) time.Duration { return 100 * time.Millisecond }
		acct := newQuotaAccount(f, 5, time.Minute)
		s := newScheduler(f, scheduler.Config{})
		f.observe = s.ObserveLimits
		stop := run(t, s)
		defer stop()
		t0 := time.Now()
		renews := t0.Add(time.Minute)

		var mu sync.Mutex
		var errs []error
		for i := range 8 {
			err := s.State("H6008", fmt.Sprintf("d%d", i), scheduler.PriorityPoll, func(_ cloud.DeviceState, err error) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second) // the answers are back
		if n := len(f.Calls()); n != 7 {
			t.Fatalf("%d requests before the first answers, want 7 (the read slots)", n)
		}
		h, held := s.Held("H6008", "d7")
		if !held || !h.Until.Equal(renews) {
			t.Fatalf("Held = %+v, %v; want held until the quota renews at %v", h, held, renews)
		}
		var qe *scheduler.QuotaError
		if !errors.Is(h.Err, scheduler.ErrQuotaSpent) || !errors.As(h.Err, &qe) || qe.Window.Limit != 5 {
			t.Errorf("the hold's error %v does not say the quota of 5 is spent", h.Err)
		}
		if _, limited := cloud.IsRateLimited(h.Err); !limited {
			t.Errorf("the hold's error %v does not carry the 429 (the bridge answers it with code 429)", h.Err)
		}
		if msg := h.Err.Error(); !strings.Contains(msg, "renews at "+renews.UTC().Format(time.RFC3339)) {
			t.Errorf("the hold's error %q does not say when the quota renews", msg)
		}

		// Commands wait too; a newer value replaces a queued one.
		rep := newReports(t)
		first := rep.submit(s, ctl("d0", "brightness", int64(10)))
		second := rep.submit(s, ctl("d0", "brightness", int64(20)))
		time.Sleep(58 * time.Second)
		synctest.Wait()
		if n := len(f.Calls()); n != 7 {
			t.Fatalf("%d requests before the quota renewed, want none after the 7 first", n)
		}
		if res := rep.result(first); !errors.Is(res.Err, capability.ErrSuperseded) {
			t.Errorf("the first command: %v, want superseded by the second", res.Err)
		}

		time.Sleep(2 * time.Second)
		synctest.Wait()
		if res := rep.result(second); res.Err != nil || f.Value("d0", "brightness") != int64(20) {
			t.Errorf("the second command after the renewal: %+v, value %v", res, f.Value("d0", "brightness"))
		}
		for _, c := range f.Calls()[7:] {
			if c.at.Before(renews) {
				t.Errorf("%v sent at %v, before the quota renewed", c, c.at)
			}
		}
		mu.Lock()
		n := len(errs)
		mu.Unlock()
		if n != 8 {
			t.Errorf("%d of 8 reads reported after the renewal", n)
		}
		if got := acct.rateLimited(); got != 2 {
			t.Errorf("%d requests answered 429, want only the 2 already on the wire when the quota ran out", got)
		}
		q := s.Quota().Windows[scheduler.WindowQuota]
		if q.Limit != 5 || !q.Paced() || q.Span != time.Minute || q.Remaining != 5-4 {
			t.Errorf("learned quota %+v, want 5 a minute with 1 left", q)
		}
		rep.checkOnce()
	})
}

// A quota that renews in an hour holds for MaxRetryAfter (5 min) at a time;
// then one request at a time finds out whether it renewed.
func TestQuotaHoldCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		newQuotaAccount(f, 2, 24*time.Hour)
		s := newScheduler(f, scheduler.Config{})
		f.observe = s.ObserveLimits
		stop := run(t, s)
		defer stop()
		time.Sleep(12 * time.Hour) // mid-window: the quota renews in 12 h
		t0 := time.Now()
		read := func(dev string) {
			if err := s.State("H6008", dev, scheduler.PriorityPoll, nil); err != nil {
				t.Fatal(err)
			}
		}
		read("a")
		synctest.Wait()
		read("b") // the answer of a said 1 left
		synctest.Wait()
		h, held := s.Held("H6008", "c")
		if !held || !h.Until.Equal(t0.Add(5*time.Minute)) {
			t.Fatalf("Held = %+v, %v; want the hold capped at 5 min (the answer said 0 left)", h, held)
		}
		for _, d := range []string{"c", "d", "e"} {
			read(d)
		}
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		calls := f.Calls()
		if len(calls) != 3 {
			t.Fatalf("%d requests after the capped hold, want 1 (one request finds out): %v", len(calls)-2, calls)
		}
		if h, held := s.Held("H6008", "d"); !held || !h.Until.Equal(t0.Add(10*time.Minute)) {
			t.Errorf("after the probe's 429: Held = %+v, %v; want another 5 min", h, held)
		}
	})
}

// Without rate-limit headers nothing is known and nothing is held.
func TestNoHeadersNoQuota(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := newScheduler(f, scheduler.Config{})
		stop := run(t, s)
		defer stop()
		for i := range 20 {
			if err := s.State("H6008", fmt.Sprintf("d%d", i), scheduler.PriorityPoll, nil); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		q := s.Quota()
		if q.Known() || !q.HeldUntil.IsZero() || q.Pending != 0 {
			t.Errorf("quota %+v without headers", q)
		}
		if _, held := s.Held("H6008", "d1"); held {
			t.Error("a read is held without any header")
		}
	})
}

// The model: within a window what is left only goes down (answers
// overtake each other) and falls with the requests counted since; an
// ended window is renewed with its limit until an answer says; the span
// is learned from the answers.
func TestQuotaModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := newScheduler(f, scheduler.Config{})
		var next cloud.RateLimits
		f.limits = func(c call, _ error) cloud.RateLimits {
			if c.device == "says" {
				return next
			}
			return cloud.RateLimits{}
		}
		f.observe = s.ObserveLimits
		stop := run(t, s)
		defer stop()
		t0 := time.Now()
		// say is a read whose answer says what is left.
		say := func(remaining int, reset time.Time) {
			next = cloud.RateLimits{At: time.Now(), Quota: cloud.RateLimit{Limit: 45, Remaining: remaining, HasRemaining: true, Reset: reset}}
			if err := s.State("H6008", "says", scheduler.PriorityPoll, nil); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			time.Sleep(2 * time.Second) // the device's state bucket
		}
		say(40, t0.Add(100*time.Second))
		say(41, t0.Add(100*time.Second)) // an older answer, overtaken
		w := s.Quota().Windows[scheduler.WindowQuota]
		if w.Remaining != 40 || !w.Reset.Equal(t0.Add(100*time.Second)) || w.Span != 100*time.Second {
			t.Fatalf("after two answers: %+v", w)
		}
		// Two requests answered without headers: 38 left.
		for _, d := range []string{"a", "b"} {
			if err := s.State("H6008", d, scheduler.PriorityPoll, nil); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if w := s.Quota().Windows[scheduler.WindowQuota]; w.Remaining != 38 {
			t.Errorf("after two requests without headers: %d left, want 38", w.Remaining)
		}
		time.Sleep(time.Until(t0.Add(101 * time.Second)))
		w = s.Quota().Windows[scheduler.WindowQuota]
		if !w.Renewed || w.Remaining != 45 || !w.Reset.Equal(t0.Add(200*time.Second)) {
			t.Errorf("after the reset: %+v, want renewed with 45 left until one span later", w)
		}
		say(44, t0.Add(280*time.Second)) // the new window: 180 s from the end of the last
		w = s.Quota().Windows[scheduler.WindowQuota]
		if w.Renewed || w.Remaining != 44 || w.Span != 180*time.Second {
			t.Errorf("after an answer of the new window: %+v", w)
		}
		if s.Quota().Windows[scheduler.WindowShort].Known() {
			t.Error("the short window is known though no answer described it")
		}
	})
}

// The pace is the requests that reached the cloud a second, over the last
// ten minutes.
func TestQuotaPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := newScheduler(f, scheduler.Config{})
		stop := run(t, s)
		defer stop()
		for i := range 120 {
			if err := s.State("H6008", fmt.Sprintf("d%d", i%10), scheduler.PriorityPoll, nil); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Second)
		}
		q := s.Quota()
		if q.PaceOver != 4*time.Minute || q.Pace < 0.49 || q.Pace > 0.51 {
			t.Errorf("pace %v over %v, want 0.5/s over 4 min", q.Pace, q.PaceOver)
		}
		time.Sleep(20 * time.Minute)
		if q := s.Quota(); q.Pace != 0 || q.PaceOver != 10*time.Minute {
			t.Errorf("after 20 quiet minutes: pace %v over %v", q.Pace, q.PaceOver)
		}
	})
}
