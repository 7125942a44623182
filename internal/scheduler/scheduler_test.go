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
	return &cloud.APIError{Kind: cloud.ErrRateLimited, Endpoint: cloud.EndpointControl, HTTPStatus: 429, RetryAfter: retryAfter}
}

func transient() error {
	return &cloud.APIError{Kind: cloud.ErrTransient, Endpoint: cloud.EndpointControl, HTTPStatus: 503, Msg: "service unavailable"}
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
				case !last && !errors.Is(r.Err, capability.ErrSuperseded):
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
				checkBucket(t, "account control", instants(calls, cloud.EndpointControl), scheduler.DefaultControlAccount)
				for d, at := range byDevice(calls, cloud.EndpointControl) {
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
				if st.Requests[cloud.EndpointControl] != uint64(len(calls)) {
					t.Errorf("stats: %d control requests, fake saw %d", st.Requests[cloud.EndpointControl], len(calls))
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
		checkBucket(t, "account control", instants(calls, cloud.EndpointControl), scheduler.DefaultControlAccount)
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
		at := instants(f.Calls(), cloud.EndpointState)
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
		checkBucket(t, "account control", instants(f.Calls(), cloud.EndpointControl), scheduler.PerSecond(12, 1))
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
