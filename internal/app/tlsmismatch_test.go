package app_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestCloudSchemeMismatchSaidOnce: with CLOUD_BASE_URL=https:// to a plain HTTP
// port the daemon logs the fix once at error level, never "giving up after
// transient failures", and nothing reaches the cloud.
func TestCloudSchemeMismatchSaidOnce(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{noStart: true})
	plain := h.cloud.URL
	h.main.Config.Cloud.BaseURL = strings.Replace(plain, "http://", "https://", 1)
	// Not h.start: the daemon is never ready without a device list.
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.main.Run(ctx) }()
	t.Cleanup(h.stop)
	fix := "set CLOUD_BASE_URL=" + plain
	said := func() []map[string]any {
		return h.logLines(func(l map[string]any) bool {
			e, _ := l["error"].(string)
			return l["level"] == "error" && strings.Contains(e, fix)
		})
	}
	// The device list is retried (10 s, 20 s, 40 s, ...): each retry
	// fails the same way. The clock jumps a minute at a time until the
	// fourth has failed.
	failures := func() int {
		return len(h.logLines(func(l map[string]any) bool {
			return l["message"] == "reading the device list failed"
		}))
	}
	deadline := time.Now().Add(wait)
	for failures() < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("the device list failed %d times, want 4", failures())
		}
		h.clock.Advance(time.Minute)
		time.Sleep(10 * time.Millisecond) // polling the log, bounded by the deadline
	}
	if lines := said(); len(lines) != 1 {
		t.Errorf("the fix logged at error level %d times, want once: %v", len(lines), lines)
	} else if e := lines[0]["error"].(string); !strings.Contains(e, "answers plain HTTP, not HTTPS") {
		t.Errorf("the error line says %q", e)
	}
	if strings.Contains(h.logs.String(), "giving up after transient failures") {
		t.Error("the mismatch is retried as a transient failure")
	}
	if n := len(h.sim.Requests()); n != 0 {
		t.Errorf("%d requests reached the cloud", n)
	}
	h.stop()
}
