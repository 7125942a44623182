package scheduler_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"cloud2mqtt/internal/scheduler"
)

// TestPaceLeavesOutTheStartsBurst: a start reads 60
// devices at once, then one device every 10 s. The pace, and the quota's
// forecast from it, is the steady 360 an hour of the periodic reads: the
// first reads are left out, not taken as an hourly rate (which would say
// a daily limit of 2000 runs out within the hour).
func TestPaceLeavesOutTheStartsBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := newScheduler(f, scheduler.Config{})
		stop := run(t, s)
		defer stop()
		const devices = 60
		for i := range devices {
			must(t, s.State("H6008", fmt.Sprintf("d%02d", i), scheduler.PriorityFirst, nil))
		}
		synctest.Wait()
		if n := len(f.Calls()); n != devices {
			t.Fatalf("%d first reads answered, want %d", n, devices)
		}
		for i := range 12 { // two minutes at the steady pace
			time.Sleep(10 * time.Second)
			must(t, s.State("H6008", fmt.Sprintf("d%02d", i), scheduler.PriorityPoll, nil))
		}
		time.Sleep(time.Second)
		q := s.Quota()
		// Measured from the first steady read: 12 in 1m51s.
		if q.Pace*3600 < 340 || q.Pace*3600 > 400 {
			t.Errorf("pace %.0f an hour over %v, want about 360", q.Pace*3600, q.PaceOver)
		}
		now := time.Now()
		b, ok := q.Binding(2000, devices+12, now)
		if !ok {
			t.Fatal("no binding with a daily limit")
		}
		midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, now.Location())
		fits := q.Pace*midnight.Sub(now).Seconds() <= float64(2000-devices-12)
		if b.Fits == nil || *b.Fits != fits || fits != b.RunsOut.IsZero() {
			t.Errorf("fits %v, runs out %v; want fits %v (%.1f hours to midnight)", b.Fits, b.RunsOut, fits, midnight.Sub(now).Hours())
		}
		if !b.RunsOut.IsZero() && b.RunsOut.Sub(now) < 4*time.Hour {
			t.Errorf("runs out at %v, within %v: the burst taken as a pace", b.RunsOut, b.RunsOut.Sub(now))
		}
	})
}
