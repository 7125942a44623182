package scheduler_test

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

// TestFirstReadsGoOutAtOnce: a start's first reads (PriorityFirst) go on
// the wire at once, DefaultFirstInFlight of them beside the steady slots,
// instead of MaxInFlight-CommandSlots at a time; periodic reads keep the
// steady cap, and a command still goes at once.
func TestFirstReadsGoOutAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.respond = func(call) time.Duration { return time.Second }
		s := newScheduler(f, scheduler.Config{})
		const first, polls = 150, 10
		for i := range first {
			must(t, s.State("H6008", fmt.Sprintf("new%03d", i), scheduler.PriorityFirst, nil))
		}
		for i := range polls {
			must(t, s.State("H6008", fmt.Sprintf("old%03d", i), scheduler.PriorityPoll, nil))
		}
		stop := run(t, s)
		synctest.Wait()
		start := time.Now()
		if st := s.Stats(); st.InFlightFirst != scheduler.DefaultFirstInFlight || st.InFlight != scheduler.DefaultFirstInFlight+scheduler.DefaultMaxInFlight-1 {
			t.Errorf("in flight at the start: %d, of them %d first reads; want %d and %d",
				st.InFlight, st.InFlightFirst, scheduler.DefaultFirstInFlight+scheduler.DefaultMaxInFlight-1, scheduler.DefaultFirstInFlight)
		}
		time.Sleep(500 * time.Millisecond)
		rep := newReports(t)
		cmd := rep.submit(s, ctl("old000", "brightness", 50))
		time.Sleep(10 * time.Second)
		stop()

		// How many requests of each kind arrived at each instant.
		got := map[string]int{}
		for _, c := range f.Calls() {
			kind := c.ep
			if c.ep == cloud.EndpointState {
				kind = "first"
				if c.device[:3] == "old" {
					kind = "poll"
				}
			}
			got[fmt.Sprintf("%s@%v", kind, c.at.Sub(start))]++
		}
		steady := scheduler.DefaultMaxInFlight - 1 // one slot kept for commands
		// Every first read the allowance takes, and the steady slots the
		// rest of them take before the periodic reads; the others as soon
		// as the first are answered.
		if got["first@0s"] != scheduler.DefaultFirstInFlight+steady || got["first@1s"] != first-scheduler.DefaultFirstInFlight-steady {
			t.Errorf("first reads sent at 0 s: %d, at 1 s: %d; want %d and %d (%v)", got["first@0s"], got["first@1s"],
				scheduler.DefaultFirstInFlight+steady, first-scheduler.DefaultFirstInFlight-steady, got)
		}
		// The periodic reads at the steady pace (which of the slots freed
		// at 1 s they take depends on the order the answers come back in:
		// the first reads go first).
		if got["poll@0s"] != 0 || got["poll@1s"] > steady || got["poll@2s"] > steady || got["poll@1s"]+got["poll@2s"]+got["poll@3s"] != polls {
			t.Errorf("periodic reads sent at 0, 1, 2 and 3 s: %d, %d, %d, %d; want none with the first reads, at most %d at once, %d in all (%v)",
				got["poll@0s"], got["poll@1s"], got["poll@2s"], got["poll@3s"], steady, polls, got)
		}
		// The command at once, on its slot.
		if got["control@500ms"] != 1 {
			t.Errorf("the command was not sent at once (%v)", got)
		}
		if r := rep.result(cmd); r.Err != nil || r.Sent.Sub(r.Queued) != 0 {
			t.Errorf("the command during the first reads: %v, sent %v after it was queued; want sent at once", r.Err, r.Sent.Sub(r.Queued))
		}
		rep.checkOnce()
	})
}

// TestFirstReadsWaitForTheirBucket: the allowance lifts only the cap on
// reads at once; each first read still takes its device's state token, so
// a device whose bucket is empty waits for it, and no device is read
// faster than its row of the rate table.
func TestFirstReadsWaitForTheirBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.respond = func(call) time.Duration { return 100 * time.Millisecond }
		limit := scheduler.PerMinute(2, 2)
		s := newScheduler(f, scheduler.Config{State: limit})
		stop := run(t, s)
		// Each device read five times in a row, all as first reads.
		var answered sync.WaitGroup
		for round := range 5 {
			for i := range 20 {
				answered.Add(1)
				must(t, s.State("H6008", fmt.Sprintf("d%02d", i), scheduler.PriorityFirst, func(cloud.DeviceState, error) { answered.Done() }))
			}
			if round == 0 {
				synctest.Wait()
				if st := s.Stats(); st.InFlightFirst != 20 {
					t.Errorf("%d first reads on the wire, want all 20 at once", st.InFlightFirst)
				}
			}
			answered.Wait()
		}
		stop()
		for dev, at := range byDevice(f.Calls(), cloud.EndpointState) {
			if len(at) != 5 {
				t.Errorf("%s read %d times, want 5", dev, len(at))
			}
			checkBucket(t, "state "+dev, at, limit)
		}
	})
}

// TestFirstReadsOneAtATimeWhileProbing: after a refused key's hold-off,
// one request probes the cloud, first reads included.
func TestFirstReadsOneAtATimeWhileProbing(t *testing.T) {
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
		s := newScheduler(f, scheduler.Config{})
		stop := run(t, s)
		must(t, s.State("H6008", "a", scheduler.PriorityFirst, nil))
		synctest.Wait()
		time.Sleep(scheduler.AuthHoldoff + time.Second)
		for i := range 50 {
			must(t, s.State("H6008", fmt.Sprintf("b%02d", i), scheduler.PriorityFirst, nil))
		}
		time.Sleep(time.Second)
		synctest.Wait()
		stop()
		if n := len(f.Calls()); n != 2 {
			t.Errorf("%d requests reached the cloud with the key refused, want 2 (one per hold-off): %v", n, f.Calls())
		}
	})
}

// TestSceneListsAfterFirstReads: refreshes (the scene lists a start asks
// for with the first reads) wait until every first read is answered, so
// that their answers do not compete with the first states', although the
// steady slots they would take are free.
func TestSceneListsAfterFirstReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.respond = func(call) time.Duration { return time.Second }
		s := newScheduler(f, scheduler.Config{})
		for i := range 10 {
			must(t, s.State("H6008", fmt.Sprintf("d%02d", i), scheduler.PriorityFirst, nil))
			if i < scheduler.DefaultMaxInFlight-1 {
				must(t, s.Scenes("H6008", fmt.Sprintf("d%02d", i), nil))
			}
		}
		stop := run(t, s)
		synctest.Wait()
		start := time.Now()
		time.Sleep(5 * time.Second)
		stop()
		for _, c := range f.Calls() {
			at := c.at.Sub(start)
			if want := map[string]time.Duration{cloud.EndpointState: 0, cloud.EndpointScenes: time.Second}[c.ep]; at != want {
				t.Errorf("%s sent at %v, want %v", c, at, want)
			}
		}
	})
}

// TestFirstReadsDoneOncePerBurst: OnFirstReadsDone is called when the last
// first read of a burst is answered and none waits, not before, and again
// after a later burst (a device list that adds devices).
func TestFirstReadsDoneOncePerBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.respond = func(call) time.Duration { return time.Second }
		var mu sync.Mutex
		var done []time.Duration
		var start time.Time
		s := newScheduler(f, scheduler.Config{OnFirstReadsDone: func() {
			mu.Lock()
			defer mu.Unlock()
			done = append(done, time.Since(start))
		}})
		burst := func(from, n int) {
			for i := range n {
				must(t, s.State("H6008", fmt.Sprintf("d%03d", from+i), scheduler.PriorityFirst, nil))
			}
		}
		start = time.Now()
		burst(0, 250) // three rounds: 107, 107, 36
		stop := run(t, s)
		time.Sleep(10 * time.Second)
		burst(250, 5)
		time.Sleep(10 * time.Second)
		stop()
		mu.Lock()
		defer mu.Unlock()
		if want := []time.Duration{3 * time.Second, 11 * time.Second}; fmt.Sprint(done) != fmt.Sprint(want) {
			t.Errorf("first reads done at %v, want %v (the last answer of each burst)", done, want)
		}
	})
}
