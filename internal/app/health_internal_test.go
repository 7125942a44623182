package app

import (
	"errors"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/scheduler"
)

// TestFailingReasonSaysHowLong: requests that never reach the cloud fail within
// a second; the reason says so in words, never "in the last 0s", and counts one
// request in the singular.
func TestFailingReasonSaysHowLong(t *testing.T) {
	now := time.Date(2026, 11, 28, 3, 50, 12, 0, time.UTC)
	refused := errors.New("connection refused")
	for _, tc := range []struct {
		name     string
		failures int
		since    time.Duration
		want     string
	}{
		{"within a second", 3, 300 * time.Millisecond, "3 requests failed in the last second, none succeeded"},
		{"at once", 3, 0, "3 requests failed in the last second, none succeeded"},
		{"over minutes", 5, 2*time.Minute + 400*time.Millisecond, "5 requests failed in the last 2m0s, none succeeded"},
		{"one over the grace", 1, time.Minute, "1 request failed in the last 1m0s, none succeeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := scheduler.CloudHealth{FailingSince: now.Add(-tc.since), Failures: tc.failures, Err: refused}
			failing, why := cloudFailing(h, now)
			if !failing {
				t.Fatalf("not failing: %q", why)
			}
			if !strings.Contains(why, tc.want) {
				t.Errorf("reason %q, want it to say %q", why, tc.want)
			}
			if strings.Contains(why, " 0s") {
				t.Errorf("reason %q says 0s", why)
			}
		})
	}
}
