package poller

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// TestStartLearnsWithinMinutes: from a start with nothing learned, 30
// devices at a plain 3 min, 5 of them changing at every read: once the
// start's spread has read each device a second time (3–6 min), the busy
// ones are read at least every minute, never closer than a grid step; the
// still ones go to the floor (12 min) and never beyond it; and the 30 are
// read as often over the first half hour as the same 30 with the sharing
// off.
func TestStartLearnsWithinMinutes(t *testing.T) {
	busy := func(d string) bool { return d < "D05" }
	var all []string
	for _, d := range devs(30) {
		all = append(all, d.Device)
	}
	counts := map[int]int{}
	for _, factor := range []int{1, 4} {
		t.Run(fmt.Sprintf("POLL_QUIET_FACTOR=%d", factor), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(devs(30)...)
				f.setState(changing(busy))
				h := start(t, f, Config{Interval: 3 * time.Minute, ListInterval: time.Hour, QuietFactor: factor})
				sleepUntil(h, 30*time.Minute)
				h.stop()
				// From just after the start's first reads: those are the
				// same in both runs and not the plan's.
				counts[factor] = readsBetween(h, time.Second, 30*time.Minute, all...)
				if factor == 1 {
					return
				}
				for _, id := range all {
					gaps := readGaps(h, id, 8*time.Minute)
					if len(gaps) == 0 {
						t.Errorf("%s not read after minute 8", id)
						continue
					}
					worst, least := slices.Max(gaps), slices.Min(gaps)
					switch {
					case busy(id) && (worst > time.Minute || least < 10*time.Second):
						t.Errorf("%s, changing at every read: read every %v to %v from minute 8, want every minute or more often, no closer than the grid's 10 s", id, least, worst)
					case !busy(id) && worst > 12*time.Minute:
						t.Errorf("%s, never changing: a read %v after the one before, beyond the floor of 12 min", id, worst)
					}
				}
			})
		})
	}
	if p, s := counts[1], counts[4]; s > p+p/50 || s < p-p/50 {
		t.Errorf("reads in the first half hour: %d shared, %d plain, want within 2 %%", s, p)
	}
}

// TestEventsReadADeviceMoreOften: a device whose state never differs from
// read to read but reports a cloud event every 20 s is read more often
// than the plain interval, because it changes often; an hour after its
// events stop it is read at least 1.5 times as seldom again (as a device
// whose reads stopped finding changes: TestQuietDeviceReadLessWithinAnHour).
func TestEventsReadADeviceMoreOften(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(6)...)
		f.setState(changing(func(string) bool { return false }))
		h := start(t, f, Config{Interval: time.Minute, ListInterval: 24 * time.Hour, QuietFactor: 4})
		for at := 20 * time.Second; at <= 15*time.Minute; at += 20 * time.Second {
			sleepUntil(h, at)
			h.p.Event("H6072", "D03")
		}
		often := h.p.Intervals()[key("D03")]
		reads := readsBetween(h, 10*time.Minute, 15*time.Minute, "D03")
		sleepUntil(h, 75*time.Minute)
		after := h.p.Intervals()[key("D03")]
		h.stop()
		if often.Why != WhyOften || often.Every >= time.Minute || reads <= 5 {
			t.Errorf("D03 with an event every 20 s: %+v, read %d times in 5 min; want read more often than every minute, because it changes often", often, reads)
		}
		if after.Every < often.Every*3/2 {
			t.Errorf("D03 an hour after its last event: %+v, want read at least 1.5 times as seldom as the %v while its events came", after, often.Every)
		}
	})
}
