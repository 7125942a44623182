package poller

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/scheduler"
)

// The tests here hold the loop to exact instants on accounts large enough
// that a device left out of (or left behind in) the due-time agenda shows
// up as a missing, late or extra request.

// numbered returns n devices D000… in that order; every tenth has scenes.
func numbered(n int) []capability.Device {
	out := make([]capability.Device, n)
	for i := range out {
		out[i] = dev(fmt.Sprintf("D%03d", i), i%10 == 0)
	}
	return out
}

// every returns first, first+step, … below end, in seconds.
func every(first, step, end float64) []time.Duration {
	var out []float64
	for t := first; t < end; t += step {
		out = append(out, t)
	}
	return secs(out...)
}

// atOnceThen is a new device's reads: the first at once (t = 0), the next
// at its place in the spread one interval later, then every interval.
func atOnceThen(first, step, end float64) []time.Duration {
	return slices.Concat(secs(0), every(first+step, step, end))
}

// checkCalls compares the instants of a device's calls of one kind.
func checkCalls(t *testing.T, h *harness, kind, device string, want []time.Duration) {
	t.Helper()
	got := offsets(h.t0, h.f.filter(func(c call) bool { return c.kind == kind && c.device == device }))
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: %s requests at %v, want %v", device, kind, got, want)
	}
}

// sleepUntil sleeps until at after the harness started.
func sleepUntil(h *harness, at time.Duration) { time.Sleep(time.Until(h.t0.Add(at))) }

func TestRequestsOnOneDeviceAmongMany(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, end = 200, 599
		list := numbered(n)
		f := newFake(list...)
		// One device falls due every second: D007's reads at 7, 207, 407 s.
		h := start(t, f, Config{Interval: n * time.Second, ListInterval: time.Hour, Grid: time.Second})

		sleepUntil(h, 50500*time.Millisecond)
		h.p.Confirm("H6072", "D030") // read at 30 s, next due at 230 s; confirmed at 52.5 s
		sleepUntil(h, 70500*time.Millisecond)
		var readNow outcome
		if err := h.p.ReadNow("H6072", "D011", readNow.done); err != nil {
			t.Fatal(err)
		}
		sleepUntil(h, 80500*time.Millisecond)
		var scenes outcome
		if err := h.p.RefreshScenes("H6072", "D020", scenes.done); err != nil {
			t.Fatal(err)
		}
		sleepUntil(h, end*time.Second-time.Millisecond)
		h.stop()

		for i, d := range list {
			first := float64(i)
			switch d.Device {
			case "D030": // confirmed 2 s after the command; the next read a full interval later, on the grid
				checkCalls(t, h, "state", d.Device, slices.Concat(secs(0, 52.5), every(253, n, end)))
			case "D011": // read on request at once; the next read a full interval later, on the grid
				checkCalls(t, h, "state", d.Device, slices.Concat(secs(0, 70.5), every(271, n, end)))
			default:
				checkCalls(t, h, "state", d.Device, atOnceThen(first, n, end))
			}
			var wantScenes []time.Duration
			switch {
			case d.Device == "D020":
				wantScenes = secs(0, 80.5)
			case i%10 == 0:
				wantScenes = secs(0)
			}
			checkCalls(t, h, "scenes", d.Device, wantScenes)
			checkCalls(t, h, "diy", d.Device, wantScenes)
		}
		for _, r := range f.reads("") {
			at := r.at.Sub(h.t0)
			confirm := (r.device == "D030" && at == 52500*time.Millisecond) || (r.device == "D011" && at == 70500*time.Millisecond)
			if (r.prio == scheduler.PriorityConfirm) != confirm {
				t.Errorf("%s read at %v at priority %v", r.device, at, r.prio)
			}
		}
		if at, once, err := readNow.get(); err != nil || !once || at.Sub(h.t0) != 70500*time.Millisecond {
			t.Errorf("ReadNow done at %v with %v (once: %v), want nil at 70.5s", at.Sub(h.t0), err, once)
		}
		if at, once, err := scenes.get(); err != nil || !once || at.Sub(h.t0) != 80500*time.Millisecond {
			t.Errorf("RefreshScenes done at %v with %v (once: %v), want nil at 80.5s", at.Sub(h.t0), err, once)
		}
	})
}

func TestDevicesRemovedAndAddedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, end = 200, 599
		list := numbered(n)
		f := newFake(list...)
		h := start(t, f, Config{Interval: n * time.Second, ListInterval: time.Minute, Grid: time.Second})

		gone := func(i int) bool { return i >= 50 && i < 100 }
		var kept []capability.Device
		for i, d := range list {
			if !gone(i) {
				kept = append(kept, d)
			}
		}
		sleepUntil(h, 30*time.Second)
		f.setList(kept...) // the list at 60 s drops D050…D099
		sleepUntil(h, 90*time.Second)
		if got := h.p.Stats().Devices; got != n-50 {
			t.Errorf("%d devices after the removal, want %d", got, n-50)
		}
		f.setList(list...) // the list at 120 s has them again
		sleepUntil(h, end*time.Second-time.Millisecond)
		if got := h.p.Stats().Devices; got != n {
			t.Errorf("%d devices after they came back, want %d", got, n)
		}
		h.stop()

		for i, d := range list {
			var reads, scenes []time.Duration
			switch {
			case !gone(i):
				reads = atOnceThen(float64(i), n, end)
				if i%10 == 0 {
					scenes = secs(0)
				}
			default:
				// Read at the start, removed by the list at 60 s, then read
				// at once as a new device at 120 s and next in the spread
				// over the interval after, 4 s apart.
				again := 120 + 4*float64(i-50)
				reads = slices.Concat(secs(0, 120), every(again+n, n, end))
				if i%10 == 0 {
					scenes = secs(0, 120)
				}
			}
			checkCalls(t, h, "state", d.Device, reads)
			checkCalls(t, h, "scenes", d.Device, scenes)
			checkCalls(t, h, "diy", d.Device, scenes)
		}
		ev := h.c.of("devices", "")
		if len(ev) != 3 || len(ev[1].rem) != 50 || len(ev[2].add) != 50 {
			t.Errorf("%d devices events, want 3: first list, 50 removed, 50 added", len(ev))
		}
	})
}

func TestSameInstantReadsFollowListOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := []string{"A", "B", "C", "D", "E", "F", "G", "H"}
		byID := map[string]capability.Device{}
		var list []capability.Device
		for _, id := range ids {
			byID[id] = dev(id, false)
			list = append(list, byID[id])
		}
		f := newFake(list...)
		h := start(t, f, Config{Interval: time.Hour, ListInterval: time.Hour})

		// confirmAll confirms commands to the devices at once, in the order
		// given, and returns the order of the confirming reads 2 s later.
		confirmAll := func(order ...string) []string {
			t.Helper()
			for _, id := range order {
				h.p.Confirm("H6072", id)
			}
			at := time.Since(h.t0) + DefaultConfirmDelay
			time.Sleep(time.Minute)
			var out []string
			for _, r := range f.reads("") {
				if r.at.Sub(h.t0) == at {
					out = append(out, r.device)
				}
			}
			return out
		}
		sleepUntil(h, 100*time.Second)
		scrambled := []string{"F", "H", "A", "C", "G", "B"}
		if got, want := confirmAll(scrambled...), []string{"A", "B", "C", "F", "G", "H"}; !slices.Equal(got, want) {
			t.Errorf("confirming reads due at the same instant went out as %v, want list order %v", got, want)
		}

		reordered := []string{"E", "G", "C", "A", "H", "B", "D", "F"}
		list = list[:0]
		for _, id := range reordered {
			list = append(list, byID[id])
		}
		f.setList(list...) // the same devices in another order
		var refresh outcome
		if err := h.p.RefreshDevices(refresh.done); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if _, once, err := refresh.get(); err != nil || !once {
			t.Fatalf("RefreshDevices reported %v (once: %v)", err, once)
		}
		if got, want := confirmAll(scrambled...), []string{"G", "C", "A", "H", "B", "F"}; !slices.Equal(got, want) {
			t.Errorf("after the list was reordered, same-instant reads went out as %v, want the new order %v", got, want)
		}
		h.stop()
	})
}

func TestRefusedRequestsAreRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(dev("A", false), dev("B", false), dev("S", true))
		h := start(t, f, Config{Interval: time.Minute, ListInterval: time.Hour})

		sleepUntil(h, 90*time.Second)
		f.mu.Lock()
		f.reject = errors.New("scheduler: queue full")
		f.mu.Unlock()
		sleepUntil(h, 110*time.Second)
		var scenes outcome
		if err := h.p.RefreshScenes("H6072", "S", scenes.done); err != nil {
			t.Fatal(err)
		}
		sleepUntil(h, 130*time.Second)
		f.mu.Lock()
		f.reject = nil
		f.mu.Unlock()
		sleepUntil(h, 299*time.Second)
		h.stop()

		// Every device read at once, then at 60, 80, 100 s a minute
		// apart; the ones refused (A at 120 s, S at 100 s) are tried again
		// an interval later; B's at 140 s comes after the refusals ended.
		checkCalls(t, h, "state", "A", secs(0, 60, 180, 240))
		checkCalls(t, h, "state", "B", secs(0, 80, 140, 200, 260))
		checkCalls(t, h, "state", "S", secs(0, 160, 220, 280))
		// The refused scene round is retried after a minute.
		checkCalls(t, h, "scenes", "S", secs(0, 170))
		checkCalls(t, h, "diy", "S", secs(0, 170))
		if at, once, err := scenes.get(); err == nil || !once || at.Sub(h.t0) != 110*time.Second {
			t.Errorf("RefreshScenes refused by the scheduler reported %v at %v (once: %v), want the refusal at 110s", err, at.Sub(h.t0), once)
		}
	})
}

// TestSceneRoundsBetweenReads: scene rounds fall due on their own schedule,
// not only when the device is next read.
func TestSceneRoundsBetweenReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		plain := dev("P", false)
		f := newFake(dev("S", true), plain)
		h := start(t, f, Config{Interval: time.Hour, ListInterval: 10 * time.Minute, SceneInterval: 10 * time.Minute})

		sleepUntil(h, 5*time.Minute)
		if err := h.p.RefreshScenes("H6072", "S", nil); err != nil {
			t.Fatal(err)
		}
		withScenes := dev("P", true) // the list at 10 min gives P its scenes
		f.setList(dev("S", true), withScenes)
		sleepUntil(h, 40*time.Minute-time.Millisecond)
		h.stop()

		// S: the first round, the refresh and then every 10 minutes after it.
		mins := func(m ...float64) []time.Duration {
			for i := range m {
				m[i] *= 60
			}
			return secs(m...)
		}
		checkCalls(t, h, "scenes", "S", mins(0, 5, 15, 25, 35))
		// P: from the list that listed its scene capabilities.
		checkCalls(t, h, "scenes", "P", mins(10, 20, 30))
		checkCalls(t, h, "state", "S", mins(0))
		checkCalls(t, h, "state", "P", mins(0)) // next at 90 min, in the spread
	})
}
