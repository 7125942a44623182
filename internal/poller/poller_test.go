package poller

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

// offsets returns the calls' instants relative to t0.
func offsets(t0 time.Time, calls []call) []time.Duration {
	out := make([]time.Duration, len(calls))
	for i, c := range calls {
		out[i] = c.at.Sub(t0)
	}
	return out
}

func gaps(calls []call) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(calls); i++ {
		out = append(out, calls[i].at.Sub(calls[i-1].at))
	}
	return out
}

func secs(s ...float64) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, x := range s {
		out[i] = time.Duration(x * float64(time.Second))
	}
	return out
}

// TestReadsSpreadEvenlyOncePerInterval: 200 devices at 60 s are all read
// at once at the start, then in batches on the one-second grid, 3 or 4 a
// second, each exactly once per interval. The grid is fixed at 1 s, the
// finest (the default for 200 devices is 10 s, periodicGrid): the test is
// the spread's, which the finest grid shows best; the default grids are
// TestThousandDevicesBatchedOnGrid's and TestSmallAccountsOnAWiderGrid's.
func TestReadsSpreadEvenlyOncePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 200
		f := newFake(devs(n)...)
		f.latency = 500 * time.Millisecond // answers take time; the plan must not drift
		h := start(t, f, Config{Interval: time.Minute, ListInterval: time.Hour, Grid: time.Second})
		time.Sleep(10*time.Minute + 700*time.Millisecond) // the reads at 600 s are answered
		h.stop()

		// The list arrives at 0.5 s; every device is read at once (not at
		// the next grid instant); the second reads fill the 60 grid instants of the
		// interval that follows in list order, and the periodic reads keep
		// that spread.
		batches := map[time.Duration]int{}
		for i, d := range f.list {
			reads := f.reads(d.Device)
			if len(reads) != 10 {
				t.Fatalf("%s: %d reads in 10 intervals, want the first read and one a minute", d.Device, len(reads))
			}
			if got := reads[0].at.Sub(h.t0); got != 500*time.Millisecond {
				t.Errorf("%s: first read at %v, want 500ms (at once, when the list arrives)", d.Device, got)
			}
			if reads[0].prio != scheduler.PriorityFirst {
				t.Errorf("%s: first read at priority %v, want %v (the scheduler sends it beside the steady reads)", d.Device, reads[0].prio, scheduler.PriorityFirst)
			}
			slot := i * 60 / n
			if got, want := reads[1].at.Sub(h.t0), time.Minute+time.Second+time.Duration(slot)*time.Second; got != want {
				t.Errorf("%s: second read at %v, want %v (grid instant %d of 60 from 1m1s)", d.Device, got, want, slot)
			}
			for _, g := range gaps(reads[1:]) {
				if g != time.Minute {
					t.Errorf("%s: reads %v apart, want 1m: %v", d.Device, g, offsets(h.t0, reads))
					break
				}
			}
			for _, r := range reads[1:] {
				if !r.at.Equal(r.at.Truncate(readGrid)) {
					t.Errorf("%s: periodic read at %v, off the one-second grid", d.Device, r.at.Sub(h.t0))
				}
				batches[r.at.Sub(h.t0)]++
				if r.prio != scheduler.PriorityPoll {
					t.Errorf("periodic read at priority %v", r.prio)
				}
			}
		}
		// Every second from 61 s to 600 s sends a batch, and the batches
		// differ by at most one read: 200/60 is 3 or 4.
		if len(batches) != 540 {
			t.Errorf("periodic reads at %d instants, want 540 (every second from 61 s to 600 s)", len(batches))
		}
		for at, k := range batches {
			if k < 3 || k > 4 {
				t.Errorf("%d reads at %v, want 3 or 4", k, at)
			}
		}
	})
}

func TestIntervalFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(1)...)
		h := start(t, f, Config{Interval: 500 * time.Millisecond})
		time.Sleep(time.Minute - time.Millisecond)
		if got := h.p.Stats().Interval; got != 2*time.Second {
			t.Errorf("interval %v, want the 2s floor", got)
		}
		h.stop()
		reads := f.reads("D00")
		if len(reads) != 30 {
			t.Errorf("%d reads in a minute, want 30 (the per-device limit)", len(reads))
		}
		for _, g := range gaps(reads) {
			if g != 2*time.Second {
				t.Fatalf("reads %v apart, want 2s", g)
			}
		}
		if !h.logs.contains("POLL_INTERVAL") {
			t.Errorf("no warning about the clamped POLL_INTERVAL; log: %s", h.logs)
		}
	})
}

func TestDailyLimitSimulatedDay(t *testing.T) {
	for _, tc := range []struct {
		name     string
		limit    int
		interval time.Duration
	}{
		{"the limit lengthens the interval", 10000, 30 * time.Second},
		// The configured interval rules and is not whole seconds: 38 s on the grid.
		{"interval not whole seconds", 30000, 37500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 10
				commands := tc.limit / 20 // the default allowance
				var list []capability.Device
				for i := range n {
					list = append(list, dev(fmt.Sprintf("L%02d", i), true))
				}
				f := newFake(list...)
				cfg := Config{Interval: tc.interval, DailyLimit: tc.limit}
				h := start(t, f, cfg)
				want, plan := PlanInterval(n, cfg)

				// A day of commands, evenly spread, each followed by its confirm.
				every := day / time.Duration(commands)
				time.Sleep(every / 2)
				for i := range commands {
					if i > 0 {
						time.Sleep(every)
					}
					h.p.Confirm("H6072", list[i%n].Device)
				}
				time.Sleep(time.Until(h.t0.Add(day)) - time.Nanosecond)
				if got := h.p.Stats().Interval; got != want {
					t.Errorf("interval %v, want the planned %v", got, want)
				}
				h.stop()

				end := h.t0.Add(day)
				calls := f.filter(func(c call) bool { return c.at.Before(end) })
				total := len(calls) + commands
				t.Logf("plan %+v; measured: %d requests + %d commands", plan, len(calls), commands)
				if total > plan.Budget {
					t.Errorf("%d requests in a simulated day, over the budget of %d (limit %d less 10%%)", total, plan.Budget, tc.limit)
				}
				confirms := len(f.filter(func(c call) bool { return c.prio == scheduler.PriorityConfirm }))
				if confirms != commands {
					t.Errorf("%d confirming reads for %d spread-out commands, want one each", confirms, commands)
				}
				// The plan uses the budget rather than starving the devices.
				if reads := f.count("state"); reads < plan.StateRequests*9/10 {
					t.Errorf("%d reads a day, want about the planned %d", reads, plan.StateRequests)
				}
				// No periodic read comes within the planned interval of the
				// read before it (so not within the configured one either),
				// nor any read within the per-device limit.
				for _, d := range list {
					reads := f.reads(d.Device)
					for i := 1; i < len(reads); i++ {
						g := reads[i].at.Sub(reads[i-1].at)
						if g < MinInterval || (reads[i].prio == scheduler.PriorityPoll && g < want) {
							t.Fatalf("%s: %v read at %v, %v after the read before", d.Device, reads[i].prio, reads[i].at.Sub(h.t0), g)
						}
					}
				}
			})
		})
	}
}

func TestReplanWhenDeviceCountChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(2)...)
		cfg := Config{Interval: time.Minute, DailyLimit: 10000}
		h := start(t, f, cfg)
		synctest.Wait()
		if got := h.p.Stats().Interval; got != time.Minute {
			t.Errorf("2 devices: interval %v, want the configured 1m", got)
		}
		f.setList(devs(40)...)
		time.Sleep(DefaultListInterval)
		synctest.Wait()
		want, _ := PlanInterval(40, cfg)
		if want <= time.Minute {
			t.Fatalf("test needs a plan longer than 1m for 40 devices, got %v", want)
		}
		if got := h.p.Stats().Interval; got != want {
			t.Errorf("40 devices: interval %v, want %v", got, want)
		}
		if !h.logs.contains(`"total"`) || !h.logs.contains(`"daily_limit":10000`) {
			t.Errorf("the plan's arithmetic is not logged: %s", h.logs)
		}
		// The 38 new devices are spread over one new interval.
		time.Sleep(want)
		h.stop()
		newReads := f.filter(func(c call) bool {
			return c.kind == "state" && c.at.Sub(h.t0) >= DefaultListInterval && c.at.Sub(h.t0) < DefaultListInterval+want && c.device >= "D02"
		})
		if len(newReads) != 38 {
			t.Errorf("%d first reads of the new devices within one interval, want 38", len(newReads))
		}
	})
}

func TestConfirmDebounce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(1)...)
		h := start(t, f, Config{Interval: time.Minute, ConfirmDelay: 2 * time.Second})
		time.Sleep(10 * time.Second)
		for range 5 { // a burst: t = 10, 10.5 … 12 s
			h.p.Confirm("H6072", "D00")
			time.Sleep(500 * time.Millisecond)
		}
		time.Sleep(100*time.Second - 12500*time.Millisecond)
		for range 11 { // a long burst: t = 100 … 110 s, one a second
			h.p.Confirm("H6072", "D00")
			time.Sleep(time.Second)
		}
		time.Sleep(200*time.Second - 111*time.Second)
		h.stop()

		reads := f.reads("D00")
		var confirms []call
		for _, r := range reads {
			if r.prio == scheduler.PriorityConfirm {
				confirms = append(confirms, r)
			}
		}
		// 12 + 2 s; the long burst: capped at 100 + 3×2 s, then 110 + 2 s.
		if got, want := offsets(h.t0, confirms), secs(14, 106, 112); !slices.Equal(got, want) {
			t.Errorf("confirming reads at %v, want %v", got, want)
		}
		// A confirming read takes the periodic read's place: the next one
		// comes a full interval after it, not at 60 s, on the grid (10 s
		// for one device at 1 min).
		if got, want := offsets(h.t0, reads), secs(0, 14, 80, 106, 112, 180); !slices.Equal(got, want) {
			t.Errorf("reads at %v, want %v", got, want)
		}
	})
}

func TestPerDeviceLimitUnderCommandPressure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(1)...)
		f.latency = 300 * time.Millisecond
		h := start(t, f, Config{Interval: 2 * time.Second, ConfirmDelay: 500 * time.Millisecond})
		time.Sleep(time.Second) // the list has arrived
		for i := range 400 {    // confirms and reads on request at uneven instants
			if i%3 == 0 {
				if err := h.p.ReadNow("H6072", "D00", nil); err != nil {
					t.Fatal(err)
				}
			} else {
				h.p.Confirm("H6072", "D00")
			}
			time.Sleep(time.Duration(100+(i*37)%700) * time.Millisecond)
		}
		h.stop()
		reads := f.reads("D00")
		for i, r := range reads {
			if i > 0 && r.at.Sub(reads[i-1].at) < MinInterval {
				t.Fatalf("reads %v apart at %v", r.at.Sub(reads[i-1].at), r.at.Sub(h.t0))
			}
			// No minute holds more than 30 reads.
			j := i
			for j < len(reads) && reads[j].at.Sub(r.at) < time.Minute {
				j++
			}
			if j-i > 30 {
				t.Fatalf("%d reads within a minute from %v", j-i, r.at.Sub(h.t0))
			}
		}
		if len(reads) < 60 {
			t.Errorf("only %d reads in %v: reads on request were lost", len(reads), time.Since(h.t0))
		}
	})
}

func TestOfflineBackoffAndRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(1)...)
		f.setState(func(device string, n int) (cloud.DeviceState, error) {
			return mkState("H6072", device, n >= 7, map[string]any{capability.InstancePower: 0}), nil
		})
		h := start(t, f, Config{Interval: time.Minute}) // OfflineMaxInterval: 10 min
		time.Sleep(2000 * time.Second)
		if st := h.reg.Stats(); st.Offline != 1 {
			t.Errorf("stats while offline: %+v, want 1 offline", st)
		}
		time.Sleep(2900*time.Second - 2000*time.Second)
		h.stop()

		got := gaps(f.reads("D00"))
		want := secs(60, 120, 240, 480, 600, 600, 600, 60, 60, 60)
		if !slices.Equal(got, want) {
			t.Errorf("gaps between reads %v, want %v (doubling to 10m, back to 1m when online)", got, want)
		}
		ev := h.c.of("state", "D00")
		if len(ev) != 2 || ev[0].online || !ev[1].online || len(ev[1].changed) != 0 {
			t.Fatalf("state events %+v, want offline with values, then online with nothing else changed", ev)
		}
		if ev[1].at.Sub(h.t0) != 2700*time.Second {
			t.Errorf("back online reported at %v, want 2700s", ev[1].at.Sub(h.t0))
		}
	})
}

func TestUnreachableAfterFailuresAndRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(1)...)
		f.setState(func(device string, n int) (cloud.DeviceState, error) {
			if n >= 1 && n <= 4 {
				return cloud.DeviceState{}, errDevice
			}
			return mkState("H6072", device, true, map[string]any{capability.InstancePower: 1}), nil
		})
		h := start(t, f, Config{Interval: time.Minute})
		time.Sleep(500 * time.Second)
		if st, reg := h.p.Stats(), h.reg.Stats(); reg.Unreachable != 1 || st.ReadErrors != 4 {
			t.Errorf("stats %+v, want 1 unreachable after 4 errors", st)
		}
		time.Sleep(1000*time.Second - 500*time.Second)
		h.stop()

		if got, want := offsets(h.t0, f.reads("D00")), secs(0, 60, 120, 240, 480, 960); !slices.Equal(got, want) {
			t.Errorf("reads at %v, want %v (failures back off)", got, want)
		}
		un := h.c.of("unreachable", "D00")
		if len(un) != 1 || un[0].at.Sub(h.t0) != 240*time.Second || !errors.Is(un[0].err, errDevice) {
			t.Errorf("unreachable events %+v, want one at the third failure (240s) carrying the error", un)
		}
		ev := h.c.of("state", "D00")
		if len(ev) != 2 || ev[1].at.Sub(h.t0) != 960*time.Second || !ev[1].online {
			t.Errorf("state events %+v, want the first read and the recovery at 960s with online", ev)
		}
	})
}
