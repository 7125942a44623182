package poller

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestLocalDevicesReadForWhatTheLANLacks: a local device with nothing the
// LAN lacks is read once (its first read) and then not by the cloud; one
// with a toggle is read every cloudEvery; both come back to the common
// interval at once when the LAN loses them.
func TestLocalDevicesReadForWhatTheLANLacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(3)...)
		h := start(t, f, Config{Interval: time.Minute, ListInterval: time.Hour, Grid: time.Second})
		synctest.Wait() // the first reads, at once
		h.p.SetLocal(key("D00"), true, 0)
		h.p.SetLocal(key("D01"), true, 5*time.Minute)
		sleepUntil(h, 10*time.Minute+500*time.Millisecond)
		h.p.SetLocal(key("D00"), false, 0)
		sleepUntil(h, 12*time.Minute)
		h.stop()
		checkCalls(t, h, "state", "D00", secs(0, 601, 661))
		checkCalls(t, h, "state", "D01", secs(0, 300, 600))
		if n := len(f.reads("D02")); n < 11 {
			t.Errorf("the cloud-only device was read %d times in 12 min at 1 min, want 12 or so", n)
		}
	})
}

// TestLocalDevicesFreeTheDailyBudget: with a daily limit, local devices'
// reads come out of the plan and the others' interval shortens: the
// issue's figure, 20 lights of which 15 are local (5 of them with a
// toggle the LAN lacks).
func TestLocalDevicesFreeTheDailyBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(20)...)
		h := start(t, f, Config{Interval: time.Minute, DailyLimit: 10000, ListInterval: 10 * time.Minute})
		synctest.Wait()
		before := h.p.Stats().Plan
		for i := range 15 {
			every := time.Duration(0)
			if i < 5 {
				every = 5 * time.Minute
			}
			h.p.SetLocal(key(devs(20)[i].Device), true, every)
		}
		after := h.p.Stats().Plan
		h.stop()
		t.Logf("before: %d devices at %s, %d a day (%d periodic reads)", before.Devices, before.Interval, before.Total, before.StateRequests)
		t.Logf("after:  %d cloud devices at %s, local own reads %d, %d a day (%d periodic reads)", after.Devices, after.Interval, after.OwnRequests, after.Total, after.StateRequests)
		if after.Devices != 5 || after.Interval*3 > before.Interval {
			t.Errorf("plan after: %+v; want the 5 cloud devices read at least 3 times as often as the 20 were (%s)", after, before.Interval)
		}
		if after.Total > after.Budget {
			t.Errorf("plan after over budget: %+v", after)
		}
		// 5 lights with a toggle: 288 reads a day each; 10 without: 1.
		if want := 5*288 + 10*1; after.OwnRequests != want {
			t.Errorf("local devices' cloud reads %d a day, want %d", after.OwnRequests, want)
		}
	})
}
