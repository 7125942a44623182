package poller

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"cloud2mqtt/internal/capability"
)

func key(id string) capability.Key { return capability.Key{SKU: "H6072", Device: id} }

// TestSetConfigChangesTheCadence: a poll interval changed at run time
// applies from each device's last read on, keeping the spread.
func TestSetConfigChangesTheCadence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(2)...)
		h := start(t, f, Config{Interval: time.Minute, ListInterval: time.Hour})
		sleepUntil(h, 155*time.Second) // reads at 0 and 60/90, 120/150
		h.p.SetConfig(Config{Interval: 5 * time.Minute, ListInterval: time.Hour})
		if got := h.p.Stats().Interval; got != 5*time.Minute {
			t.Errorf("interval %v after SetConfig, want 5m", got)
		}
		sleepUntil(h, 20*time.Minute)
		h.stop()
		checkCalls(t, h, "state", "D00", secs(0, 60, 120, 420, 720, 1020))
		checkCalls(t, h, "state", "D01", secs(0, 90, 150, 450, 750, 1050))
	})
}

// TestDeviceOptions: a device with its own interval keeps it, a disabled
// device is not read (and refuses reads on request) until enabled again,
// when it is read at once.
func TestDeviceOptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(2)...)
		h := start(t, f, Config{Interval: time.Minute, ListInterval: time.Hour})
		synctest.Wait() // the first reads, at once
		h.p.SetDeviceOptions(key("D00"), DeviceOptions{Interval: 3 * time.Minute})
		h.p.SetDeviceOptions(key("D01"), DeviceOptions{Disabled: true})
		if err := h.p.ReadNow("H6072", "D01", nil); !errors.Is(err, ErrDisabled) {
			t.Errorf("ReadNow of a disabled device: %v, want ErrDisabled", err)
		}
		sleepUntil(h, 10*time.Minute+500*time.Millisecond)
		h.p.SetDeviceOptions(key("D01"), DeviceOptions{})
		sleepUntil(h, 12*time.Minute)
		h.stop()
		checkCalls(t, h, "state", "D00", secs(0, 180, 360, 540, 720))
		// Enabled again: read at once (on the 1 s grid), then on the
		// periodic grid (10 s for one device at 1 min).
		checkCalls(t, h, "state", "D01", secs(0, 601, 670))
	})
}

// TestOwnIntervalsInTheDailyPlan: reads of devices with their own interval
// come out of the daily budget before the others share the rest.
func TestOwnIntervalsInTheDailyPlan(t *testing.T) {
	cfg := Config{Interval: 30 * time.Second, DailyLimit: 10000}
	base, plain := PlanInterval(10, cfg)
	cfg.OwnIntervals = []time.Duration{30 * time.Second}
	withOwn, plan := PlanInterval(9, cfg)
	if plan.OwnRequests != 2880 {
		t.Errorf("own reads %d a day, want 2880 (one every 30 s)", plan.OwnRequests)
	}
	if withOwn <= base {
		t.Errorf("a device read every 30 s left the others %v, want longer than %v", withOwn, base)
	}
	if plan.Total > plan.Budget || plain.Total > plain.Budget {
		t.Errorf("over budget: %+v", plan)
	}
}
