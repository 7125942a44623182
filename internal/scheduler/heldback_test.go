package scheduler_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

// TestOneRefusalAmongReadsInFlight: three state reads go
// out at once; the cloud refuses the first with 401 and answers the other
// two after it. Those answers were checked beside the refusal, not after
// it: the hold-off stands, and every read held back meanwhile is reported
// as ErrAuthHoldoff wrapping the 401 (never a formatting artefact in place
// of a refusal that is gone), which HeldBack and cloud.IsAuth both see.
// After the hold-off one read probes the key, and the rest follow.
func TestOneRefusalAmongReadsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		refusal := &cloud.APIError{Kind: cloud.ErrAuth, Endpoint: cloud.EndpointState, HTTPStatus: 401, Code: 401, Msg: "unauthorized"}
		f.respond = func(c call) time.Duration {
			if c.device == "a" {
				return 100 * time.Millisecond
			}
			return 300 * time.Millisecond
		}
		f.fail = func(c call, n int) error {
			if c.device == "a" && n == 0 {
				return refusal
			}
			return nil
		}
		s := newScheduler(f, scheduler.Config{})
		stop := run(t, s)
		var mu sync.Mutex
		got := map[string][]error{}
		read := func(dev string) {
			must(t, s.State("H1", dev, scheduler.PriorityPoll, func(_ cloud.DeviceState, err error) {
				mu.Lock()
				defer mu.Unlock()
				got[dev] = append(got[dev], err)
			}))
		}
		devices := []string{"a", "b", "c"}
		for _, d := range devices {
			read(d)
		}
		synctest.Wait()
		time.Sleep(time.Second) // every answer is in: the 401, then two successes
		synctest.Wait()
		for i := range 3 { // reads at the poll interval, within the hold-off
			for _, d := range devices {
				read(d)
			}
			synctest.Wait()
			if h, held := s.Held("H1", "b"); !held || !cloud.IsAuth(h.Err) || strings.Contains(h.Err.Error(), "%!") {
				t.Errorf("read %d: Held = %+v, %v; want the hold-off with the 401", i+2, h, held)
			}
			time.Sleep(10 * time.Second)
		}
		if st := s.Stats(); st.AuthHoldoffUntil.IsZero() {
			t.Error("the stats do not show the hold-off")
		}
		time.Sleep(scheduler.AuthHoldoff) // over: a probe, then the rest
		for _, d := range devices {
			read(d)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		stop()

		mu.Lock()
		defer mu.Unlock()
		if errs := got["a"]; len(errs) == 0 || errs[0] != refusal {
			t.Errorf("a's first read: %v, want the 401", errs)
		}
		for _, d := range devices {
			errs := got[d]
			if len(errs) != 5 {
				t.Fatalf("%s: %d reports, want 5: %v", d, len(errs), errs)
			}
			for i, err := range errs[1:4] {
				if !errors.Is(err, scheduler.ErrAuthHoldoff) || !scheduler.HeldBack(err) || !cloud.IsAuth(err) || strings.Contains(err.Error(), "%!") {
					t.Errorf("%s's read %d within the hold-off: %v; want ErrAuthHoldoff wrapping the 401", d, i+2, err)
				}
			}
			if err := errs[4]; err != nil {
				t.Errorf("%s's read after the hold-off: %v", d, err)
			}
		}
		if n := len(f.Calls()); n != 6 {
			t.Errorf("%d requests reached the cloud, want 6 (three, then three after the hold-off): %v", n, f.Calls())
		}
	})
}

// TestHeldBack: the errors of requests the bridge held back itself, and
// none of those the cloud gave.
func TestHeldBack(t *testing.T) {
	refusal := &cloud.APIError{Kind: cloud.ErrAuth, Endpoint: cloud.EndpointState, HTTPStatus: 401}
	limited := &cloud.APIError{Kind: cloud.ErrRateLimited, Endpoint: cloud.EndpointState, HTTPStatus: 429}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("%w: %w", scheduler.ErrAuthHoldoff, refusal), true},
		{scheduler.ErrAuthHoldoff, true},
		{&scheduler.QuotaError{Err: limited}, true},
		{fmt.Errorf("poller: read x: %w until then: %w", scheduler.ErrReadsHeld, limited), true},
		{fmt.Errorf("%w: %w", scheduler.ErrNotSent, limited), true},
		{nil, false},
		{refusal, false},
		{limited, false},
		{transient(), false},
		{scheduler.ErrOverloaded, false},
	} {
		if got := scheduler.HeldBack(tc.err); got != tc.want {
			t.Errorf("HeldBack(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
