package scheduler_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

// TestOnCountedSeesWhatTheDayCounts: Config.OnCounted hears of exactly
// the requests RequestsToday counts, by endpoint: a refused connection is
// neither, a 503 answered is both.
func TestOnCountedSeesWhatTheDayCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.fail = func(c call, n int) error {
			switch {
			case c.device == "refused":
				return refusedConn()
			case c.device == "busy" && n == 0:
				return transient()
			}
			return nil
		}
		var mu sync.Mutex
		counted := map[string]int{}
		s := newScheduler(f, scheduler.Config{MaxAttempts: 2, OnCounted: func(ep string, at time.Time) {
			mu.Lock()
			defer mu.Unlock()
			counted[ep]++
			if !at.Equal(time.Now()) {
				t.Errorf("counted at %v, now is %v", at, time.Now())
			}
		}})
		stop := run(t, s)
		defer stop()
		done := make(chan error, 3)
		for _, dev := range []string{"refused", "busy", "ok"} {
			if err := s.State("H6008", dev, scheduler.PriorityPoll, func(_ cloud.DeviceState, err error) { done <- err }); err != nil {
				t.Fatal(err)
			}
		}
		for range 3 {
			<-done
		}
		st := s.Stats()
		mu.Lock()
		defer mu.Unlock()
		total := 0
		for _, n := range counted {
			total += n
		}
		if total != st.RequestsToday || counted[cloud.EndpointState] != 3 || len(counted) != 1 {
			t.Errorf("OnCounted heard %v, RequestsToday is %d; want 3 state requests (the 503, its retry and ok), none refused", counted, st.RequestsToday)
		}
	})
}
