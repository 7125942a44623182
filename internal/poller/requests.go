package poller

import (
	"fmt"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/scheduler"
)

// What the rest of the daemon asks of the poller.

// lookup returns the device or an error naming it. Called with p.mu held.
func (p *Poller) lookup(sku, id string) (*device, error) {
	if p.stopped {
		return nil, ErrStopped
	}
	d := p.devices[capability.Key{SKU: sku, Device: id}]
	if d == nil {
		return nil, fmt.Errorf("%w %s/%s: not in the cloud's device list (refresh the device list if it was just added)", ErrUnknownDevice, sku, id)
	}
	return d, nil
}

// Confirm asks for a confirming read of the device ConfirmDelay after a
// successful command. A burst of Confirms yields one read, ConfirmDelay
// after the last of them but no later than 3×ConfirmDelay after the first.
// Unknown devices are ignored.
func (p *Poller) Confirm(sku, device string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, err := p.lookup(sku, device)
	if err != nil {
		return
	}
	now := p.cfg.Clock.Now()
	if d.confirmDue.IsZero() {
		d.confirmFirst = now
	}
	d.confirmDue = scheduler.Earliest(now.Add(p.cfg.ConfirmDelay), d.confirmFirst.Add(confirmWindow*p.cfg.ConfirmDelay))
	p.schedule(d)
	p.wake()
}

// Event counts a cloud event of the device (CLOUD_EVENTS_URL) as activity:
// the reads are shared by how often each device changes (share.go). It
// never blocks and takes no lock but the loop's queue's, for a moment.
func (p *Poller) Event(sku, device string) {
	p.act.Event(capability.Key{SKU: sku, Device: device})
	// The loop looks at once (the shares are worked out again there, at
	// most every reshareEvery), not at the next read, minutes away maybe.
	p.post(func(time.Time) { p.learning = true })
}

// ReadNow asks for a read of the device as soon as its per-device limit
// allows, at confirm priority. done (may be nil) is called once with the
// read's outcome, after the consumer has seen its changes, from the
// poller's goroutine; it must not block. An error return means the request
// was not accepted and done will not be called.
//
// While the device's reads wait for a hold-off of the bridge's (the cloud
// refused the key a moment ago, or asked to wait after a 429) the error
// wraps scheduler.ErrReadsHeld and the hold's cause at once, so that the
// asker hears of it now rather than minutes later; the read is still made
// when reads resume, and its values are published as usual.
func (p *Poller) ReadNow(sku, device string, done func(error)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, err := p.lookup(sku, device)
	if err != nil {
		return err
	}
	if d.disabled {
		return fmt.Errorf("%w: %s", ErrDisabled, d.dev)
	}
	if h, held := p.s.Held(d.dev.SKU, d.dev.Device); held && h.Until.Sub(p.cfg.Clock.Now()) > MinInterval {
		if !d.inFlight { // a read in flight is the one that waits: it will do
			d.readNow, d.heldUntil = true, h.Until
			p.schedule(d)
			p.wake()
		}
		return heldError(d, h)
	}
	d.readNow = true
	if done != nil {
		d.nextReadWaiters = append(d.nextReadWaiters, done)
	}
	p.schedule(d)
	p.wake()
	return nil
}

// Held tells the poller that the device's state read in flight waits for a
// hold-off (scheduler.Config.OnHeld): the ReadNow callers waiting for it or
// for the read after it are told at once, with the cause, when the wait is longer than
// MinInterval; the read's outcome comes later as usual.
func (p *Poller) Held(sku, device string, h scheduler.Hold) {
	p.post(func(now time.Time) {
		d := p.devices[capability.Key{SKU: sku, Device: device}]
		if d == nil || !d.inFlight || h.Until.Sub(now) <= MinInterval {
			return
		}
		// Those who asked while the read was out wait for the next one,
		// which the hold delays as much: they are told too (the device is
		// still read when the hold ends).
		waiters := append(d.inFlightWaiters, d.nextReadWaiters...)
		d.inFlightWaiters, d.nextReadWaiters = nil, nil
		if len(waiters) > 0 {
			p.emitDone(waiters, heldError(d, h))
		}
	})
}

func heldError(d *device, h scheduler.Hold) error {
	return fmt.Errorf("poller: read %s: %w until %s, then the device is read: %w",
		d.dev, scheduler.ErrReadsHeld, h.Until.UTC().Format(time.RFC3339), h.Err)
}

// RefreshDevices asks for the device list now. done (may be nil) is called
// once after it was read and applied (nil) or failed, like ReadNow's.
func (p *Poller) RefreshDevices(done func(error)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return ErrStopped
	}
	p.listWanted = true
	if done != nil {
		p.listWaiters = append(p.listWaiters, done)
	}
	p.wake()
	return nil
}

// RefreshScenes asks for the device's scenes and DIY scenes now. done (may
// be nil) is called once after the fetches, like ReadNow's.
func (p *Poller) RefreshScenes(sku, device string, done func(error)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, err := p.lookup(sku, device)
	if err != nil {
		return err
	}
	if !d.hasLight() && !d.hasDIY() {
		return fmt.Errorf("%w: %s lists neither %s nor %s", ErrNoScenes, d.dev, capability.InstanceLightScene, capability.InstanceDIYScene)
	}
	d.scenesWanted = true
	if done != nil {
		d.sceneWaiters = append(d.sceneWaiters, done)
	}
	p.schedule(d)
	p.wake()
	return nil
}

// Progress returns when the poller last made progress: a state read, list
// or scene fetch the cloud answered, whatever it said (or Run started).
// Reads that never reached the cloud (refused connections, hold-offs) are
// no progress: a watchdog that sees it stand still for several intervals
// knows the loop is stuck or the cloud out of reach.
func (p *Poller) Progress() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.progress
}

// Stats returns counts for metrics and the health endpoint.
func (p *Poller) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{Devices: len(p.devices), Interval: p.interval, Grid: p.grid, Reads: p.reads, ReadErrors: p.readErrors, Plan: p.plan,
		ListFailures: p.listFailures, QuotaWait: p.pace.held()}
}

// DeviceOptions are a user's settings for one device.
type DeviceOptions struct {
	// Interval is the device's own poll interval, planned within the
	// daily limit with the others; 0 is the poller's interval.
	Interval time.Duration
	// Disabled stops every read of the device.
	Disabled bool
}

// SetDeviceOptions sets a device's options (also for a device not listed
// yet, which gets them when it appears) and replans. A device enabled
// again is read at once; one given a shorter interval is read sooner.
func (p *Poller) SetDeviceOptions(k capability.Key, o DeviceOptions) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if o.Interval > 0 {
		o.Interval = gridUp(max(o.Interval, MinInterval))
	}
	if o == (DeviceOptions{}) {
		delete(p.options, k)
	} else {
		p.options[k] = o
	}
	d := p.devices[k]
	if d == nil {
		return
	}
	wasDisabled := d.disabled
	d.own, d.disabled = o.Interval, o.Disabled
	p.replan()
	now := p.cfg.Clock.Now()
	p.rescheduleAll(now)
	if wasDisabled && !d.disabled {
		d.nextPoll = onGrid(now) // at once, not at its place on the grid
		p.schedule(d)
	}
	p.wake()
}

// SetConfig changes the interval settings at run time (Interval,
// DailyLimit, ListInterval, SceneInterval; the others stay) and replans.
// Reads already planned move to the new interval, counted from each
// device's last read, so the spread is kept.
func (p *Poller) SetConfig(c Config) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cfg := p.cfg
	cfg.Interval, cfg.DailyLimit, cfg.ListInterval, cfg.SceneInterval = c.Interval, c.DailyLimit, c.ListInterval, c.SceneInterval
	p.cfg = cfg.withDefaults()
	p.replan()
	now := p.cfg.Clock.Now()
	if !p.listInFlight {
		p.nextList = scheduler.Earliest(p.nextList, now.Add(p.cfg.ListInterval))
	}
	p.rescheduleAll(now)
	p.wake()
}

// rescheduleAll puts every device's next periodic read one (possibly new)
// interval after its last read, on the grid and not in the past.
func (p *Poller) rescheduleAll(now time.Time) {
	for _, d := range p.devices {
		if !d.lastSent.IsZero() {
			d.nextPoll = onGridOf(latest(d.lastSent.Add(p.deviceInterval(d)), now), p.gridOf(d))
			d.placed = p.planned(d)
			d.secondRead, d.inSpread = time.Time{}, false
		}
		p.schedule(d)
	}
}
