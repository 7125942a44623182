package scheduler_test

// What the cloud refuses: 429s, transient failures, a refused key.

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

// A 429 empties the buckets the request used and retries it after
// Retry-After (or a jittered back-off); a newer command arriving while it
// waits replaces it, and the newest value reaches the device.
func TestRateLimited(t *testing.T) {
	for _, tc := range []struct {
		name       string
		retryAfter time.Duration
		minWait    time.Duration
		maxWait    time.Duration
	}{
		{"with Retry-After", 3 * time.Second, 3 * time.Second, 3 * time.Second},
		{"without Retry-After", 0, 500 * time.Millisecond, time.Second}, // RetryBase 1 s, jitter half to all
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				f.fail = func(c call, n int) error {
					if c.device == "lamp" && n < 2 {
						return rateLimited(tc.retryAfter)
					}
					return nil
				}
				s := newScheduler(f, scheduler.Config{})
				rep := newReports(t)
				stop := run(t, s)
				t0 := time.Now()
				first := rep.submit(s, ctl("lamp", "brightness", 10))
				synctest.Wait()
				st := s.Stats()
				if st.RateLimited != 1 || !st.LastRateLimited.Equal(t0) {
					t.Errorf("stats after a 429: %d rate limited, last at %v", st.RateLimited, st.LastRateLimited)
				}
				if st.Tokens.ControlAccount > 0 || st.Tokens.ControlDeviceMin > 0 {
					t.Errorf("tokens after a 429: account %.2f, device %.2f; want both buckets emptied", st.Tokens.ControlAccount, st.Tokens.ControlDeviceMin)
				}
				// Another device must wait for the account bucket to refill.
				other := rep.submit(s, ctl("other", "brightness", 1))
				// The retry (attempt 2) is 429'd too; a newer value arrives
				// while it waits.
				time.Sleep(tc.maxWait + 100*time.Millisecond)
				newest := rep.submit(s, ctl("lamp", "brightness", 99))
				time.Sleep(30 * time.Second)
				stop()

				var lamp []call
				for _, c := range f.Calls() {
					if c.device == "lamp" {
						lamp = append(lamp, c)
					} else if d := c.at.Sub(t0); d < 80*time.Millisecond {
						t.Errorf("other device sent %v after the 429, want after the emptied account bucket refills (1/12 s)", d)
					}
				}
				if len(lamp) != 3 {
					t.Fatalf("lamp got %d requests %v, want 3 (two 429s, then success)", len(lamp), lamp)
				}
				if w := lamp[1].at.Sub(lamp[0].at); w < tc.minWait || w > tc.maxWait {
					t.Errorf("retry after %v, want between %v and %v", w, tc.minWait, tc.maxWait)
				}
				if lamp[2].value != 99 || f.Value("lamp", "brightness") != 99 {
					t.Errorf("lamp ends at %v (last sent %v), want the newest 99", f.Value("lamp", "brightness"), lamp[2].value)
				}
				if r := rep.result(first); !errors.Is(r.Err, capability.ErrSuperseded) || r.Attempts != 2 {
					t.Errorf("429'd command: %v after %d attempts, want superseded after 2", r.Err, r.Attempts)
				}
				if r := rep.result(newest); r.Err != nil || r.Attempts != 1 {
					t.Errorf("newest: %v after %d attempts, want success", r.Err, r.Attempts)
				}
				if r := rep.result(other); r.Err != nil {
					t.Errorf("other device: %v", r.Err)
				}
				rep.checkOnce()
			})
		})
	}
}

// A 429'd command with no newer value is retried until it gets through.
func TestRateLimitedRetriedUntilSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.fail = func(c call, n int) error {
			if n < 6 {
				return rateLimited(0)
			}
			return nil
		}
		s := newScheduler(f, scheduler.Config{})
		rep := newReports(t)
		stop := run(t, s)
		id := rep.submit(s, ctl("lamp", "powerSwitch", 1))
		time.Sleep(5 * time.Minute)
		stop()
		r := rep.result(id)
		if r.Err != nil || r.Attempts != 7 || f.Value("lamp", "powerSwitch") != 1 {
			t.Errorf("after six 429s: err %v, %d attempts, value %v; want success at attempt 7", r.Err, r.Attempts, f.Value("lamp", "powerSwitch"))
		}
		calls := f.Calls()
		for i := 1; i < len(calls); i++ {
			// Back-off doubles from 1 s up to 30 s, jittered down to half.
			if gap, min := calls[i].at.Sub(calls[i-1].at), min(time.Second<<(i-1), 30*time.Second)/2; gap < min {
				t.Errorf("retry %d after %v, want at least %v", i, gap, min)
			}
		}
		if st := s.Stats(); st.RateLimited != 6 || st.Retries != 6 {
			t.Errorf("stats: %d rate limited, %d retries; want 6 and 6", st.RateLimited, st.Retries)
		}
		rep.checkOnce()
	})
}

// A command failing with transient errors is retried with a growing
// back-off until it is CommandMaxAge (2 min) old, then the failure is reported
// (reads: at most MaxAttempts times, TestReadFailures); rejected requests
// (400, 404) are never retried.
func TestFailures(t *testing.T) {
	rejected := &cloud.APIError{Kind: cloud.ErrRequest, Endpoint: cloud.EndpointControl, HTTPStatus: 200, Code: 400, Msg: "parameter value out of range"}
	notFound := &cloud.APIError{Kind: cloud.ErrNotFound, Endpoint: cloud.EndpointControl, Code: 404, Msg: "devices not exist"}
	for _, tc := range []struct {
		name     string
		err      error
		attempts int
		check    func(error) bool
	}{
		{"transient", transient(), 0, isTransient},
		{"unclassified", errors.New("connection reset"), 0, func(err error) bool { return err != nil }},
		{"400", rejected, 1, cloud.IsRejected},
		{"404", notFound, 1, cloud.IsRejected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				f.fail = func(call, int) error { return tc.err }
				const maxAge = scheduler.CommandMaxAge
				s := newScheduler(f, scheduler.Config{})
				rep := newReports(t)
				stop := run(t, s)
				start := time.Now()
				id := rep.submit(s, ctl("lamp", "brightness", 150))
				time.Sleep(maxAge + time.Minute)
				stop()
				r := rep.result(id)
				if !tc.check(r.Err) || !errors.Is(r.Err, tc.err) {
					t.Errorf("reported %v, want the cloud's error", r.Err)
				}
				calls := f.Calls()
				switch {
				case tc.attempts > 0:
					if len(calls) != tc.attempts || r.Attempts != tc.attempts {
						t.Errorf("%d requests (result says %d), want %d", len(calls), r.Attempts, tc.attempts)
					}
				default: // retried until maxAge, the last try at maxAge
					if len(calls) < 5 || r.Attempts != len(calls) {
						t.Errorf("%d requests (result says %d), want retries for %v", len(calls), r.Attempts, maxAge)
					}
					if last := calls[len(calls)-1].at.Sub(start); last != maxAge {
						t.Errorf("last try at %v, want at %v", last, maxAge)
					}
				}
				for i := 1; i < len(calls); i++ {
					if tc.attempts == 0 && i == len(calls)-1 {
						break // the last try is when the command gives up, sooner than the back-off
					}
					// RetryBase 1 s doubling to RetryMax 30 s, jitter half to all.
					if gap, min := calls[i].at.Sub(calls[i-1].at), scheduler.Backoff(time.Second, 30*time.Second, i)/2; gap < min {
						t.Errorf("retry %d after %v, want at least %v", i, gap, min)
					}
				}
				if st := s.Stats(); st.Failures != 1 {
					t.Errorf("stats: %d failures, want 1", st.Failures)
				}
				rep.checkOnce()
			})
		})
	}
}

// After a 401 the scheduler stops sending for AuthHoldoff and reports
// every request failed; afterwards it tries again.
func TestAuthHoldoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		unauthorized := &cloud.APIError{Kind: cloud.ErrAuth, Endpoint: cloud.EndpointControl, HTTPStatus: 401}
		f.fail = func(c call, n int) error {
			if c.device == "a" && n == 0 {
				return unauthorized
			}
			return nil
		}
		s := newScheduler(f, scheduler.Config{}) // AuthHoldoff: 1 min
		rep := newReports(t)
		stop := run(t, s)
		first := rep.submit(s, ctl("a", "powerSwitch", 1))
		synctest.Wait()
		var during []int
		for i := range 5 {
			during = append(during, rep.submit(s, ctl(fmt.Sprintf("b%d", i), "powerSwitch", 1)))
			time.Sleep(10 * time.Second)
		}
		var readErr error
		must(t, s.State("H1", "c", scheduler.PriorityPoll, func(_ cloud.DeviceState, err error) { readErr = err }))
		synctest.Wait()
		if st := s.Stats(); st.AuthHoldoffUntil.IsZero() {
			t.Errorf("stats do not show the auth hold-off")
		}
		time.Sleep(20 * time.Second)
		after := rep.submit(s, ctl("a", "powerSwitch", 0))
		synctest.Wait()
		stop()

		if r := rep.result(first); !cloud.IsAuth(r.Err) || r.Attempts != 1 {
			t.Errorf("first: %v after %d attempts, want the 401 once", r.Err, r.Attempts)
		}
		for _, id := range during {
			if r := rep.result(id); !errors.Is(r.Err, scheduler.ErrAuthHoldoff) || !cloud.IsAuth(r.Err) || r.Attempts != 0 {
				t.Errorf("during hold-off: %v after %d attempts, want ErrAuthHoldoff wrapping the 401, never sent", r.Err, r.Attempts)
			}
		}
		if !errors.Is(readErr, scheduler.ErrAuthHoldoff) {
			t.Errorf("read during hold-off: %v, want ErrAuthHoldoff", readErr)
		}
		if r := rep.result(after); r.Err != nil {
			t.Errorf("after hold-off: %v, want sent and answered", r.Err)
		}
		if n := len(f.Calls()); n != 2 {
			t.Errorf("%d requests reached the cloud, want 2 (the 401 and the one after the hold-off)", n)
		}
		rep.checkOnce()
	})
}

// After a hold-off one request probes the key before the others are sent:
// a key still refused costs one request per hold-off, not one per request
// waiting; once the probe is answered the rest go out.
func TestAuthProbeAfterHoldoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		var mu sync.Mutex
		refused := true
		f.respond = func(call) time.Duration { return 100 * time.Millisecond }
		f.fail = func(c call, n int) error {
			mu.Lock()
			defer mu.Unlock()
			if refused {
				return &cloud.APIError{Kind: cloud.ErrAuth, Endpoint: c.ep, HTTPStatus: 401}
			}
			return nil
		}
		s := newScheduler(f, scheduler.Config{}) // AuthHoldoff: 1 min
		rep := newReports(t)
		stop := run(t, s)
		rep.submit(s, ctl("a", "powerSwitch", 1))
		synctest.Wait()
		time.Sleep(61 * time.Second)

		// Still refused: of five commands and a read only one is sent.
		var still []int
		for i := range 5 {
			still = append(still, rep.submit(s, ctl(fmt.Sprintf("b%d", i), "powerSwitch", 1)))
		}
		var readErr error
		must(t, s.State("H1", "c", scheduler.PriorityPoll, func(_ cloud.DeviceState, err error) { readErr = err }))
		time.Sleep(time.Second)
		synctest.Wait()
		if n := len(f.Calls()); n != 2 {
			t.Errorf("%d requests reached the cloud with the key still refused, want 2 (one per hold-off): %v", n, f.Calls())
		}
		for _, id := range still {
			if r := rep.result(id); !cloud.IsAuth(r.Err) {
				t.Errorf("command while refused: %v, want the refusal", r.Err)
			}
		}
		if !cloud.IsAuth(readErr) {
			t.Errorf("read while refused: %v, want the refusal", readErr)
		}

		// Accepted again: after the hold-off the probe succeeds and the
		// rest follow at once.
		mu.Lock()
		refused = false
		mu.Unlock()
		time.Sleep(61 * time.Second)
		var back []int
		for i := range 5 {
			back = append(back, rep.submit(s, ctl(fmt.Sprintf("b%d", i), "powerSwitch", 0)))
		}
		time.Sleep(time.Second)
		synctest.Wait()
		stop()
		for _, id := range back {
			if r := rep.result(id); r.Err != nil {
				t.Errorf("command after the key is accepted: %v", r.Err)
			}
		}
		calls := f.Calls()
		if n := len(calls); n != 7 {
			t.Fatalf("%d requests, want 7: %v", n, calls)
		}
		if probe, rest := calls[2].at, calls[3].at; rest.Sub(probe) != 100*time.Millisecond {
			t.Errorf("the others went out %v after the probe, want as soon as it was answered (100ms)", rest.Sub(probe))
		}
		rep.checkOnce()
	})
}

// TestReadFailures: a read failing with transient errors is tried
// MaxAttempts times, not for as long as a command: the poller reads again
// at its next interval anyway.
func TestReadFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.fail = func(call, int) error { return transient() }
		s := newScheduler(f, scheduler.Config{})
		stop := run(t, s)
		var readErr error
		must(t, s.State("H1", "c", scheduler.PriorityPoll, func(_ cloud.DeviceState, err error) { readErr = err }))
		time.Sleep(time.Minute)
		stop()
		if n := len(f.Calls()); n != 4 {
			t.Errorf("%d tries of a failing read, want MaxAttempts (4)", n)
		}
		if !isTransient(readErr) {
			t.Errorf("reported %v, want the cloud's error", readErr)
		}
	})
}

// isTransient reports whether err is the cloud's transient failure.
func isTransient(err error) bool {
	var ae *cloud.APIError
	return errors.As(err, &ae) && ae.Kind == cloud.ErrTransient
}
