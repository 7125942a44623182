package poller

import (
	"fmt"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

// State reads: when one is sent, and what its answer changes.

// stepRead sends the device's state read if one is due. The caller
// reschedules the device.
func (p *Poller) stepRead(now time.Time, d *device) {
	if due, ok := d.readDue(); !ok || due.After(now) {
		return
	}

	prio := scheduler.PriorityPoll
	if d.readNow || (!d.confirmDue.IsZero() && !d.confirmDue.After(now)) {
		prio = scheduler.PriorityConfirm
		d.confirmDue, d.confirmFirst = time.Time{}, time.Time{}
	} else if at := p.pace.take(now, 1, false); at.After(now) {
		d.pacedUntil = at // the quota: a periodic read waits (quota.go)
		return
	}
	d.pacedUntil = time.Time{}
	if prio == scheduler.PriorityPoll && d.lastSent.IsZero() {
		// Never read (a start, a device the list added): the scheduler
		// sends it beside the steady reads in flight.
		prio = scheduler.PriorityFirst
	}
	waiters := d.nextReadWaiters
	d.readNow, d.nextReadWaiters = false, nil
	sentSeq := p.store.Seq()
	err := p.s.State(d.dev.SKU, d.dev.Device, prio, func(st cloud.DeviceState, err error) {
		p.post(func(now time.Time) { p.onState(now, d, st, err) })
	})
	if err != nil {
		// Not accepted (overload, shutdown): the device is not at fault, so
		// no failure is counted; try again one interval later.
		p.log.Debug().Err(err).Stringer("device", d.dev).Msg("state read not accepted")
		d.nextPoll = onGridOf(d.periodBase(now).Add(p.interval), p.gridOf(d))
		p.emitDone(waiters, fmt.Errorf("poller: read %s: %w", d.dev, err))
		return
	}
	d.inFlight = true
	d.heldUntil = time.Time{}
	d.lastSent = now
	d.inSpread = false
	if d.shared() {
		p.spent(now)
	}
	d.sentSeq = sentSeq
	d.inFlightWaiters = waiters
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// onState applies a state read's outcome.
func (p *Poller) onState(now time.Time, d *device, st cloud.DeviceState, err error) {
	p.answered(now, err)
	p.reads++
	d.inFlight = false
	waiters := d.inFlightWaiters
	d.inFlightWaiters = nil
	if p.devices[d.dev.Key()] != d {
		p.emitDone(waiters, fmt.Errorf("poller: read %s: %w", d.dev, ErrRemoved))
		return
	}
	switch {
	case cloud.IsStateless(err):
		p.readErrors++
		p.onStateless(d, err)
	case scheduler.HeldBack(err), cloud.IsAuth(err):
		// A read the bridge held back itself, or a refused API key, is the
		// account's matter, not the device's: no failure and no back-off,
		// which would delay its recovery once reads go out again.
		p.readErrors++
		p.log.Debug().Err(err).Stringer("device", d.dev).Msg("state read held back or the API key refused; not the device's failure")
	case err != nil:
		p.readErrors++
		d.failedReads++
		if cloud.Reached(err) {
			// The cloud answered with a failure: read the device less
			// often. A cloud out of reach is no reason to: the reads
			// cost nothing of the budget, and the next one is what
			// finds it back.
			d.backoffReads++
		}
		p.log.Debug().Err(err).Stringer("device", d.dev).Int("failures", d.failedReads).Msg("state read failed")
		if d.failedReads >= FailuresBeforeUnreachable {
			p.store.MarkUnreachable(d.dev.Key(), err)
		}
	default:
		if d.stateless {
			d.stateless, p.sharesStale = false, true
			p.log.Info().Stringer("device", d.dev).Msg("the cloud answers this device's state reads again; polling it as usual")
		}
		d.failedReads = 0
		if online, known := st.Online(); online || !known {
			d.backoffReads = 0
			// Compared before the registry takes it: its observer then
			// sees nothing new of this read (activity.go).
			p.act.read(d.dev, st.All(), d.lastSent)
			p.learning = true
		} else {
			d.backoffReads++ // offline: read it less often
		}
		p.store.ApplyState(d.dev.Key(), st, d.sentSeq)
	}
	// Every read, whatever its reason, puts the next periodic read one
	// interval later, on the grid: a confirming read takes the periodic
	// read's place. A new device's second read takes its place in the
	// spread instead.
	next := d.periodBase(d.lastSent).Add(p.deviceInterval(d))
	if !d.secondRead.IsZero() {
		next, d.secondRead, d.inSpread = d.secondRead, time.Time{}, true
	}
	d.nextPoll = onGridOf(latest(next, now.Add(MinInterval)), p.gridOf(d))
	d.placed = p.planned(d)
	p.schedule(d)
	p.emitDone(waiters, wrapRead(d.dev, err))
}

// onStateless handles a state read the cloud refused because it keeps no
// state for the device (an app-made group, listed as a device): the device
// is not read any more (but on request and after list refreshes, see
// StatelessRecheck) and shown available with what was last sent to it.
// One warning says so, not one per interval.
func (p *Poller) onStateless(d *device, err error) {
	d.failedReads, d.backoffReads = 0, 0
	if d.stateless {
		return
	}
	d.stateless = true
	p.sharesStale = true // its reads go to the others
	p.log.Warn().Err(err).Stringer("device", d.dev).Dur("recheck_after", StatelessRecheck).
		Msg("the cloud keeps no state for this device (a group made in the vendor's app?); it is not polled, shown online with what was last sent to it, and still controllable")
	p.store.MarkStateless(d.dev.Key())
}

func wrapRead(dev capability.Device, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("poller: read %s: %w", dev, err)
}

// deviceInterval is the device's current interval: its planned interval,
// or for a device offline or failing n reads in a row, that doubled n-1
// times, up to OfflineMaxInterval (never below the planned interval).
func (p *Poller) deviceInterval(d *device) time.Duration {
	base := p.planned(d)
	return scheduler.Backoff(base, max(OfflineMaxInterval, base), d.backoffReads)
}

// planned is the device's interval as planned: the poll interval, its share
// of the reads (share.go), its own, or the cloud's for a light the LAN
// reads.
func (p *Poller) planned(d *device) time.Duration {
	base := p.interval
	if d.share > 0 {
		base = d.share
	}
	if d.own > 0 {
		base = d.own
	}
	if d.local.local && d.local.every > 0 {
		base = d.local.every // local.go
	}
	return base
}
