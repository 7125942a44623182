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
