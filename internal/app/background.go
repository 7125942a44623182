package app

import (
	"context"
	"runtime/debug"
	"time"

	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
)

// statsSpacing × statsDelay is the least time between two looks at the
// stats while changes keep coming.
const statsSpacing = 5

// infoEvery is how often bridge/info is refreshed when only its counters
// (requests today, quota left) moved; a change of settings goes out at once
// (setKick).
const infoEvery = time.Minute

// background publishes the bridge's stats and info, reports progress to
// systemd, and marks the daemon ready once the first device list is in.
// Stats go out on the poller's read grid, at least statsDelay after a change
// and at most every statsSpacing × statsDelay, so that an idle daemon wakes
// only for its reads and a large one does not publish on every read. A
// change of settings (setKick) is looked at at once: whoever made it waits
// to see it in bridge/info.
func (m *Main) background(ctx context.Context, ready chan struct{}, kick *listener, setKick *clock.Wake, p parts) {
	clk := m.clock()
	b := &backgroundLoop{m: m, p: p, clk: clk, ready: ready, sd: Systemd{Log: m.Log, Clock: clk}}
	look := clk.NewTimer(quietLook)
	defer look.Stop()
	var lastCheck time.Time
	gathering := false // kicked, and a look is set for it
	check := func() {
		if gathering {
			gathering = false
			kick.done()
		}
		b.check()
		lastCheck = clk.Now()
		look.ResetAt(clock.Ceil(lastCheck.Add(quietLook), b.grid))
	}
	// Until ready, look when the first device list is in, and often: the
	// list should show at once (the connection may be back only later).
	listed := p.reg.FirstList()
	fast := clk.NewTicker(200 * time.Millisecond)
	defer fast.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-listed:
			listed = nil
			check()
		case <-fast.C():
			if b.readySent {
				fast.Stop()
				continue
			}
			check()
			fast.Done()
		case <-look.C():
			check()
		case <-setKick.C():
			woken := setKick.Take()
			check()
			woken()
		case <-kick.c.C():
			woken := kick.c.Take()
			if !gathering {
				gathering = true
				look.ResetAt(clock.Ceil(later(clk.Now().Add(statsDelay), lastCheck.Add(statsSpacing*statsDelay)), b.grid))
			}
			woken() // the look waits on the clock
		}
	}
}

// quietLook is the longest the loop goes without a look while nothing kicks
// it, to catch what changes with time alone (the Cloud sensor's grace).
const quietLook = 15 * time.Second

// later is the later of two instants.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// backgroundLoop is the state of Main.background between its checks.
type backgroundLoop struct {
	m         *Main
	p         parts
	clk       clock.Clock
	sd        Systemd
	ready     chan struct{} // closed once, when readySent turns true
	readySent bool
	// bridge/info is built only when what it shows may have changed: the
	// settings, the plan, or (once a minute) the counters.
	lastInfo infoKey
	infoAt   time.Time
	start    startMemory
	// grid is the poller's read grid at the last check (Stats.Grid):
	// the loop's looks fall on its instants.
	grid time.Duration
}

// infoKey is what, changed, makes bridge/info go out before infoEvery.
type infoKey struct {
	settings int
	plan     poller.Plan
}

// check is one look at the daemon: stats and info published, the systemd
// status, readiness, and the start's memory returned once it is over.
func (b *backgroundLoop) check() {
	now := b.clk.Now()
	sc, ps, rs := b.p.sched.Stats(), b.p.poll.Stats(), b.p.reg.Stats()
	b.grid = ps.Grid
	b.publishStats(now, sc, rs)
	b.publishInfo(now, sc, ps)
	b.reportStatus(sc, ps, rs)
	if !b.readySent && b.p.conn.Connected() && b.p.reg.Listed() {
		b.readySent = true
		close(b.ready)
	}
	if b.start.step(b.p.reg.Listed(), ps, b.p.mirror.ListPending) {
		debug.FreeOSMemory()
		b.m.Log.Debug().Int("devices", ps.Devices).Msg("start-up reads done; memory of the start returned to the system")
	}
}

// publishStats hands bridge/stats (and the day's limit) to the mirror,
// which publishes what changed.
func (b *backgroundLoop) publishStats(now time.Time, sc scheduler.Stats, rs registry.Stats) {
	limit := b.p.set.DailyLimit()
	b.p.mirror.SetDailyLimit(limit)
	st := bridgeStats(b.m.Version, sc, rs, limit, now)
	st.CloudConnected = cloudConnected(sc.Cloud, now)
	b.p.mirror.PublishStats(st)
}

// publishInfo publishes bridge/info when the settings or the plan changed,
// or infoEvery after the last time (for its counters).
func (b *backgroundLoop) publishInfo(now time.Time, sc scheduler.Stats, ps poller.Stats) {
	key := infoKey{b.p.set.Version(), ps.Plan}
	if key == b.lastInfo && now.Sub(b.infoAt) < infoEvery {
		return
	}
	b.lastInfo, b.infoAt = key, now
	b.p.mirror.PublishInfo(withLANInfo(bridgeInfo(b.m.Version, b.p.set, ps, sc), b.p.lan))
}

// reportStatus tells systemd (STATUS=) where the daemon is.
func (b *backgroundLoop) reportStatus(sc scheduler.Stats, ps poller.Stats, rs registry.Stats) {
	if !b.p.reg.Listed() {
		b.sd.Status("waiting for the cloud's device list: %d failed tries", ps.ListFailures)
		return
	}
	if h := sc.Quota.HeldUntil; !h.IsZero() {
		b.sd.Status("%d devices, %d online, %d × 429 since start; the account's quota is spent, requests wait until %s",
			rs.Devices, rs.Online, sc.RateLimited, h.Format(time.TimeOnly))
		return
	}
	b.sd.Status("%d devices, %d online, %d × 429 since start", rs.Devices, rs.Online, sc.RateLimited)
}

// startMemory watches for the end of the start's burst (every device read, the
// device list with scenes sent) to return its memory to the system.
type startMemory struct {
	readsDone, listOut, settled bool
}

// step advances by one check and is true once, when the start's memory should
// go back to the system. listPending says whether the device list is still queued.
func (s *startMemory) step(listed bool, ps poller.Stats, listPending func() bool) bool {
	switch {
	case s.settled:
	case s.readsDone && !listPending() && !s.listOut:
		// The device list may have been handed to the connection in this check: wait
		// one more so that the collection does not size the heap to it.
		s.listOut = true
	case s.listOut:
		// The burst is over: return its memory now rather than at the scavenger's
		// slow pace, which would keep a resident peak for minutes.
		s.settled = true
		return true
	case listed && ps.Reads >= uint64(ps.Devices):
		s.readsDone = true
	}
	return false
}
