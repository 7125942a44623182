package poller

import (
	"fmt"
	"math"
	"slices"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/scheduler"
)

// The device list: reading it, and the devices' records following it.

// sendList asks for the device list.
func (p *Poller) sendList(now time.Time) {
	waiters := p.listWaiters
	p.listWaiters, p.listWanted = nil, false
	err := p.s.ListDevices(func(list []capability.Device, err error) {
		p.post(func(now time.Time) { p.onList(now, list, err) })
	})
	if err != nil {
		p.listInFlightW = waiters
		p.onList(now, nil, fmt.Errorf("poller: device list not accepted: %w", err))
		return
	}
	p.listInFlight = true
	p.listInFlightW = waiters
}

// onList applies a device list: new devices are scheduled, removed ones
// dropped, and the consumer told when anything changed.
func (p *Poller) onList(now time.Time, list []capability.Device, err error) {
	p.answered(now, err)
	p.listInFlight = false
	waiters := p.listInFlightW
	p.listInFlightW = nil
	if err != nil {
		p.listFailures++
		retry := scheduler.Backoff(listRetry, p.cfg.ListInterval, p.listFailures)
		mismatch := cloud.IsSchemeMismatch(err) // wrong until the configuration changes
		if cloud.IsAuth(err) || mismatch {
			retry = max(retry, listAuthRetry)
		}
		p.nextList = now.Add(retry)
		ev := p.log.Warn()
		if p.listedOnce || mismatch && p.listFailures > 1 {
			ev = p.log.Info() // we have a list, or the fix was said already
		}
		ev.Err(err).Int("failures", p.listFailures).Stringer("retry_in", retry).
			Msg("reading the device list failed")
		p.emitDone(waiters, fmt.Errorf("poller: refresh device list: %w", err))
		return
	}
	p.listFailures = 0
	p.nextList = now.Add(p.cfg.ListInterval)
	p.listedOnce = true

	// The poller's own records follow the list: the store may have known
	// devices before (restored from the state directory) that the poller
	// has yet to read.
	ch := p.store.SetDevices(list)
	listed := make(map[capability.Key]bool, len(ch.All))
	var added []capability.Device
	for _, dev := range ch.All {
		listed[dev.Key()] = true
		d := p.devices[dev.Key()]
		if d == nil {
			added = append(added, dev)
			continue
		}
		hadScenes := d.hasLight() || d.hasDIY()
		d.setDev(dev)
		if d.stateless && !d.inFlight && now.Sub(d.lastSent) >= StatelessRecheck {
			d.readNow = true // once more: it may answer now
		}
		if !hadScenes && (d.hasLight() || d.hasDIY()) {
			d.nextScenes = onGrid(now)
		}
		p.schedule(d) // it may have gained or lost its scenes
	}
	removed := 0
	for k, d := range p.devices {
		if listed[k] {
			continue
		}
		removed++
		delete(p.devices, k)
		p.unschedule(d)
		p.emitDone(slices.Concat(d.nextReadWaiters, d.sceneWaiters), fmt.Errorf("poller: %s: %w", d.dev, ErrRemoved))
		d.nextReadWaiters, d.sceneWaiters = nil, nil
	}
	// What was learned of devices no longer listed (or restored for
	// devices gone since) is forgotten.
	p.act.keep(func(k capability.Key) bool { return listed[k] })
	for _, dev := range added {
		d := &device{slot: -1}
		d.setDev(dev)
		o := p.options[dev.Key()]
		d.own, d.disabled = o.Interval, o.Disabled
		d.local = p.locals[dev.Key()]
		p.devices[dev.Key()] = d
	}
	if len(added) > 0 || removed > 0 || ch.First {
		p.replan()
	}
	// New devices are read at once, so that Home Assistant shows every
	// state within seconds of a start, and their scene lists right after.
	// Their second reads are spread evenly over the interval after the next,
	// in list order, and the periodic reads keep that spread.
	base := now // not on the grid: nothing waits for its next instant
	spreadBase, slots := onGridOf(now, p.grid), max(int64(p.interval/p.grid), 1)
	for i, dev := range added {
		d := p.devices[dev.Key()]
		spread := spreadBase.Add(p.interval + time.Duration(int64(i)*slots/int64(len(added)))*p.grid)
		if d.own > 0 {
			spread = onGridOf(now.Add(d.own), p.gridOf(d))
		}
		d.nextPoll, d.secondRead, d.nextScenes = base, spread, base
		p.schedule(d)
	}
	for i, dev := range ch.All {
		p.devices[dev.Key()].order = i
	}
	if ch.Any() || len(added) > 0 {
		p.log.Info().Int("devices", len(ch.All)).Int("added", len(added)).Int("removed", removed).
			Msg("device list changed")
	}
	p.emitDone(waiters, nil)
}

// planLine is what the log says of a plan.
type planLine struct {
	interval, grid time.Duration
	limit          int
	overBudget     bool
}

// replan sets the interval for n devices.
func (p *Poller) replan() {
	n := 0
	var own []time.Duration
	sceneFetches := 0
	for _, d := range p.devices {
		if !d.disabled {
			for _, has := range []bool{d.hasLight(), d.hasDIY()} {
				if has {
					sceneFetches++
				}
			}
		}
		switch {
		case d.disabled:
		case d.local.local && d.local.every > 0:
			own = append(own, d.local.every) // local.go
		case d.local.local:
			// Read by the cloud only at start, on request and after
			// cloud commands: counted as one read a day, which also
			// counts its first read and scene rounds in the plan.
			own = append(own, day)
		case d.own > 0:
			own = append(own, d.own)
		default:
			n++
		}
	}
	cfg := p.cfg
	cfg.OwnIntervals = own
	interval, plan := PlanInterval(n, cfg)
	// The quota the cloud's answers describe: the periodic reads at the
	// planned interval and the scene rounds are what it paces (quota.go).
	ownRate := 0.0
	for _, o := range own {
		ownRate += 1 / max(o, MinInterval).Seconds()
	}
	p.paced = n
	p.demand = ownRate + float64(sceneFetches)/p.cfg.SceneInterval.Seconds()
	if n > 0 {
		p.demand += float64(n) / interval.Seconds()
	}
	if q := p.pace.quotaInterval(n, ownRate); q > interval {
		interval = q
		plan.withQuota(q)
	}
	p.readRate = ownRate
	if n > 0 {
		p.readRate += float64(n) / interval.Seconds()
	}
	p.pace.decide(p.demand, p.readRate, n)
	p.interval, p.plan = interval, plan
	p.sharesStale = true // at the loop's next step (share.go)
	// The grid counts every periodic read: the devices with an interval of
	// their own as the share of a device at the common interval they are.
	readers := float64(n)
	for _, o := range own {
		readers += float64(interval) / float64(max(o, MinInterval))
	}
	p.grid = periodicGrid(interval, int(readers+0.5))
	if cfg.Grid > 0 {
		p.grid = fitGrid(cfg.Grid, interval)
	}
	// Said when it changes, once the list is in: not for each device the
	// list or the LAN adds or takes away.
	line := planLine{interval, p.grid, plan.Limit, plan.OverBudget}
	if !p.listedOnce || line == p.planLogged {
		return
	}
	p.planLogged = line
	switch {
	// A quota the plan does not fit is a warning in -check's words (config/verdict.go): the bridge runs on.
	case plan.Quota > 0:
		p.log.Warn().EmbedObject(plan).Int64("quota_reads_per_hour", int64(math.Round(p.pace.capacity*3600))).
			Msg(config.QuotaSlowsPolling(plan.Configured, plan.Quota))
	case plan.OverBudget:
		p.log.Warn().EmbedObject(plan).Msg(config.DailyLimitTooLow(plan.Limit, plan.Devices))
	case plan.Limit > 0:
		p.log.Info().EmbedObject(plan).Msg("poll interval planned for the daily limit")
	default:
		p.log.Info().Int("devices", n).Stringer("interval", interval).Stringer("grid", p.grid).Msg("poll interval")
	}
}
