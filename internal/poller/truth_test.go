package poller

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

func noState() error {
	return &cloud.APIError{Kind: cloud.ErrRequest, Endpoint: cloud.EndpointState, HTTPStatus: 200, Code: 400, Msg: "devices not exist"}
}

// TestStatelessDeviceLearnedOnce: a device whose state reads answer
// "devices not exist" (an app-made group) is read once, then left out of
// polling and confirming reads, shown online, never unreachable, with one
// warning; a device-list refresh after StatelessRecheck reads it again, and
// a read that works makes it an ordinary device.
func TestStatelessDeviceLearnedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(2)...)
		var readable atomic.Bool
		f.setState(func(device string, n int) (cloud.DeviceState, error) {
			if device == "D01" && !readable.Load() {
				return cloud.DeviceState{}, noState()
			}
			return mkState("H6072", device, true, map[string]any{capability.InstancePower: 1}), nil
		})
		h := start(t, f, Config{Interval: 5 * time.Second, ListInterval: time.Hour}) // StatelessRecheck: 30 min
		time.Sleep(40 * time.Second)
		if n := len(f.reads("D01")); n != 1 {
			t.Errorf("the group was read %d times in 40 s at a 5 s interval, want once", n)
		}
		if n := len(f.reads("D00")); n < 8 {
			t.Errorf("the light was read %d times, want every 5 s", n)
		}
		if ev := h.c.of("state", "D01"); len(ev) != 1 || !ev[0].online {
			t.Errorf("group state events %+v, want one: online", ev)
		}
		if ev := h.c.of("unreachable", "D01"); len(ev) != 0 {
			t.Errorf("the group was made unreachable: %+v", ev)
		}
		if n := strings.Count(h.logs.String(), "keeps no state for this device"); n != 1 {
			t.Errorf("%d warnings about the group, want 1", n)
		}
		// Commands' values show as its state; their confirming reads are
		// not made.
		h.setOptimistic("H6072", "D01", map[string]any{capability.InstanceBrightness: 40})
		h.p.Confirm("H6072", "D01")
		time.Sleep(10 * time.Second)
		if n := len(f.reads("D01")); n != 1 {
			t.Errorf("a confirming read of the group was made (%d reads)", n)
		}
		if v, online, known := h.snapshot("H6072", "D01"); !online || !known || !capability.Equal(v[capability.InstanceBrightness], int64(40)) {
			t.Errorf("group: %v online %v known %v, want the value sent, online", v, online, known)
		}
		// A list refresh less than StatelessRecheck after its read leaves it.
		refresh(t, h)
		if n := len(f.reads("D01")); n != 1 {
			t.Errorf("read again %d times on a list refresh before StatelessRecheck", n-1)
		}

		readable.Store(true)
		time.Sleep(StatelessRecheck)
		refresh(t, h)
		time.Sleep(11 * time.Second)
		reads := f.reads("D01")
		if len(reads) < 3 {
			t.Fatalf("after the recheck and a working read: %d reads, want it polled as usual", len(reads))
		}
		if g := reads[len(reads)-1].at.Sub(reads[len(reads)-2].at); g != 5*time.Second {
			t.Errorf("reads %v apart after it answered, want the interval", g)
		}
		if !strings.Contains(h.logs.String(), "answers this device's state reads again") {
			t.Errorf("no log line saying it is read as usual again")
		}
		h.stop()
	})
}

func refresh(t *testing.T, h *harness) {
	t.Helper()
	done := make(chan error, 1)
	if err := h.p.RefreshDevices(func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
}

// TestReadNowWhileHeld: while the scheduler holds a device's reads (a 429's
// Retry-After, a refused key), ReadNow says so at once, with the cause, and
// the read is made when the hold ends.
func TestReadNowWhileHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(1)...)
		h := start(t, f, Config{Interval: time.Hour, ListInterval: time.Hour})
		time.Sleep(5 * time.Second) // the first read is done
		limited := &cloud.APIError{Kind: cloud.ErrRateLimited, Endpoint: cloud.EndpointState, HTTPStatus: 429, RetryAfter: 5 * time.Minute}
		until := time.Now().Add(5 * time.Minute)
		f.mu.Lock()
		f.hold = &scheduler.Hold{Until: until, Err: limited}
		f.mu.Unlock()
		err := h.p.ReadNow("H6072", "D00", func(error) { t.Error("done called after an error return") })
		if !errors.Is(err, scheduler.ErrReadsHeld) {
			t.Fatalf("ReadNow while held: %v, want ErrReadsHeld", err)
		}
		var ae *cloud.APIError
		if !errors.As(err, &ae) || ae.HTTPStatus != 429 || !strings.Contains(err.Error(), until.UTC().Format(time.RFC3339)) {
			t.Errorf("ReadNow's error %v, want the 429 and until when", err)
		}
		time.Sleep(time.Minute)
		if n := len(f.reads("D00")); n != 1 {
			t.Errorf("%d reads during the hold, want none after the first", n-1)
		}
		f.mu.Lock()
		f.hold = nil
		f.mu.Unlock()
		time.Sleep(until.Sub(time.Now()) + time.Second)
		reads := f.reads("D00")
		if len(reads) != 2 || !reads[1].at.Equal(until) || reads[1].prio != scheduler.PriorityConfirm {
			t.Errorf("reads %+v, want the one asked for when the hold ended", reads)
		}
		if ev := h.c.of("unreachable", "D00"); len(ev) != 0 {
			t.Errorf("held reads made the device unreachable: %+v", ev)
		}
		// A short hold (under the per-device spacing) is no hold.
		f.mu.Lock()
		f.hold = &scheduler.Hold{Until: time.Now().Add(time.Second), Err: limited}
		f.mu.Unlock()
		if err := h.p.ReadNow("H6072", "D00", nil); err != nil {
			t.Errorf("ReadNow during a 1 s hold: %v", err)
		}
		h.stop()
	})
}

// TestProgressIsAnswers: the watchdog's progress moves with reads the cloud
// answered (an error answer included), not with reads that never reached
// it.
func TestProgressIsAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(1)...)
		var answering atomic.Bool
		f.setState(func(device string, n int) (cloud.DeviceState, error) {
			if answering.Load() {
				return cloud.DeviceState{}, &cloud.APIError{Kind: cloud.ErrTransient, Endpoint: cloud.EndpointState, HTTPStatus: 503}
			}
			return cloud.DeviceState{}, &cloud.APIError{Kind: cloud.ErrTransient, Endpoint: cloud.EndpointState, Msg: "connection refused"}
		})
		h := start(t, f, Config{Interval: 10 * time.Second, ListInterval: time.Hour})
		time.Sleep(time.Second)
		listed := h.p.Progress() // the list was answered
		time.Sleep(5 * time.Minute)
		if n := len(f.reads("D00")); n < 3 {
			t.Fatalf("%d reads", n)
		}
		if p := h.p.Progress(); !p.Equal(listed) {
			t.Errorf("progress moved to %v with refused connections only", p.Sub(h.t0))
		}
		answering.Store(true)
		time.Sleep(10 * time.Minute)
		if p := h.p.Progress(); !p.After(listed) {
			t.Errorf("progress did not move with answered reads")
		}
		h.stop()
	})
}

// TestCloudAwayNoBackOff: reads that never reached the cloud make the device
// unreachable after FailuresBeforeUnreachable like any failure, but do not
// back it off: the next read at the interval is what finds the cloud back.
func TestCloudAwayNoBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(1)...)
		f.setState(func(device string, n int) (cloud.DeviceState, error) {
			if n >= 1 && n <= 4 {
				return cloud.DeviceState{}, &cloud.APIError{Kind: cloud.ErrTransient, Endpoint: cloud.EndpointState, Msg: "connection refused"}
			}
			return mkState("H6072", device, true, map[string]any{capability.InstancePower: 1}), nil
		})
		h := start(t, f, Config{Interval: time.Minute})
		time.Sleep(310 * time.Second)
		h.stop()
		if got, want := offsets(h.t0, f.reads("D00")), secs(0, 60, 120, 180, 240, 300); !slices.Equal(got, want) {
			t.Errorf("reads at %v, want %v (no back-off while the cloud is out of reach)", got, want)
		}
		if un := h.c.of("unreachable", "D00"); len(un) != 1 || un[0].at.Sub(h.t0) != 180*time.Second {
			t.Errorf("unreachable events %+v, want one at the third failure", un)
		}
		if ev := h.c.of("state", "D00"); len(ev) != 2 || ev[1].at.Sub(h.t0) != 300*time.Second {
			t.Errorf("state events %+v, want the recovery at the first answer (300 s)", ev)
		}
	})
}

// TestReadHeldAfterItWasAsked: a read on request accepted before the hold
// was known, whose read then gets a 429 and waits (scheduler OnHeld), is
// answered at once with the hold, and only once.
func TestReadHeldAfterItWasAsked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(1)...)
		h := start(t, f, Config{Interval: time.Hour, ListInterval: time.Hour})
		time.Sleep(5 * time.Second)
		f.mu.Lock()
		f.latency = 5 * time.Minute // the read waits in the scheduler
		f.mu.Unlock()
		var o outcome
		if err := h.p.ReadNow("H6072", "D00", o.done); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		limited := &cloud.APIError{Kind: cloud.ErrRateLimited, Endpoint: cloud.EndpointState, HTTPStatus: 429, RetryAfter: 5 * time.Minute}
		asked := time.Now()
		h.p.Held("H6072", "D00", scheduler.Hold{Until: asked.Add(5 * time.Minute), Err: limited})
		synctest.Wait()
		at, once, err := o.get()
		if !once || !at.Equal(asked) || !errors.Is(err, scheduler.ErrReadsHeld) {
			t.Fatalf("done at %v (once %v) with %v, want at once with ErrReadsHeld", at.Sub(asked), once, err)
		}
		time.Sleep(6 * time.Minute)
		if _, once, _ := o.get(); !once {
			t.Error("done called again when the read came back")
		}
		h.stop()
	})
}

// TestReadAskedWhileOneIsOutThenHeld: a read on request that arrives while
// the device's read is out waits for the next read; when the read out meets
// a hold (a 429), both callers are answered at once, and the device is
// still read when the hold ends.
func TestReadAskedWhileOneIsOutThenHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(1)...)
		h := start(t, f, Config{Interval: time.Hour, ListInterval: time.Hour})
		time.Sleep(5 * time.Second)
		f.mu.Lock()
		f.latency = 5 * time.Minute // the read waits in the scheduler
		f.mu.Unlock()
		var first, second outcome
		if err := h.p.ReadNow("H6072", "D00", first.done); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := h.p.ReadNow("H6072", "D00", second.done); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		limited := &cloud.APIError{Kind: cloud.ErrRateLimited, Endpoint: cloud.EndpointState, HTTPStatus: 429, RetryAfter: 5 * time.Minute}
		asked := time.Now()
		h.p.Held("H6072", "D00", scheduler.Hold{Until: asked.Add(5 * time.Minute), Err: limited})
		synctest.Wait()
		for name, o := range map[string]*outcome{"the read out": &first, "the read after it": &second} {
			at, once, err := o.get()
			if !once || !at.Equal(asked) || !errors.Is(err, scheduler.ErrReadsHeld) {
				t.Errorf("%s: done at %v (once %v) with %v, want at once with ErrReadsHeld", name, at.Sub(asked), once, err)
			}
		}
		sent := func() int {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.nState["D00"]
		}
		reads := sent()
		time.Sleep(12 * time.Minute)
		if got := sent(); got <= reads {
			t.Errorf("%d state reads sent after the hold, want the device read again (%d before)", got, reads)
		}
		if _, once, _ := second.get(); !once {
			t.Error("done called again for the second caller")
		}
		h.stop()
	})
}
