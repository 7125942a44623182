package poller

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/statedir"
)

// changing answers a read of a device in busy with a brightness it never
// had before (as if it changed between any two reads), and of any other
// device the same state every time.
func changing(busy func(device string) bool) func(device string, n int) (cloud.DeviceState, error) {
	return func(device string, n int) (cloud.DeviceState, error) {
		b := 50
		if busy(device) {
			b = n%100 + 1
		}
		return mkState("H6072", device, true, map[string]any{capability.InstancePower: 1, capability.InstanceBrightness: b}), nil
	}
}

// readGaps are the times between a device's reads from from on.
func readGaps(h *harness, device string, from time.Duration) []time.Duration {
	var out []time.Duration
	var last time.Time
	for _, c := range h.f.reads(device) {
		if c.at.Sub(h.t0) < from {
			continue
		}
		if !last.IsZero() {
			out = append(out, c.at.Sub(last))
		}
		last = c.at
	}
	return out
}

// readsBetween counts the state reads of the devices from from to to.
func readsBetween(h *harness, from, to time.Duration, devices ...string) int {
	return len(h.f.filter(func(c call) bool {
		at := c.at.Sub(h.t0)
		return c.kind == "state" && at >= from && at < to && slices.Contains(devices, c.device)
	}))
}

// TestReadsFollowTheChanges: of nine devices at a minute (10 s grid), the
// two that change at every read are read as often as half their rate row
// and the grid allow, the seven still ones less often but at least every
// four minutes (the floor), a device with its own interval keeps it; the
// nine read as often in all as at the plain interval, as the same nine do
// with the sharing off; and what each is read at is told with why.
func TestReadsFollowTheChanges(t *testing.T) {
	shared := []string{"D00", "D01", "D02", "D03", "D04", "D05", "D06", "D07", "D08"}
	counts := map[int]int{}
	for _, factor := range []int{1, 4} {
		t.Run(fmt.Sprintf("POLL_QUIET_FACTOR=%d", factor), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(devs(10)...)
				f.setState(changing(func(d string) bool { return d == "D00" || d == "D01" }))
				var mu sync.Mutex
				told := map[string]Interval{}
				h := start(t, f, Config{Interval: time.Minute, ListInterval: time.Hour, QuietFactor: factor,
					OnInterval: func(k capability.Key, iv Interval) { mu.Lock(); told[k.Device] = iv; mu.Unlock() }})
				synctest.Wait()
				h.p.SetDeviceOptions(key("D09"), DeviceOptions{Interval: 2 * time.Minute})
				sleepUntil(h, 30*time.Minute)
				ivs := h.p.Intervals()
				h.stop()
				counts[factor] = readsBetween(h, 15*time.Minute, 30*time.Minute, shared...)
				if iv := ivs[key("D09")]; iv.Every != 2*time.Minute || iv.Why != WhyOwn {
					t.Errorf("D09: %+v, want its own 2 min", iv)
				}
				mu.Lock()
				defer mu.Unlock()
				for _, id := range shared {
					iv := ivs[key(id)]
					// Told again when the reason changes or the interval
					// moves by a quarter (every 5 min at most: the shares
					// settled long before).
					if tl := told[id]; tl.Why != iv.Why || tl.Own != iv.Own || (tl.Every-iv.Every).Abs()*4 >= tl.Every {
						t.Errorf("%s: told %+v, in force %+v", id, tl, iv)
					}
					if factor == 1 {
						if iv.Every != time.Minute || iv.Why != WhyPlain {
							t.Errorf("%s with the sharing off: %+v, want the plain minute", id, iv)
						}
						continue
					}
					busy := id == "D00" || id == "D01"
					switch {
					case busy && (iv.Every > 20*time.Second || iv.Why != WhyOften):
						t.Errorf("%s, changing at every read: %+v, want every 20 s or less (one or two steps of the grid; half its row is 4 s) because it changes often", id, iv)
					case !busy && (iv.Every <= time.Minute || iv.Every > 4*time.Minute || iv.Why != WhyQuiet):
						t.Errorf("%s, never changing: %+v, want quiet, between the minute and the floor of 4 min", id, iv)
					}
					for _, g := range readGaps(h, id, 10*time.Minute) {
						if g > 4*time.Minute || g < 10*time.Second {
							t.Errorf("%s read %v after the read before: outside its floor (4 min) and the grid's step (10 s)", id, g)
							break
						}
					}
				}
			})
		})
	}
	plain := 9 * 15 // nine devices, 15 minutes, one read a minute each
	for factor, n := range counts {
		if n > plain+9 || n < plain*98/100 {
			t.Errorf("POLL_QUIET_FACTOR=%d: %d reads in 15 min, want %d as at the plain interval (one more each at most, for where the window cuts)", factor, n, plain)
		}
	}
}

// TestQuietDeviceReadLessWithinAnHour: a device that changed at every read
// for an hour and then stops has its learned rate divided by 10 or more an
// hour later (four half-lives), is read at least 1.5 times as seldom, and
// the still devices get the reads it gives back.
func TestQuietDeviceReadLessWithinAnHour(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(6)...)
		var mu sync.Mutex
		busyUntil := time.Now().Add(time.Hour)
		f.setState(changing(func(d string) bool {
			mu.Lock()
			defer mu.Unlock()
			return d == "D00" && time.Now().Before(busyUntil)
		}))
		h := start(t, f, Config{Interval: time.Minute, ListInterval: 24 * time.Hour, QuietFactor: 4, Grid: time.Second})
		sleepUntil(h, time.Hour)
		busy, other := h.p.Intervals()[key("D00")], h.p.Intervals()[key("D01")]
		busyRate := h.p.act.rate(key("D00"), time.Now(), time.Minute)
		sleepUntil(h, 2*time.Hour)
		quiet, otherAfter := h.p.Intervals()[key("D00")], h.p.Intervals()[key("D01")]
		quietRate := h.p.act.rate(key("D00"), time.Now(), time.Minute)
		h.stop()
		if busy.Why != WhyOften || quietRate > busyRate/10 || quiet.Every < busy.Every*3/2 || otherAfter.Every >= other.Every {
			t.Errorf("D00 busy for an hour: %+v at %.2f changes a minute (D01 %+v); quiet for an hour after: %+v at %.2f (D01 %+v); "+
				"want its rate a tenth or less, read at least 1.5 times as seldom, D01 more often", busy, busyRate*60, other, quiet, quietRate*60, otherAfter)
		}
	})
}

// TestLearnedSurvivesARestart: a poller started on the state directory of
// one that learned reads the busy device often from its first shares on,
// and -check's plan (Planned) says so too, with a device's own interval.
func TestLearnedSurvivesARestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := statedir.Dir(filepath.Join(t.TempDir(), "state"))
		cfg := Config{Interval: time.Minute, ListInterval: time.Hour, QuietFactor: 4, StateDir: dir}
		f := newFake(devs(6)...)
		f.setState(changing(func(d string) bool { return d == "D00" }))
		h := start(t, f, cfg)
		sleepUntil(h, 30*time.Minute)
		h.stop()

		// The next run: nothing changes any more, and nothing is read yet
		// but the first reads.
		f = newFake(devs(6)...)
		f.setState(changing(func(string) bool { return false }))
		h = start(t, f, cfg)
		synctest.Wait()
		ivs := h.p.Intervals()
		h.stop()
		if iv := ivs[key("D00")]; iv.Why != WhyOften || iv.Every >= time.Minute {
			t.Errorf("D00 after the restart: %+v, want read often as learned before it", iv)
		}
		if iv := ivs[key("D01")]; iv.Why != WhyQuiet {
			t.Errorf("D01 after the restart: %+v, want quiet as learned before it", iv)
		}
		plan := Planned(devs(6), map[capability.Key]DeviceOptions{key("D05"): {Interval: 5 * time.Minute}}, cfg)
		if plan[key("D00")].Why != WhyOften || plan[key("D01")].Why != WhyQuiet || plan[key("D05")] != (Interval{Every: 5 * time.Minute, Own: true, Why: WhyOwn}) {
			t.Errorf("-check's plan: %+v", plan)
		}
	})
}
