package app_test

import (
	"slices"
	"testing"
	"time"
)

// TestIdleDaemonWakesOnlyOnTheReadGrid: an idle daemon is woken by its clock
// only at the instants of its read grid; reads, stats and state writes share
// those wake-ups, since on small machines each wake-up is the idle cost.
func TestIdleDaemonWakesOnlyOnTheReadGrid(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{env: map[string]string{"POLL_INTERVAL": "30s", "STATE_DIR": t.TempDir()}})
	availability(h.watch, wait, "online", h.ids()...)
	h.devicesWithScenes()
	idleWakesOnGrid(t, h, 5*time.Second, nil, nil) // interval/6 (the poller's minSlots)
}

// TestIdleDaemonWithLANWakesOnlyOnTheReadGrid: the same with the LAN on
// (two lights local, read over the LAN every 10 s, a scan every 5 min):
// the LAN's rounds fall on the read grid's instants too.
func TestIdleDaemonWithLANWakesOnlyOnTheReadGrid(t *testing.T) {
	t.Parallel()
	h := startLANHarness(t, map[string]string{"POLL_INTERVAL": "30s", "LAN_POLL_INTERVAL": "10s",
		"LAN_SCAN_INTERVAL": "5m", "STATE_DIR": t.TempDir()})
	h.waitConnection(lanToggleLight, "local")
	h.waitConnection(lanQuietLight, "local")
	h.waitConnection(lanCloudLight, "cloud")
	polls := h.lan.Counts(lanQuietLight)["devStatus"]
	// The LAN's rounds are every 10 s: after a jump across one, the clock
	// jumps on once both local lights took their status reads and the
	// daemon settled, so that no read's wait for its answer is cut short
	// by a jump while the answer is on its way.
	round := func() int {
		return h.lan.Counts(lanToggleLight)["devStatus"] + h.lan.Counts(lanQuietLight)["devStatus"]
	}
	idleWakesOnGrid(t, h.harness, 5*time.Second, func(from, to time.Time, before int) {
		if to.Truncate(10 * time.Second).After(from) {
			h.watch.until(wait, "both local lights' status reads of a LAN round", func() bool { return round() >= before+2 })
		}
	}, round)
	if n := h.lan.Counts(lanQuietLight)["devStatus"] - polls; n < 12 {
		t.Errorf("%d LAN status reads of a local light in three idle minutes, want one every 10 s (18)", n)
	}
}

// idleWakesOnGrid lets a minute pass so the start is over, then jumps the frozen
// clock two more minutes a grid step at a time, each once the daemon is idle,
// and checks that every timer fired on the grid. afterJump, when set, runs after
// each jump with count as it was before, and waits for what the jump set off.
func idleWakesOnGrid(t *testing.T, h *harness, grid time.Duration, afterJump func(from, to time.Time, before int), count func() int) {
	t.Helper()
	end := h.clock.Now().Add(time.Minute)
	h.jumpUntil(wait, grid, "a minute after the start", func() bool { return !h.clock.Now().Before(end) })
	h.clock.Freeze()
	h.clock.Record()
	from := h.clock.Now()
	for range int(2 * time.Minute / grid) {
		n, at := 0, h.clock.Now()
		if count != nil {
			n = count()
		}
		h.idle(time.Now().Add(wait), "the daemon idle before a jump")
		h.clock.Advance(grid)
		if afterJump != nil {
			afterJump(at, h.clock.Now(), n)
		}
	}
	fired := h.clock.Recorded()

	var instants []time.Time
	for _, at := range fired {
		if off := at.Sub(at.Truncate(grid)); off != 0 {
			t.Errorf("a timer fired %v after the idle minutes began, %v past an instant of the %v read grid", at.Sub(from).Round(time.Millisecond), off, grid)
		}
		instants = append(instants, at.Truncate(grid))
	}
	slices.SortFunc(instants, func(a, b time.Time) int { return a.Compare(b) })
	instants = slices.CompactFunc(instants, time.Time.Equal)
	// Two minutes hold 24 grid instants and the poller's batches fall on
	// most of them. Fewer would mean the recording missed the poller's
	// timer and the test proved nothing.
	if len(instants) < 12 {
		t.Errorf("timers fired at %d instants in two idle minutes (%d timers), want the read grid's batches (at least 12)", len(instants), len(fired))
	}
	t.Logf("%d timers fired at %d instants of the %v grid in two idle minutes", len(fired), len(instants), grid)
}
