package poller

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
)

func TestOnGrid(t *testing.T) {
	g := time.Date(2026, 3, 1, 12, 0, 7, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		in     time.Time
		want   time.Time
		reason string
	}{
		{"on the grid", g, g, "stays"},
		{"just after", g.Add(time.Nanosecond), g.Add(time.Second), "rounds up"},
		{"just before", g.Add(-time.Nanosecond), g, "rounds up"},
		{"half way", g.Add(500 * time.Millisecond), g.Add(time.Second), "rounds up, not to the nearest"},
	} {
		if got := onGrid(tc.in); !got.Equal(tc.want) {
			t.Errorf("%s: onGrid(%v) = %v, want %v (%s)", tc.name, tc.in, got, tc.want, tc.reason)
		}
	}
	// The monotonic reading survives: the result is later than t by what
	// the wall clock says.
	now := time.Now()
	if d := onGrid(now).Sub(now); d < 0 || d >= readGrid {
		t.Errorf("onGrid(now) is %v after now, want [0, %v)", d, readGrid)
	}
	if s := onGrid(now).String(); strings.Contains(now.String(), "m=+") && !strings.Contains(s, "m=+") {
		t.Errorf("onGrid dropped the monotonic clock reading: %s", s)
	}
	for _, tc := range []struct{ in, want time.Duration }{
		{2 * time.Second, 2 * time.Second},
		{2500 * time.Millisecond, 3 * time.Second},
		{37500 * time.Millisecond, 38 * time.Second},
		{time.Minute + time.Nanosecond, 61 * time.Second},
	} {
		if got := gridUp(tc.in); got != tc.want {
			t.Errorf("gridUp(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// checkGridBatches checks reads of n devices at interval made from the
// grid instant first until end: every device read exactly once per interval
// in list order (device i at grid instant i×slots/n), and every instant of
// the grid in [first, end) sends n/slots or one more. at gives a read's grid
// instant.
func checkGridBatches(t *testing.T, list []capability.Device, reads []call, interval, grid time.Duration, first, end time.Time, at func(call) time.Time) {
	t.Helper()
	n, slots := len(list), int(interval/grid)
	byDevice := map[string][]time.Time{}
	batches := map[time.Time]int{}
	for _, r := range reads {
		if r.prio != scheduler.PriorityPoll {
			t.Errorf("%s: periodic read at priority %v", r.device, r.prio)
		}
		g := at(r)
		if !g.Equal(g.Truncate(grid)) {
			t.Fatalf("%s: read at %v, off the %v grid", r.device, g, grid)
		}
		byDevice[r.device] = append(byDevice[r.device], g)
		batches[g]++
	}
	for i, d := range list {
		got := byDevice[d.Device]
		slot := first.Add(time.Duration(i*slots/n) * grid)
		var want []time.Time
		for at := slot; at.Before(end); at = at.Add(interval) {
			want = append(want, at)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d reads, want %d, every %v from %v", d.Device, len(got), len(want), interval, slot.Sub(first))
		}
		for k := range got {
			if !got[k].Equal(want[k]) {
				t.Fatalf("%s: read %d at %v, want %v (every %v from grid instant %d)", d.Device, k, got[k].Sub(first), want[k].Sub(first), interval, i*slots/n)
			}
		}
	}
	lo, hi := n/slots, (n+slots-1)/slots
	instants := 0
	for at := first; at.Before(end); at = at.Add(grid) {
		instants++
		if k := batches[at]; k < lo || k > hi {
			t.Errorf("%d reads at %v, want %d to %d", k, at.Sub(first), lo, hi)
		}
	}
	if len(batches) != instants {
		t.Errorf("reads at %d instants, want one batch every %v from %v to %v: %d", len(batches), grid, first, end, instants)
	}
}

// TestThousandDevicesBatchedOnGrid: at 1000 devices and 60 s, every device
// is read at once, then the reads go out every 6 s, 100 at a time, each
// device exactly 60 s apart.
func TestThousandDevicesBatchedOnGrid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, grid = 1000, 6 * time.Second
		list := numbered(n)
		f := newFake(list...)
		f.latency = 300 * time.Millisecond
		h := start(t, f, Config{Interval: time.Minute, ListInterval: time.Hour})
		// The list arrives at 0.3 s: every device is read at once, then
		// the reads fill the 6 s grid from 66 s.
		first := h.t0.Add(300 * time.Millisecond)
		periodic := h.t0.Add(grid + time.Minute)
		end := periodic.Add(3 * time.Minute)
		time.Sleep(time.Until(end) - 500*time.Millisecond) // the last batch is answered
		h.stop()
		if g := h.p.Stats().Grid; g != grid {
			t.Fatalf("grid of 1000 devices at 1 min: %v, want %v", g, grid)
		}

		at := func(c call) time.Time { return c.at }
		reads := firstReadsAtOnce(t, list, f.reads(""), first, at)
		checkGridBatches(t, list, reads, time.Minute, grid, periodic, end, at)

		// The scene rounds of the devices with scenes went out with their
		// first reads, in the same batch.
		for i, d := range list {
			if i%10 != 0 {
				continue
			}
			want := first
			for _, kind := range []string{"scenes", "diy"} {
				sc := h.f.filter(func(c call) bool { return c.kind == kind && c.device == d.Device })
				if len(sc) != 1 || !sc[0].at.Equal(want) {
					t.Fatalf("%s: %s fetches at %v, want one at %v", d.Device, kind, offsets(h.t0, sc), want.Sub(h.t0))
				}
			}
		}
	})
}

// TestSmallAccountsOnAWiderGrid: at 100 devices and 60 s the periodic reads
// go out every 10 s, 16 or 17 at a time, each device exactly 60 s apart;
// the first reads still go out at once.
func TestSmallAccountsOnAWiderGrid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, grid = 100, 10 * time.Second
		list := numbered(n)
		f := newFake(list...)
		f.latency = 300 * time.Millisecond
		h := start(t, f, Config{Interval: time.Minute, ListInterval: time.Hour})
		// The list arrives at 0.3 s: every device is read at once, then
		// the reads fill the 10 s grid from 70 s.
		first := h.t0.Add(300 * time.Millisecond)
		periodic := h.t0.Add(grid + time.Minute)
		end := periodic.Add(3 * time.Minute)
		time.Sleep(time.Until(end) - 500*time.Millisecond)
		h.stop()
		if g := h.p.Stats().Grid; g != grid {
			t.Fatalf("grid of 100 devices at 1 min: %v, want %v", g, grid)
		}
		at := func(c call) time.Time { return c.at }
		reads := firstReadsAtOnce(t, list, f.reads(""), first, at)
		checkGridBatches(t, list, reads, time.Minute, grid, periodic, end, at)
	})
}

func TestPeriodicGrid(t *testing.T) {
	for _, tc := range []struct {
		interval time.Duration
		devices  int
		want     time.Duration
		why      string
	}{
		{time.Minute, 1000, 6 * time.Second, "100 reads a wake (maxBatch)"},
		{time.Minute, 2000, 3 * time.Second, "100 reads a wake (maxBatch)"},
		{time.Minute, 1500, 4 * time.Second, "60×100/1500 = 4 s"},
		{time.Minute, 1400, 4 * time.Second, "60×100/1400 = 4.3 s, down to whole seconds that divide 60 s"},
		{time.Minute, 6000, time.Second, "100 reads a second already"},
		{time.Minute, 20000, time.Second, "never finer than readGrid"},
		{time.Minute, 500, 10 * time.Second, "at most maxGrid (83 reads a wake)"},
		{time.Minute, 100, 10 * time.Second, "at most maxGrid"},
		{time.Minute, 20, 10 * time.Second, "at most maxGrid"},
		{time.Minute, 1, 10 * time.Second, "at most maxGrid"},
		{5 * time.Minute, 1000, 10 * time.Second, "at most maxGrid (33 reads a wake)"},
		{30 * time.Second, 4, 5 * time.Second, "at least minSlots instants an interval"},
		{10 * time.Second, 5, time.Second, "10/6 s is less than 2 s"},
		{61 * time.Second, 20, time.Second, "no wider whole second divides 61 s"},
		{45 * time.Second, 60, 5 * time.Second, "45/6 = 7.5 s, down to whole seconds that divide 45 s"},
		{50 * time.Second, 1000, 5 * time.Second, "50×100/1000 = 5 s"},
		{50 * time.Second, 1200, 2 * time.Second, "50×100/1200 = 4.2 s; 4 s and 3 s do not divide 50 s, 2 s does"},
		{time.Hour, 50, 10 * time.Second, "at most maxGrid"},
		{day, 100000, 10 * time.Second, "at most maxGrid"},
		{time.Minute, 0, time.Second, "no devices"},
	} {
		got := periodicGrid(tc.interval, tc.devices)
		if got != tc.want {
			t.Errorf("periodicGrid(%v, %d) = %v, want %v (%s)", tc.interval, tc.devices, got, tc.want, tc.why)
		}
		if tc.interval%got != 0 {
			t.Errorf("periodicGrid(%v, %d) = %v does not divide the interval", tc.interval, tc.devices, got)
		}
		if per := float64(tc.devices) * got.Seconds() / tc.interval.Seconds(); got > readGrid && per > maxBatch {
			t.Errorf("periodicGrid(%v, %d) = %v puts %.0f reads in an instant, more than %d", tc.interval, tc.devices, got, per, maxBatch)
		}
	}
}

// firstReadsAtOnce checks that every device's first read went out at start,
// and returns the reads after those.
func firstReadsAtOnce(t *testing.T, list []capability.Device, reads []call, start time.Time, at func(call) time.Time) []call {
	t.Helper()
	seen := map[string]bool{}
	var rest []call
	for _, r := range reads {
		if seen[r.device] {
			rest = append(rest, r)
			continue
		}
		seen[r.device] = true
		if g := at(r); !g.Equal(start) {
			t.Fatalf("%s: first read at %v, want at once (%v)", r.device, g, start)
		}
	}
	if len(seen) != len(list) {
		t.Fatalf("%d devices read, want all %d", len(seen), len(list))
	}
	return rest
}

// recordingScheduler answers every request at once, like instantScheduler,
// and records the state reads at the loop's clock.
type recordingScheduler struct {
	instantScheduler
	now   *time.Time
	reads []call
}

func (s *recordingScheduler) State(sku, device string, p scheduler.Priority, report func(cloud.DeviceState, error)) error {
	s.reads = append(s.reads, call{"state", p, device, *s.now})
	return s.instantScheduler.State(sku, device, p, report)
}

// TestLateWakesKeepTheGrid: a real timer wakes the loop a little after the
// grid instant it asked for, and the answers come in later still. The next
// periodic read is counted from the grid instant, not from the late send,
// so the devices keep their grid second and their batches.
func TestLateWakesKeepTheGrid(t *testing.T) {
	const n, late = 1000, 7 * time.Millisecond
	list := numbered(n)
	first := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := &handClock{now: first.Add(-300 * time.Millisecond)} // the list arrives off the grid, before first
	s := &recordingScheduler{now: &clk.now}
	s.state = mkState("H6072", "any", true, map[string]any{capability.InstancePower: 1})
	p := New(s, registry.New(zerolog.Nop()), Config{Interval: DefaultInterval, ListInterval: 365 * day, Clock: clk}, zerolog.Nop())
	p.mu.Lock()
	p.onList(clk.now, list, nil)
	p.effects = nil
	p.nextList = clk.now.Add(365 * day)
	p.mu.Unlock()

	end := first.Add(4 * DefaultInterval)
	clk.now = first.Add(late)
	for clk.now.Before(end) {
		next := p.cycle()
		// The answers arrive and are applied before the next batch is due
		// (after the first batch, which reads every device, only they tell
		// the loop when to wake next).
		clk.now = clk.now.Add(200 * time.Millisecond)
		if wake := p.cycle(); wake.Before(next) {
			next = wake
		}
		clk.now = next.Add(late)
	}
	grid := p.Stats().Grid // 6 s at 1000 devices
	at := func(c call) time.Time {
		if c.at.Sub(c.at.Truncate(grid)) != late {
			t.Fatalf("%s: read at %v, want %v after a grid instant", c.device, c.at, late)
		}
		return c.at.Truncate(grid)
	}
	reads := firstReadsAtOnce(t, list, s.reads, first, at)
	checkGridBatches(t, list, reads, DefaultInterval, grid, first.Add(DefaultInterval), end, at)
}

// TestConfirmOffGrid: a confirming read is not put on the grid, and the
// device's next periodic read is: at least an interval after the
// confirming read and less than a grid step more. Four devices at 1 min
// read on a 10 s grid (periodicGrid).
func TestConfirmOffGrid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(4)...)
		f.latency = 200 * time.Millisecond
		h := start(t, f, Config{Interval: time.Minute, ConfirmDelay: 2 * time.Second, ListInterval: time.Hour})
		const grid = 10 * time.Second
		// The list arrives at 0.2 s: every device read at once, then
		// periodic reads spread over the interval after, on the 10 s
		// grid: at 70, 80, 100 and 110 s.
		sleepUntil(h, 20300*time.Millisecond)
		h.p.Confirm("H6072", "D01") // off the grid: confirmed at 22.3 s
		sleepUntil(h, 100*time.Second)
		h.p.Confirm("H6072", "D02") // on the grid: confirmed at 102 s
		sleepUntil(h, 245*time.Second)
		h.stop()
		if got := h.p.grid; got != grid {
			t.Fatalf("grid of 4 devices at 1 min: %v, want %v", got, grid)
		}

		for _, tc := range []struct {
			device  string
			confirm time.Duration
			want    []time.Duration
		}{
			{"D00", 0, secs(0.2, 70, 130, 190)},
			// 22.3 + 60 = 82.3 s, rounded up to the grid: 90 s.
			{"D01", 22300 * time.Millisecond, secs(0.2, 22.3, 90, 150, 210)},
			{"D02", 102 * time.Second, secs(0.2, 100, 102, 170, 230)},
			{"D03", 0, secs(0.2, 110, 170, 230)},
		} {
			reads := f.reads(tc.device)
			checkCalls(t, h, "state", tc.device, tc.want)
			for i, r := range reads {
				at := r.at.Sub(h.t0)
				if confirm := at == tc.confirm; confirm != (r.prio == scheduler.PriorityConfirm) {
					t.Errorf("%s: read at %v at priority %v", tc.device, at, r.prio)
				}
				if r.prio != scheduler.PriorityPoll || i == 0 {
					continue
				}
				if !r.at.Equal(r.at.Truncate(grid)) {
					t.Errorf("%s: periodic read at %v, off the grid", tc.device, at)
				}
				if i > 1 { // the second read is the device's place in the spread
					if g := r.at.Sub(reads[i-1].at); g < time.Minute || g >= time.Minute+grid {
						t.Errorf("%s: periodic read at %v, %v after the read before, want [1m, 1m10s)", tc.device, at, g)
					}
				}
			}
		}
	})
}

// TestIntervalNotWholeSeconds: an interval of 2.5 s reads every 3 s, never
// more often than the interval, and reads on request still keep the
// per-device limit.
func TestIntervalNotWholeSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = 2500 * time.Millisecond
		f := newFake(devs(2)...)
		f.latency = 100 * time.Millisecond
		h := start(t, f, Config{Interval: interval, ConfirmDelay: 700 * time.Millisecond, ListInterval: time.Hour})
		time.Sleep(time.Second)
		if got := h.p.Stats().Interval; got != 3*time.Second {
			t.Errorf("interval %v, want 2.5s rounded up to the grid: 3s", got)
		}
		for i := range 150 { // commands and reads on request for D00 at uneven instants
			if i%4 == 0 {
				if err := h.p.ReadNow("H6072", "D00", nil); err != nil {
					t.Fatal(err)
				}
			} else {
				h.p.Confirm("H6072", "D00")
			}
			time.Sleep(time.Duration(300+(i*53)%1900) * time.Millisecond)
		}
		time.Sleep(time.Minute)
		h.stop()

		for _, d := range []string{"D00", "D01"} {
			reads := f.reads(d)
			if len(reads) < 40 {
				t.Errorf("%s: only %d reads", d, len(reads))
			}
			for i, r := range reads {
				if i == 0 {
					continue
				}
				g, at := r.at.Sub(reads[i-1].at), r.at.Sub(h.t0)
				if g < MinInterval {
					t.Fatalf("%s: reads %v apart at %v, below the per-device limit", d, g, at)
				}
				if r.prio == scheduler.PriorityPoll && g < interval {
					t.Fatalf("%s: periodic read at %v only %v after the read before, within the interval %v", d, at, g, interval)
				}
				if d == "D01" && i > 1 && g != 3*time.Second { // the second read is its place in the spread
					t.Fatalf("%s: reads %v apart at %v, want every 3s", d, g, at)
				}
			}
		}
	})
}
