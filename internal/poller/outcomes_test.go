package poller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
)

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
		var power atomic.Int64 // written by the test, read by the fake's goroutine
		brightness := 50
		f.setState(func(device string, n int) (cloud.DeviceState, error) {
			return mkState("H6072", device, true, map[string]any{capability.InstancePower: power.Load(), capability.InstanceBrightness: brightness}), nil
		})
		h := start(t, f, Config{Interval: time.Minute})
		time.Sleep(10 * time.Second)

		// A command the device obeyed: the confirming read agrees.
		h.setOptimistic("H6072", "D00", map[string]any{capability.InstancePower: 1})
		power.Store(1)
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
		var power atomic.Int64 // written by the test, read by the fake's goroutine
		f.setState(func(device string, n int) (cloud.DeviceState, error) {
			return mkState("H6072", device, true, map[string]any{capability.InstancePower: power.Load()}), nil
		})
		h := start(t, f, Config{Interval: time.Minute})
		time.Sleep(70*time.Second + 500*time.Millisecond) // list at 1s, reads at 1s and 70s (the 10 s grid): that one is in flight, answering power 0
		h.setOptimistic("H6072", "D00", map[string]any{capability.InstancePower: 1})
		power.Store(1)
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
		// The list arrives at 0.2s, the first read goes at once; the next
		// may go at 2.2s.
		time.Sleep(1500 * time.Millisecond)
		var now outcome
		if err := h.p.ReadNow("H6072", "D00", now.done); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		if at, once, err := now.get(); err != nil || !once || at.Sub(h.t0) != 2400*time.Millisecond {
			t.Errorf("ReadNow done at %v with %v (once: %v), want nil at 2.4s (2s after the last read, plus latency)", at.Sub(h.t0), err, once)
		}
		reads := f.reads("D00")
		if len(reads) != 2 || reads[1].prio != scheduler.PriorityConfirm {
			t.Errorf("reads %+v, want the second at confirm priority", reads)
		}
		if err := h.p.ReadNow("H6072", "nope", nil); !errors.Is(err, ErrUnknownDevice) {
			t.Errorf("ReadNow of an unknown device: %v", err)
		}
		if p := h.p.Progress(); p.Sub(h.t0) != 2400*time.Millisecond {
			t.Errorf("progress %v, want the last completed read at 2.4s", p.Sub(h.t0))
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
// API key (or the scheduler holds requests back after such a refusal) are
// the account's failures, not the device's: it stays available with its
// last values, is not backed off, and is read again at the poll interval
// as soon as the key is accepted.
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
		if un := h.c.of("unreachable", "D00"); len(un) != 0 {
			t.Errorf("unreachable events %+v, want none: the bridge's hold-off is no failure of the device", un)
		}
		if ev := h.c.of("state", "D00"); len(ev) != 1 || !ev[0].online {
			t.Errorf("state events %+v, want the first read only (nothing changed)", ev)
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

// TestRestoredDevicesAreReadAtOnce: devices the registry restored from the
// state directory are still new to the poller, which reads them at once
// when the cloud's list confirms them, and drops one the list lacks.
func TestRestoredDevicesAreReadAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		list := devs(3)
		f := newFake(list[:2]...)
		reg := registry.New(zerolog.Nop())
		var saved registry.Saved
		for _, d := range list {
			saved.Devices = append(saved.Devices, registry.SavedDevice{Device: d})
		}
		reg.Restore(saved)
		p := New(f, reg, Config{Interval: time.Hour}, zerolog.Nop())
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		time.Sleep(5 * time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		for _, d := range list[:2] {
			if n := len(f.reads(d.Device)); n != 1 {
				t.Errorf("%s: %d reads in the first 5 s, want 1 (at once)", d.Device, n)
			}
		}
		if n := len(f.reads(list[2].Device)); n != 0 {
			t.Errorf("a restored device the cloud no longer lists was read %d times", n)
		}
		if got := len(reg.Devices()); got != 2 {
			t.Errorf("registry holds %d devices, want the cloud's 2", got)
		}
	})
}
