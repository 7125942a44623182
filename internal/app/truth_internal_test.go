package app

import (
	"errors"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

func TestExposedAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		":9090": true, "0.0.0.0:9090": true, "[::]:9090": true,
		"127.0.0.1:9090": false, "[::1]:9090": false, "localhost:9090": false, "192.168.1.5:9090": false,
		"nonsense": false,
	} {
		if got := exposedAddr(addr); got != want {
			t.Errorf("exposedAddr(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestCloudFailing: the cloud counts as away after the grace, or after
// failingAfter requests in a row that never reached it (a few error answers
// are a blip), and the reason names the cloud and the
// last error; an answer ends it.
func TestCloudFailing(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	refused := &cloud.APIError{Kind: cloud.ErrTransient, Endpoint: "state", Msg: "the request failed", Err: errors.New("connection refused")}
	answered := &cloud.APIError{Kind: cloud.ErrTransient, Endpoint: "state", HTTPStatus: 503, Msg: "service unavailable"}
	limited := &cloud.APIError{Kind: cloud.ErrRateLimited, Endpoint: "state", HTTPStatus: 429, Msg: "Too Many Requests", RetryAfter: time.Hour}
	for _, tc := range []struct {
		name    string
		h       scheduler.CloudHealth
		failing bool
		says    string
	}{
		{"never asked", scheduler.CloudHealth{}, false, ""},
		{"answering", scheduler.CloudHealth{LastAnswer: now}, false, ""},
		{"one blip", scheduler.CloudHealth{FailingSince: now.Add(-time.Second), Failures: 1, Err: refused}, false, ""},
		{"refused past the grace", scheduler.CloudHealth{FailingSince: now.Add(-25 * time.Second), Failures: 2, Err: refused}, true, "the cloud is not reachable"},
		{"refused in a row", scheduler.CloudHealth{LastAnswer: now.Add(-time.Minute), FailingSince: now.Add(-3 * time.Second), Failures: 3, Err: refused}, true, "the cloud is not reachable"},
		{"a few errors answered", scheduler.CloudHealth{LastAnswer: now.Add(-time.Minute), FailingSince: now.Add(-3 * time.Second), Failures: 5, Err: answered}, false, ""},
		{"errors answered past the grace", scheduler.CloudHealth{LastAnswer: now.Add(-time.Minute), FailingSince: now.Add(-21 * time.Second), Failures: 5, Err: answered}, true, "answers only errors"},
		{"a 429's wait", scheduler.CloudHealth{LastAnswer: now.Add(-time.Hour), FailingSince: now.Add(-time.Hour), Failures: 4, Err: limited, HeldUntil: now.Add(4 * time.Minute)}, false, ""},
		{"a 429's wait just over", scheduler.CloudHealth{LastAnswer: now.Add(-time.Hour), FailingSince: now.Add(-time.Hour), Failures: 4, Err: limited, HeldUntil: now.Add(-cloudGrace + time.Second)}, false, ""},
		{"a 429's wait over, no answer since", scheduler.CloudHealth{LastAnswer: now.Add(-time.Hour), FailingSince: now.Add(-time.Hour), Failures: 4, Err: limited, HeldUntil: now.Add(-cloudGrace)}, true, "has not answered since the wait"},
	} {
		got, why := cloudFailing(tc.h, now)
		if got != tc.failing || !strings.Contains(why, tc.says) {
			t.Errorf("%s: failing %v (%q), want %v saying %q", tc.name, got, why, tc.failing, tc.says)
		}
		if tc.failing && !strings.Contains(why, tc.h.Err.Error()) {
			t.Errorf("%s: the reason %q does not carry the error", tc.name, why)
		}
		c := cloudConnected(tc.h, now)
		if (c == nil) != (tc.name == "never asked") || c != nil && *c == tc.failing {
			t.Errorf("%s: cloud sensor %v, want the opposite of failing (%v)", tc.name, c, tc.failing)
		}
	}
}

// TestCloudHold: a 429's wait, a spent quota and the poller's pacing each
// hold the reads back until an instant, said with that instant; the
// latest counts as the reads' progress (staleness counts from it).
func TestCloudHold(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	limited := &cloud.APIError{Kind: cloud.ErrRateLimited, Endpoint: "state", HTTPStatus: 429, RetryAfter: time.Hour}
	refused := &cloud.APIError{Kind: cloud.ErrTransient, Endpoint: "state", Msg: "the request failed", Err: errors.New("connection refused")}
	in := func(d time.Duration) time.Time { return now.Add(d) }
	for _, tc := range []struct {
		name      string
		st        scheduler.Stats
		quotaWait time.Time
		until     time.Time
		says      []string
	}{
		{"nothing", scheduler.Stats{Cloud: scheduler.CloudHealth{LastAnswer: now}}, time.Time{}, time.Time{}, nil},
		{"a 429's wait", scheduler.Stats{Cloud: scheduler.CloudHealth{FailingSince: now, Failures: 1, Err: limited, HeldUntil: in(5 * time.Minute)}},
			time.Time{}, in(5 * time.Minute), []string{"429", "held until 2026-11-28T12:05:00Z"}},
		{"a refusal after the wait", scheduler.Stats{Cloud: scheduler.CloudHealth{FailingSince: now, Failures: 1, Err: refused}},
			time.Time{}, time.Time{}, nil},
		{"the quota spent", scheduler.Stats{Quota: scheduler.Quota{HeldUntil: in(3 * time.Minute),
			HeldErr: &scheduler.QuotaError{Window: scheduler.QuotaWindow{Name: "API-RateLimit", Limit: 100, HasRemaining: true, Reset: in(time.Hour)}}}},
			time.Time{}, in(3 * time.Minute), []string{"quota is spent", "API-RateLimit: 0 of 100", "held until 2026-11-28T12:03:00Z"}},
		{"the periodic reads paced", scheduler.Stats{}, in(2 * time.Hour), in(2 * time.Hour), []string{"nearly spent", "renews at 2026-11-28T14:00:00Z"}},
		{"a 429 and the pacing: the later", scheduler.Stats{Cloud: scheduler.CloudHealth{Err: limited, HeldUntil: in(time.Minute)}},
			in(2 * time.Hour), in(2 * time.Hour), []string{"429", "renews at"}},
	} {
		h := cloudHold(tc.st, tc.quotaWait, now)
		if !h.until.Equal(tc.until) {
			t.Errorf("%s: held until %v, want %v", tc.name, h.until, tc.until)
		}
		for _, s := range tc.says {
			if !strings.Contains(h.why, s) {
				t.Errorf("%s: %q does not say %q", tc.name, h.why, s)
			}
		}
		if last := now.Add(-time.Hour); !h.progress(last).Equal(later(last, tc.until)) {
			t.Errorf("%s: progress %v, want the hold's end when later", tc.name, h.progress(last))
		}
	}
}
