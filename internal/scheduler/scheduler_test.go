package scheduler_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func rateLimited(retryAfter time.Duration) error {
	return &cloud.APIError{Kind: cloud.ErrRateLimited, Endpoint: "control", HTTPStatus: 429, RetryAfter: retryAfter}
}

func transient() error {
	return &cloud.APIError{Kind: cloud.ErrTransient, Endpoint: "control", HTTPStatus: 503, Msg: "service unavailable"}
}

// A command submitted while the read slots are busy with slow polls is
// sent at once, and queued reads go out by priority: confirm, poll, refresh.
func TestCommandBeforePoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.respond = func(call) time.Duration { return time.Second }
		s := newScheduler(f, scheduler.Config{MaxInFlight: 2, CommandSlots: 1})
		// Queued before Run, lowest priority first.
		must(t, s.Scenes("H1", "scenes-dev", nil))
		must(t, s.ListDevices(nil))
		must(t, s.State("H1", "poll-dev", scheduler.PriorityPoll, nil))
		must(t, s.State("H1", "confirm-dev", scheduler.PriorityConfirm, nil))
		rep := newReports(t)
		rep.submit(s, ctl("cmd-dev", "brightness", 1))
		stop := run(t, s)
		synctest.Wait()
		start := time.Now()

		// At 1 s the first command and the confirm are answered and the
		// poll takes the one read slot; a command submitted then goes at once.
		time.Sleep(1100 * time.Millisecond)
		sub := time.Now()
		rep.submit(s, ctl("cmd-dev2", "brightness", 2))
		time.Sleep(10 * time.Second)
		stop()

		// Requests sent in the same instant race to the fake cloud, so
		// compare the instants each was sent at.
		got := map[string]time.Duration{}
		for _, c := range f.Calls() {
			got[c.ep+" "+c.device] = c.at.Sub(start)
		}
		cmd2 := sub.Sub(start)
		want := map[string]time.Duration{
			"control cmd-dev": 0, "state confirm-dev": 0, // command first, then the best read
			"state poll-dev":    time.Second,
			"control cmd-dev2":  cmd2, // at once, while the poll is on the wire
			"scenes scenes-dev": 2 * time.Second,
			"devices ":          3 * time.Second, // refreshes in order of submission
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("sent at:\n got %v\nwant %v", got, want)
		}
		rep.checkOnce()
	})
}

// Newer commands for a queued (device, instance) replace it in place; the
// replaced ones are reported superseded; instances keep the order in which
// they first arrived; a command already on the wire is never replaced.
func TestCoalescing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.respond = func(call) time.Duration { return 200 * time.Millisecond }
		s := newScheduler(f, scheduler.Config{})
		rep := newReports(t)
		stop := run(t, s)

		first := rep.submit(s, ctl("lamp", "powerSwitch", 1)) // goes on the wire at once
		synctest.Wait()
		ids := map[string][]int{}
		for i, step := range []struct {
			inst string
			v    int
		}{
			{"brightness", 10}, {"colorRgb", 5}, {"powerSwitch", 0}, {"brightness", 20},
			{"colorRgb", 6}, {"powerSwitch", 1}, {"brightness", 30},
		} {
			_ = i
			ids[step.inst] = append(ids[step.inst], rep.submit(s, ctl("lamp", step.inst, step.v)))
		}
		if st := s.Stats(); st.QueuedCommands != 3 || st.Coalesced != 4 {
			t.Errorf("stats: %d queued, %d coalesced; want 3 queued (one per instance), 4 coalesced", st.QueuedCommands, st.Coalesced)
		}
		time.Sleep(5 * time.Second)
		stop()

		var sent []string
		for _, c := range f.Calls() {
			sent = append(sent, fmt.Sprintf("%s=%v", c.instance, c.value))
		}
		// The first powerSwitch was on the wire: sent, then the latest
		// powerSwitch after it. Brightness arrived first among the queued.
		want := []string{"powerSwitch=1", "brightness=30", "colorRgb=6", "powerSwitch=1"}
		if fmt.Sprint(sent) != fmt.Sprint(want) {
			t.Errorf("sent %v, want %v", sent, want)
		}
		if r := rep.result(first); r.Err != nil || r.Attempts != 1 {
			t.Errorf("command on the wire: err %v attempts %d, want success in 1", r.Err, r.Attempts)
		}
		for inst, list := range ids {
			for i, id := range list {
				r := rep.result(id)
				last := i == len(list)-1
				switch {
				case last && r.Err != nil:
					t.Errorf("latest %s: %v, want success", inst, r.Err)
				case !last && !errors.Is(r.Err, scheduler.ErrSuperseded):
					t.Errorf("older %s #%d: err %v, want ErrSuperseded", inst, i, r.Err)
				case !last && r.Attempts != 0:
					t.Errorf("superseded %s sent %d times, want never", inst, r.Attempts)
				}
			}
		}
		rep.checkOnce()
	})
}

// Duplicate state reads of a device become one request whose answer every
// reporter gets, at the highest of their priorities.
func TestStateReadsCoalesce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.respond = func(call) time.Duration { return time.Second }
		s := newScheduler(f, scheduler.Config{MaxInFlight: 2, CommandSlots: 1})
		var mu sync.Mutex
		got := map[string]int{}
		rep := func(name string) func(cloud.DeviceState, error) {
			return func(st cloud.DeviceState, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil || st.Device == "" {
					t.Errorf("%s: state %+v err %v", name, st, err)
				}
				got[name]++
			}
		}
		must(t, s.State("H1", "a", scheduler.PriorityPoll, rep("a1")))
		must(t, s.State("H1", "b", scheduler.PriorityPoll, rep("b")))
		must(t, s.State("H1", "a", scheduler.PriorityPoll, rep("a2")))
		must(t, s.State("H1", "c", scheduler.PriorityPoll, rep("c")))
		// A confirm for c lifts the queued poll of c ahead of a and b.
		must(t, s.State("H1", "c", scheduler.PriorityConfirm, rep("c-confirm")))
		if st := s.Stats(); st.Queued[scheduler.PriorityConfirm] != 1 || st.Queued[scheduler.PriorityPoll] != 2 || st.QueuedReads != 5 {
			t.Errorf("queued %v, %d waiters; want 1 confirm, 2 polls, 5 waiters", st.Queued, st.QueuedReads)
		}
		stop := run(t, s)
		time.Sleep(10 * time.Second)
		stop()
		var order []string
		for _, c := range f.Calls() {
			order = append(order, c.device)
		}
		if fmt.Sprint(order) != "[c a b]" {
			t.Errorf("read order %v, want [c a b] (one read per device, confirm first)", order)
		}
		for _, n := range []string{"a1", "a2", "b", "c", "c-confirm"} {
			if got[n] != 1 {
				t.Errorf("reporter %s called %d times, want 1", n, got[n])
			}
		}
	})
}

// Under a random storm of commands from many devices, with random network
// latency, no request reaches the cloud before its buckets (per device
// 2/s burst 6, per account 12/s burst 80) hold a token, and every
// (device, instance) ends at its last submitted value.
func TestBucketsNeverExceeded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		latency bool
	}{{"no latency", false}, {"random latency", true}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				rng := rand.New(rand.NewPCG(1, 2))
				var rngMu sync.Mutex
				rnd := func(max time.Duration) time.Duration {
					rngMu.Lock()
					defer rngMu.Unlock()
					return time.Duration(rng.Int64N(int64(max)))
				}
				if tc.latency {
					f.arrive = func(call) time.Duration { return rnd(400 * time.Millisecond) }
					f.respond = func(call) time.Duration { return rnd(200 * time.Millisecond) }
				}
				s := newScheduler(f, scheduler.Config{})
				rep := newReports(t)
				stop := run(t, s)
				last := map[string]int{}
				instances := []string{"powerSwitch", "brightness", "colorRgb"}
				// A burst of 150 commands at once, then 40 devices × 3
				// instances at random for 20 s, 50 per second.
				for i := range 150 {
					d, in := fmt.Sprintf("dev%02d", i%40), instances[i%3]
					rep.submit(s, ctl(d, in, i))
					last[d+"/"+in] = i
				}
				for i := 150; i < 1150; i++ {
					time.Sleep(20 * time.Millisecond)
					d, in := fmt.Sprintf("dev%02d", int(rnd(40)+0)%40), instances[int(rnd(3))%3]
					if i%7 == 0 {
						d = "busy" // one device gets far more than its share
					}
					rep.submit(s, ctl(d, in, i))
					last[d+"/"+in] = i
				}
				for s.Stats().QueuedCommands+s.Stats().InFlight > 0 {
					time.Sleep(time.Second)
				}
				stop()

				calls := f.Calls()
				checkBucket(t, "account control", instants(calls, scheduler.EndpointControl), scheduler.DefaultControlAccount)
				for d, at := range byDevice(calls, scheduler.EndpointControl) {
					checkBucket(t, "device control "+d, at, scheduler.DefaultControlDevice)
				}
				for k, v := range last {
					d, in, _ := cut(k)
					if got := f.Value(d, in); got != v {
						t.Errorf("%s ends at %v, want the last value %d", k, got, v)
					}
				}
				st := s.Stats()
				if st.RateLimited != 0 || st.Failures != 0 {
					t.Errorf("stats: %d rate limited, %d failures; want none", st.RateLimited, st.Failures)
				}
				if st.Requests[scheduler.EndpointControl] != uint64(len(calls)) {
					t.Errorf("stats: %d control requests, fake saw %d", st.Requests[scheduler.EndpointControl], len(calls))
				}
				t.Logf("%d commands, %d sent, %d coalesced", rep.next, len(calls), st.Coalesced)
				rep.checkOnce()
			})
		})
	}
}

// The cloud takes a token when a request arrives. A request still on the
// wire while its bucket was full must not let a burst sent later overspend:
// here a slow command is sent into a full account bucket, and 0.4 s later a
// burst of 150 commands follows. Counting the slow one's token at send time
// would let 80 of the burst go at once and the slow one would arrive to an
// empty bucket.
func TestLatencyNeverOverspends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.arrive = func(c call) time.Duration {
			if c.device == "slow" {
				return 500 * time.Millisecond
			}
			return 0
		}
		s := newScheduler(f, scheduler.Config{MaxInFlight: 200})
		rep := newReports(t)
		stop := run(t, s)
		rep.submit(s, ctl("slow", "powerSwitch", 1))
		time.Sleep(400 * time.Millisecond)
		for i := range 150 {
			rep.submit(s, ctl(fmt.Sprintf("d%03d", i), "powerSwitch", 1))
		}
		time.Sleep(20 * time.Second)
		stop()
		calls := f.Calls()
		if len(calls) != 151 {
			t.Errorf("%d sent, want 151", len(calls))
		}
		checkBucket(t, "account control", instants(calls, scheduler.EndpointControl), scheduler.DefaultControlAccount)
		rep.checkOnce()
	})
}

// A device polled far more often than its state budget allows is read at
// the budget's pace (30/min burst 30) and never faster.
func TestStateBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := newScheduler(f, scheduler.Config{})
		stop := run(t, s)
		// Reports come from the scheduler's goroutines, possibly several.
		var answered atomic.Int64
		for range 600 { // one poll every 100 ms for a minute
			must(t, s.State("H1", "x", scheduler.PriorityPoll, func(cloud.DeviceState, error) { answered.Add(1) }))
			time.Sleep(100 * time.Millisecond)
		}
		stop()
		at := instants(f.Calls(), scheduler.EndpointState)
		checkBucket(t, "state x", at, scheduler.DefaultState)
		// 30 at once, then one per 2 s: ~59 in 60 s.
		if len(at) < 55 || len(at) > 61 {
			t.Errorf("%d reads in 60 s, want the budget's ~59", len(at))
		}
		if n := answered.Load(); n != 600 {
			t.Errorf("%d of 600 polls answered", n)
		}
	})
}

// At the account limit, devices are served in turn: one device with a long
// backlog does not delay the others' single commands.
func TestFairness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		// A generous device budget so only the account budget limits.
		s := newScheduler(f, scheduler.Config{ControlAccount: scheduler.PerSecond(12, 1), ControlDevice: scheduler.PerSecond(100, 100)})
		rep := newReports(t)
		for i := range 100 {
			rep.submit(s, ctl("hog", fmt.Sprintf("inst%03d", i), i))
		}
		for i := range 30 {
			rep.submit(s, ctl(fmt.Sprintf("dev%02d", i), "powerSwitch", 1))
		}
		stop := run(t, s)
		time.Sleep(5 * time.Second)
		if st := s.Stats(); st.QueuedCommands == 0 {
			t.Errorf("the account budget should still hold back the hog's backlog")
		}
		stop()
		hog, others := 0, 0
		for _, c := range f.Calls() {
			if c.device == "hog" {
				hog++
				continue
			}
			others++
			if hog > 2 {
				t.Errorf("%s sent after %d of the hog's commands, want every other device served within two turns", c.device, hog)
			}
		}
		if others != 30 {
			t.Errorf("%d of the 30 other devices served in 5 s, want all (the account allows 60 commands)", others)
		}
		rep.checkOnce()
		checkBucket(t, "account control", instants(f.Calls(), scheduler.EndpointControl), scheduler.PerSecond(12, 1))
	})
}

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
				if r := rep.result(first); !errors.Is(r.Err, scheduler.ErrSuperseded) || r.Attempts != 2 {
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
// back-off until it is CommandMaxAge old, then the failure is reported
// (reads: at most MaxAttempts times, TestReadFailures); rejected requests
// (400, 404) are never retried.
func TestFailures(t *testing.T) {
	rejected := &cloud.APIError{Kind: cloud.ErrRequest, Endpoint: "control", HTTPStatus: 200, Code: 400, Msg: "parameter value out of range"}
	notFound := &cloud.APIError{Kind: cloud.ErrNotFound, Endpoint: "control", Code: 404, Msg: "devices not exist"}
	for _, tc := range []struct {
		name     string
		err      error
		attempts int
		check    func(error) bool
	}{
		{"transient", transient(), 0, cloud.IsTransient},
		{"unclassified", errors.New("connection reset"), 0, func(err error) bool { return err != nil }},
		{"400", rejected, 1, cloud.IsRejected},
		{"404", notFound, 1, cloud.IsRejected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				f.fail = func(call, int) error { return tc.err }
				const maxAge = 20 * time.Second
				s := newScheduler(f, scheduler.Config{CommandMaxAge: maxAge})
				rep := newReports(t)
				stop := run(t, s)
				start := time.Now()
				id := rep.submit(s, ctl("lamp", "brightness", 150))
				time.Sleep(time.Minute)
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
					if gap, min := calls[i].at.Sub(calls[i-1].at), time.Second<<(i-1)/2; gap < min {
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
		unauthorized := &cloud.APIError{Kind: cloud.ErrAuth, Endpoint: "control", HTTPStatus: 401}
		f.fail = func(c call, n int) error {
			if c.device == "a" && n == 0 {
				return unauthorized
			}
			return nil
		}
		s := newScheduler(f, scheduler.Config{AuthHoldoff: time.Minute})
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
		s := newScheduler(f, scheduler.Config{AuthHoldoff: time.Minute})
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

// Queues are bounded: past the limit a submission fails with ErrOverloaded
// at once; a command coalescing with a queued one still goes through.
func TestOverload(t *testing.T) {
	f := newFake()
	s := newScheduler(f, scheduler.Config{MaxQueuedCommands: 3, MaxQueuedReads: 2})
	for i := range 3 {
		must(t, s.Control(ctl(fmt.Sprintf("d%d", i), "powerSwitch", 1), nil))
	}
	if err := s.Control(ctl("d9", "powerSwitch", 1), nil); !errors.Is(err, scheduler.ErrOverloaded) {
		t.Errorf("4th distinct command: %v, want ErrOverloaded", err)
	}
	must(t, s.Control(ctl("d0", "powerSwitch", 0), nil)) // replaces, no growth
	must(t, s.State("H1", "a", scheduler.PriorityPoll, nil))
	must(t, s.Scenes("H1", "a", nil))
	if err := s.State("H1", "a", scheduler.PriorityPoll, nil); !errors.Is(err, scheduler.ErrOverloaded) {
		t.Errorf("3rd read waiter: %v, want ErrOverloaded", err)
	}
	if st := s.Stats(); st.QueuedCommands != 3 || st.QueuedReads != 2 {
		t.Errorf("queued %d commands, %d reads; want 3 and 2", st.QueuedCommands, st.QueuedReads)
	}
}

// Bad submissions are refused with an error, never a panic.
func TestBadInput(t *testing.T) {
	s := newScheduler(newFake(), scheduler.Config{})
	for _, err := range []error{
		s.Control(cloud.ControlRequest{Device: "x", Instance: "powerSwitch"}, nil),
		s.Control(cloud.ControlRequest{SKU: "H1", Device: "x"}, nil),
		s.State("", "x", scheduler.PriorityPoll, nil),
		s.State("H1", "x", scheduler.Priority(9), nil),
		s.Scenes("H1", "", nil),
		s.DIYScenes("", "", nil),
	} {
		if err == nil {
			t.Errorf("bad submission accepted")
		}
	}
}

// On shutdown, intake stops, queued requests are reported not sent, the
// request on the wire finishes and is reported, and Run returns.
func TestShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.respond = func(call) time.Duration { return 2 * time.Second }
		s := newScheduler(f, scheduler.Config{ControlAccount: scheduler.PerSecond(1, 1)})
		rep := newReports(t)
		stop := run(t, s)
		onWire := rep.submit(s, ctl("a", "powerSwitch", 1))
		synctest.Wait()
		var queued []int
		for i := range 5 {
			queued = append(queued, rep.submit(s, ctl(fmt.Sprintf("q%d", i), "powerSwitch", 1)))
		}
		var readErr error
		must(t, s.ListDevices(func(_ []capability.Device, err error) { readErr = err }))
		var readDone bool
		must(t, s.DIYScenes("H1", "a", func(_ cloud.Scenes, err error) { readDone = true }))
		time.Sleep(time.Second)
		t0 := time.Now()
		stop()
		if d := time.Since(t0); d != time.Second {
			t.Errorf("Run returned %v after cancel, want once the request on the wire is answered (1 s)", d)
		}
		if err := s.Control(ctl("late", "powerSwitch", 1), nil); !errors.Is(err, scheduler.ErrClosed) {
			t.Errorf("submission after shutdown: %v, want ErrClosed", err)
		}
		if r := rep.result(onWire); r.Err != nil {
			t.Errorf("request on the wire: %v, want answered", r.Err)
		}
		for _, id := range queued {
			if r := rep.result(id); !errors.Is(r.Err, scheduler.ErrNotSent) {
				t.Errorf("queued command: %v, want ErrNotSent", r.Err)
			}
		}
		if readErr != nil || !readDone {
			// both reads went out at once (their buckets were full)
			t.Errorf("reads: list %v, diy done %v", readErr, readDone)
		}
		rep.checkOnce()
	})
}

// Reads queued at shutdown are reported not sent.
func TestShutdownReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := newScheduler(f, scheduler.Config{})
		var errs []error
		var mu sync.Mutex
		rec := func(_ cloud.DeviceState, err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
		must(t, s.State("H1", "a", scheduler.PriorityPoll, rec))
		must(t, s.State("H1", "a", scheduler.PriorityConfirm, rec))
		stop := run(t, s)
		stop() // may or may not have sent: either answered or not sent
		if len(errs) != 2 {
			t.Fatalf("%d reports, want 2", len(errs))
		}
		for _, err := range errs {
			if err != nil && !errors.Is(err, scheduler.ErrNotSent) {
				t.Errorf("read at shutdown: %v", err)
			}
		}
		if err := s.Run(t.Context()); err == nil {
			t.Errorf("second Run accepted")
		}
	})
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  scheduler.Config
		ok   bool
	}{
		{"zero is defaults", scheduler.Config{}, true},
		{"custom", scheduler.Config{ControlAccount: scheduler.PerSecond(6, 40), SafetyMargin: 0.1, MaxInFlight: 4, CommandSlots: 2}, true},
		{"zero rate", scheduler.Config{State: scheduler.Limit{Burst: 3}}, false},
		{"zero burst", scheduler.Config{State: scheduler.PerMinute(10, 0)}, false},
		{"margin too big", scheduler.Config{SafetyMargin: 0.9}, false},
		{"negative", scheduler.Config{MaxAttempts: -1}, false},
		{"no read slots", scheduler.Config{MaxInFlight: 2, CommandSlots: 2}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (err == nil) != tc.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// The safety margin holds back part of every budget.
func TestSafetyMargin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := newScheduler(f, scheduler.Config{SafetyMargin: 0.5})
		stop := run(t, s)
		for i := range 40 {
			must(t, s.Control(ctl(fmt.Sprintf("d%02d", i), "powerSwitch", 1), nil))
		}
		time.Sleep(10 * time.Second)
		stop()
		checkBucket(t, "account control with margin", instants(f.Calls(), scheduler.EndpointControl), scheduler.PerSecond(6, 40))
		if n := len(f.Calls()); n != 40 {
			t.Errorf("%d sent, want 40", n)
		}
	})
}

// Stats report requests by endpoint, today's count, and tokens.
func TestStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := newScheduler(f, scheduler.Config{})
		stop := run(t, s)
		must(t, s.Control(ctl("a", "powerSwitch", 1), nil))
		must(t, s.State("H1", "a", scheduler.PriorityPoll, nil))
		must(t, s.Scenes("H1", "a", nil))
		must(t, s.DIYScenes("H1", "a", nil))
		must(t, s.ListDevices(nil))
		synctest.Wait()
		st := s.Stats()
		stop()
		for _, ep := range []string{"control", "state", "scenes", "diy-scenes", "devices"} {
			if st.Requests[ep] != 1 {
				t.Errorf("requests[%s] = %d, want 1", ep, st.Requests[ep])
			}
		}
		if st.RequestsToday != 5 {
			t.Errorf("requests today %d, want 5", st.RequestsToday)
		}
		want := scheduler.Tokens{DeviceList: 29, ControlAccount: 79, ControlDeviceMin: 5, StateMin: 29, ScenesMin: 29, DIYScenesMin: 29}
		if st.Tokens != want {
			t.Errorf("tokens %+v, want %+v", st.Tokens, want)
		}
	})
}

// Devices no longer used are forgotten: memory follows the devices in use,
// not every device ever seen.
func TestIdleDevicesForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := newScheduler(f, scheduler.Config{})
		stop := run(t, s)
		for i := range 300 {
			must(t, s.Control(ctl(fmt.Sprintf("d%03d", i), "powerSwitch", 1), nil))
			must(t, s.State("H6008", fmt.Sprintf("d%03d", i), scheduler.PriorityPoll, nil))
		}
		time.Sleep(30 * time.Second)
		if n := s.Stats().Devices; n != 300 {
			t.Errorf("%d devices tracked while their buckets refill, want 300", n)
		}
		// Buckets are full again after a minute; the next wake-up sweeps.
		time.Sleep(2 * time.Minute)
		must(t, s.Control(ctl("new", "powerSwitch", 1), nil))
		synctest.Wait()
		st := s.Stats()
		stop()
		if st.Devices != 1 {
			t.Errorf("%d devices tracked after the others went idle, want 1", st.Devices)
		}
		if n := len(f.Calls()); n != 601 {
			t.Errorf("%d requests, want 601", n)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func cut(k string) (device, instance string, ok bool) {
	for i := len(k) - 1; i >= 0; i-- {
		if k[i] == '/' {
			return k[:i], k[i+1:], true
		}
	}
	return k, "", false
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
		if !cloud.IsTransient(readErr) {
			t.Errorf("reported %v, want the cloud's error", readErr)
		}
	})
}

// TestRequestsTodaySeeded: the count a previous run saved goes on today,
// and starts from zero on another day.
func TestRequestsTodaySeeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		today := now.Year()*10000 + int(now.Month())*100 + now.Day()
		s := newScheduler(newFake(), scheduler.Config{RequestsToday: 1234, RequestsDay: today})
		stop := run(t, s)
		must(t, s.State("H1", "a", scheduler.PriorityPoll, nil))
		time.Sleep(time.Second)
		if st := s.Stats(); st.RequestsToday != 1235 || st.Day != today {
			t.Errorf("requests today %d (day %d), want 1235 on %d", st.RequestsToday, st.Day, today)
		}
		stop()
		old := newScheduler(newFake(), scheduler.Config{RequestsToday: 1234, RequestsDay: 19991231})
		if st := old.Stats(); st.RequestsToday != 0 {
			t.Errorf("a count from another day: %d today, want 0", st.RequestsToday)
		}
	})
}
