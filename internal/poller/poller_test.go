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
// second, each exactly once per interval.
func TestReadsSpreadEvenlyOncePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 200
		f := newFake(devs(n)...)
		f.latency = 500 * time.Millisecond // answers take time; the plan must not drift
		h := start(t, f, Config{Interval: time.Minute, ListInterval: time.Hour})
		time.Sleep(10*time.Minute + 700*time.Millisecond) // the reads at 600 s are answered
		h.stop()

		// The list arrives at 0.5 s; every device is read at the next grid
		// instant, 1 s; the second reads fill the 60 grid instants of the
		// interval that follows in list order, and the periodic reads keep
		// that spread.
		batches := map[time.Duration]int{}
		for i, d := range f.list {
			reads := f.reads(d.Device)
			if len(reads) != 10 {
				t.Fatalf("%s: %d reads in 10 intervals, want the first read and one a minute", d.Device, len(reads))
			}
			if got := reads[0].at.Sub(h.t0); got != time.Second {
				t.Errorf("%s: first read at %v, want 1s (at once)", d.Device, got)
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
		// comes a full interval after it, not at 60 s.
		if got, want := offsets(h.t0, reads), secs(0, 14, 74, 106, 112, 172); !slices.Equal(got, want) {
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
		h := start(t, f, Config{Interval: time.Minute, OfflineMaxInterval: 10 * time.Minute})
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

func TestDeviceListChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b, c := dev("A", false), dev("B", false), dev("C", false)
		f := newFake(a, b)
		h := start(t, f, Config{Interval: time.Minute, ListInterval: 10 * time.Minute})
		time.Sleep(5 * time.Minute)
		f.setList(b, c)
		time.Sleep(10 * time.Minute) // the list at 10m sees the change
		renamed := b
		renamed.Name = "hall"
		f.setList(renamed, c)
		time.Sleep(10 * time.Minute) // 20m: a rename
		// 30m: unchanged
		time.Sleep(10*time.Minute + time.Second)
		var refresh outcome
		if err := h.p.RefreshDevices(refresh.done); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if _, once, err := refresh.get(); err != nil || !once {
			t.Errorf("RefreshDevices reported %v (once: %v)", err, once)
		}
		if got := h.reg.Devices(); len(got) != 2 || got[0].Name != "hall" {
			t.Errorf("Devices() = %v", got)
		}
		h.stop()

		ev := h.c.of("devices", "")
		if len(ev) != 3 {
			t.Fatalf("devices events %+v, want 3 (first list, add/remove, rename)", ev)
		}
		check := func(e event, all, add, rem []string, at time.Duration) {
			t.Helper()
			if !slices.Equal(e.all, all) || !slices.Equal(e.add, add) || !slices.Equal(e.rem, rem) || e.at.Sub(h.t0) != at {
				t.Errorf("devices event %+v at %v, want all %v added %v removed %v at %v", e, e.at.Sub(h.t0), all, add, rem, at)
			}
		}
		check(ev[0], []string{"A", "B"}, []string{"A", "B"}, []string{}, 0)
		check(ev[1], []string{"B", "C"}, []string{"C"}, []string{"A"}, 10*time.Minute)
		check(ev[2], []string{"B", "C"}, []string{}, []string{}, 20*time.Minute)
		if n := f.count("list"); n != 5 {
			t.Errorf("%d list requests, want 5 (0, 10, 20, 30m and the refresh)", n)
		}
		for _, r := range f.reads("A") {
			if r.at.Sub(h.t0) > 10*time.Minute { // the one at 10m went before the list's answer
				t.Errorf("removed device read at %v", r.at.Sub(h.t0))
			}
		}
		if got := f.reads("C"); len(got) == 0 || got[0].at.Sub(h.t0) != 10*time.Minute {
			t.Errorf("new device's reads %v, want the first when it appeared at 10m", offsets(h.t0, got))
		}
		if _, _, known := h.snapshot("H6072", "A"); known {
			t.Error("removed device still has a snapshot")
		}
	})
}

func TestListRetriedWithBackoff(t *testing.T) {
	auth := &cloud.APIError{Kind: cloud.ErrAuth, Endpoint: "devices", HTTPStatus: 401}
	transient := &cloud.APIError{Kind: cloud.ErrTransient, Endpoint: "devices", HTTPStatus: 503}
	for _, tc := range []struct {
		name string
		errs []error
		want []time.Duration
	}{
		{"transient", []error{transient, transient, transient}, secs(0, 10, 30, 70)},
		{"auth at most once a minute", []error{auth, auth}, secs(0, 60, 120)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(devs(1)...)
				f.listErr = tc.errs
				h := start(t, f, Config{})
				if err := h.p.ReadNow("H6072", "D00", nil); !errors.Is(err, ErrUnknownDevice) {
					t.Errorf("ReadNow before any list: %v, want ErrUnknownDevice", err)
				}
				time.Sleep(5 * time.Minute)
				h.stop()
				lists := f.filter(func(c call) bool { return c.kind == "list" })
				if got := offsets(h.t0, lists); !slices.Equal(got, tc.want) {
					t.Errorf("list requests at %v, want %v", got, tc.want)
				}
				ev := h.c.of("devices", "")
				if len(ev) != 1 || ev[0].at.Sub(h.t0) != tc.want[len(tc.want)-1] {
					t.Errorf("devices events %+v, want one after the list succeeded", ev)
				}
			})
		})
	}
}

func TestOnlyChangedValuesReachConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(1)...)
		f.setState(func(device string, n int) (cloud.DeviceState, error) {
			vals := []map[string]any{
				{capability.InstancePower: 1, capability.InstanceBrightness: 50, "sensorTemperature": 21.5},
				{capability.InstancePower: 1, capability.InstanceBrightness: 50, "sensorTemperature": 21.5},
				{capability.InstancePower: 1, capability.InstanceBrightness: 80, "sensorTemperature": 21.5},
				{capability.InstancePower: 1, capability.InstanceBrightness: "", "sensorTemperature": 21.5},
			}[min(n, 3)]
			return mkState("H6072", device, true, vals), nil
		})
		h := start(t, f, Config{Interval: time.Minute})
		time.Sleep(4*time.Minute - time.Second)
		h.stop()
		ev := h.c.of("state", "D00")
		if len(ev) != 2 {
			t.Fatalf("state events %+v, want 2 (first read, brightness change)", ev)
		}
		if len(ev[0].changed) != 3 || !ev[0].online {
			t.Errorf("first read reported %v online %v, want all three values, online", ev[0].changed, ev[0].online)
		}
		if len(ev[1].changed) != 1 || !capability.Equal(ev[1].changed[capability.InstanceBrightness], int64(80)) {
			t.Errorf("second event %v, want only brightness 80", ev[1].changed)
		}
		// The 4th read's "" (not queryable) neither reported nor erased.
		vals, online, known := h.snapshot("H6072", "D00")
		if !known || !online || !capability.Equal(vals[capability.InstanceBrightness], int64(80)) {
			t.Errorf("snapshot %v online %v known %v, want brightness 80 kept", vals, online, known)
		}
	})
}

func TestEmptyStringNeverReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(1)...)
		f.setState(func(device string, n int) (cloud.DeviceState, error) {
			return mkState("H6072", device, true, map[string]any{capability.InstancePower: 1, capability.InstanceColorRGB: ""}), nil
		})
		h := start(t, f, Config{})
		synctest.Wait()
		h.setOptimistic("H6072", "D00", map[string]any{capability.InstanceWorkMode: ""})
		h.stop()
		ev := h.c.of("state", "D00")
		if len(ev) != 1 {
			t.Fatalf("state events %+v", ev)
		}
		if _, ok := ev[0].changed[capability.InstanceColorRGB]; ok {
			t.Errorf("an empty-string value was reported: %v", ev[0].changed)
		}
		vals, _, _ := h.snapshot("H6072", "D00")
		if _, ok := vals[capability.InstanceColorRGB]; ok {
			t.Errorf("an empty-string value was stored: %v", vals)
		}
		if _, ok := vals[capability.InstanceWorkMode]; ok {
			t.Errorf("an empty optimistic value was stored: %v", vals)
		}
	})
}

func TestOptimisticValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(1)...)
		power, brightness := 0, 50
		f.setState(func(device string, n int) (cloud.DeviceState, error) {
			return mkState("H6072", device, true, map[string]any{capability.InstancePower: power, capability.InstanceBrightness: brightness}), nil
		})
		h := start(t, f, Config{Interval: time.Minute})
		time.Sleep(10 * time.Second)

		// A command the device obeyed: the confirming read agrees.
		h.setOptimistic("H6072", "D00", map[string]any{capability.InstancePower: 1})
		power = 1
		h.p.Confirm("H6072", "D00")
		time.Sleep(10 * time.Second)
		// Events: the first read, the optimistic value; the read adds none.
		if ev := h.c.of("state", "D00"); len(ev) != 2 {
			t.Errorf("a confirming read that agrees produced events %+v", ev[2:])
		}
		if vals, _, _ := h.snapshot("H6072", "D00"); !capability.Equal(vals[capability.InstancePower], int64(1)) {
			t.Errorf("snapshot %v, want the optimistic power 1", vals)
		}

		// A command the device did not apply: the correction is reported.
		h.setOptimistic("H6072", "D00", map[string]any{capability.InstanceBrightness: 30})
		h.p.Confirm("H6072", "D00")
		time.Sleep(10 * time.Second)
		h.stop()
		ev := h.c.of("state", "D00")
		if len(ev) != 4 || len(ev[3].changed) != 1 || !capability.Equal(ev[3].changed[capability.InstanceBrightness], int64(50)) {
			t.Errorf("state events %+v, want the optimistic brightness 30, then the correction brightness 50 only", ev)
		}
	})
}

func TestReadInFlightDoesNotUndoOptimisticValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(1)...)
		f.latency = time.Second
		power := 0
		f.setState(func(device string, n int) (cloud.DeviceState, error) {
			return mkState("H6072", device, true, map[string]any{capability.InstancePower: power}), nil
		})
		h := start(t, f, Config{Interval: time.Minute})
		time.Sleep(61*time.Second + 500*time.Millisecond) // list at 1s, reads at 1s and 61s: that one is in flight, answering power 0
		h.setOptimistic("H6072", "D00", map[string]any{capability.InstancePower: 1})
		power = 1
		h.p.Confirm("H6072", "D00")
		time.Sleep(10 * time.Second)
		h.stop()
		if n := len(f.reads("D00")); n != 3 {
			t.Errorf("%d reads, want 3 (start, periodic, confirm)", n)
		}
		// Events: the first read, the optimistic value, and nothing from
		// the read in flight.
		if ev := h.c.of("state", "D00"); len(ev) != 2 {
			t.Errorf("a read sent before the command flipped the value back: %+v", ev[2:])
		}
	})
}

func TestReadNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(1)...)
		f.latency = 200 * time.Millisecond
		h := start(t, f, Config{Interval: time.Minute})
		// The list arrives at 0.2s, the first read goes at the next grid
		// instant, 1s; the next may go at 3s.
		time.Sleep(1500 * time.Millisecond)
		var now outcome
		if err := h.p.ReadNow("H6072", "D00", now.done); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		if at, once, err := now.get(); err != nil || !once || at.Sub(h.t0) != 3200*time.Millisecond {
			t.Errorf("ReadNow done at %v with %v (once: %v), want nil at 3.2s (2s after the last read, plus latency)", at.Sub(h.t0), err, once)
		}
		reads := f.reads("D00")
		if len(reads) != 2 || reads[1].prio != scheduler.PriorityConfirm {
			t.Errorf("reads %+v, want the second at confirm priority", reads)
		}
		if err := h.p.ReadNow("H6072", "nope", nil); !errors.Is(err, ErrUnknownDevice) {
			t.Errorf("ReadNow of an unknown device: %v", err)
		}
		if p := h.p.Progress(); p.Sub(h.t0) != 3200*time.Millisecond {
			t.Errorf("progress %v, want the last completed read at 3.2s", p.Sub(h.t0))
		}

		// Requests waiting at shutdown hear of it; later ones are refused.
		f.latency = time.Hour
		var pending outcome
		if err := h.p.ReadNow("H6072", "D00", pending.done); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		h.stop()
		if _, once, err := pending.get(); !errors.Is(err, ErrStopped) || !once {
			t.Errorf("pending ReadNow at shutdown: %v (once: %v), want ErrStopped", err, once)
		}
		if err := h.p.ReadNow("H6072", "D00", nil); !errors.Is(err, ErrStopped) {
			t.Errorf("ReadNow after stop: %v, want ErrStopped", err)
		}
		if err := h.p.Run(t.Context()); err == nil {
			t.Error("a second Run succeeded")
		}
		time.Sleep(time.Hour) // the late answer arrives and is dropped
	})
}

func TestSubmissionRefusedIsNotAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(1)...)
		h := start(t, f, Config{Interval: time.Minute})
		synctest.Wait()
		f.mu.Lock()
		f.reject = errors.New("scheduler: queue full")
		f.mu.Unlock()
		var refused outcome
		if err := h.p.ReadNow("H6072", "D00", refused.done); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Minute)
		if _, once, err := refused.get(); err == nil || !once {
			t.Errorf("ReadNow refused by the scheduler reported %v (once: %v), want the refusal", err, once)
		}
		if st, reg := h.p.Stats(), h.reg.Stats(); reg.Unreachable != 0 || st.ReadErrors != 0 {
			t.Errorf("stats %+v: a refused submission counted as a device failure", st)
		}
		h.stop()
	})
}

func TestScenes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(dev("S", true), dev("P", false))
		opt := func(n int) []capability.Option {
			var out []capability.Option
			for i := range n {
				out = append(out, capability.Option{Name: fmt.Sprint("scene ", i), Value: map[string]any{"paramId": int64(i), "id": int64(i)}})
			}
			return out
		}
		f.scenes["S"], f.diy["S"] = opt(3), opt(2)
		h := start(t, f, Config{Interval: time.Minute, SceneInterval: 6 * time.Hour})
		time.Sleep(7 * time.Hour) // refetched at 6h, unchanged
		f.mu.Lock()
		f.scenes["S"] = opt(4)
		f.mu.Unlock()
		var refresh outcome
		if err := h.p.RefreshScenes("H6072", "S", refresh.done); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if _, once, err := refresh.get(); err != nil || !once {
			t.Errorf("RefreshScenes reported %v (once: %v)", err, once)
		}
		if err := h.p.RefreshScenes("H6072", "P", nil); !errors.Is(err, ErrNoScenes) {
			t.Errorf("RefreshScenes of a device without scenes: %v", err)
		}
		h.stop()

		if n := len(f.filter(func(c call) bool { return c.device == "P" && c.kind != "state" })); n != 0 {
			t.Errorf("%d scene fetches for a device without scene capabilities", n)
		}
		lights := f.filter(func(c call) bool { return c.kind == "scenes" })
		if got, want := offsets(h.t0, lights), []time.Duration{0, 6 * time.Hour, 7 * time.Hour}; !slices.Equal(got, want) {
			t.Errorf("scene fetches at %v, want %v", got, want)
		}
		if n := f.count("diy"); n != 3 {
			t.Errorf("%d DIY-scene fetches, want 3", n)
		}
		ev := h.c.of("scenes", "S")
		if len(ev) != 2 || ev[0].light != 3 || ev[0].diy != 2 || ev[1].light != 4 || ev[1].at.Sub(h.t0) != 7*time.Hour {
			t.Errorf("scene events %+v, want (3,2) at start and (4,2) after the refresh, nothing for the unchanged fetch", ev)
		}
		if light, diy := h.scenes("H6072", "S"); len(light) != 4 || len(diy) != 2 {
			t.Errorf("Scenes() = %d, %d", len(light), len(diy))
		}
	})
}

// TestRefusedKeyDoesNotBackOff: reads failing because the cloud refuses the
// API key (or the scheduler holds requests back after such a refusal) mark
// the device unreachable like other failures but do not back it off, so it
// is read again at the poll interval as soon as the key is accepted.
func TestRefusedKeyDoesNotBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := &cloud.APIError{Kind: cloud.ErrAuth, Endpoint: "state", HTTPStatus: 401, Code: 401, Msg: "unauthorized"}
		f := newFake(devs(1)...)
		f.setState(func(device string, n int) (cloud.DeviceState, error) {
			switch {
			case n == 1:
				return cloud.DeviceState{}, refused
			case n >= 2 && n <= 5:
				return cloud.DeviceState{}, fmt.Errorf("%w: %w", scheduler.ErrAuthHoldoff, refused)
			}
			return mkState("H6072", device, true, map[string]any{capability.InstancePower: 1}), nil
		})
		h := start(t, f, Config{Interval: time.Minute})
		time.Sleep(400 * time.Second)
		h.stop()

		if got, want := offsets(h.t0, f.reads("D00")), secs(0, 60, 120, 180, 240, 300, 360); !slices.Equal(got, want) {
			t.Errorf("reads at %v, want %v (no back-off while the key is refused)", got, want)
		}
		if un := h.c.of("unreachable", "D00"); len(un) != 1 || un[0].at.Sub(h.t0) != 180*time.Second {
			t.Errorf("unreachable events %+v, want one at the third failed read (180s)", un)
		}
		if ev := h.c.of("state", "D00"); len(ev) != 2 || ev[1].at.Sub(h.t0) != 360*time.Second || !ev[1].online {
			t.Errorf("state events %+v, want the first read and the recovery at 360s", ev)
		}
	})
}

// TestSceneRequestsAtShutdown: RefreshScenes callers hear of the shutdown,
// whether their round was in flight or not yet sent.
func TestSceneRequestsAtShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(dev("S", true))
		h := start(t, f, Config{})
		synctest.Wait() // the list and the first round are answered
		f.mu.Lock()
		f.latency = time.Hour
		f.mu.Unlock()
		var inFlight, next outcome
		if err := h.p.RefreshScenes("H6072", "S", inFlight.done); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute) // that round has gone out
		if err := h.p.RefreshScenes("H6072", "S", next.done); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute) // and this one waits for it
		if n := f.count("scenes"); n != 2 {
			t.Fatalf("%d scene fetches, want the first and the refresh", n)
		}
		h.stop()
		if _, once, err := inFlight.get(); !errors.Is(err, ErrStopped) || !once {
			t.Errorf("RefreshScenes in flight at shutdown: %v (once: %v), want ErrStopped", err, once)
		}
		if _, once, err := next.get(); !errors.Is(err, ErrStopped) || !once {
			t.Errorf("RefreshScenes waiting at shutdown: %v (once: %v), want ErrStopped", err, once)
		}
		time.Sleep(time.Hour) // the late answers arrive and are dropped
		if _, once, _ := inFlight.get(); !once {
			t.Error("a late answer called RefreshScenes's done again")
		}
	})
}
