package poller

import (
	"time"

	"cloud2mqtt/internal/capability"
)

// Local devices: lights the bridge reads and switches over the vendor's LAN
// interface (internal/local). The cloud reads such a device only for what
// the LAN lacks, and the daily plan gives the reads saved to the others.

// localReads is a device's LAN setting: reached over the LAN or not, and
// how often the cloud reads it meanwhile (0: never periodically).
type localReads struct {
	local bool
	every time.Duration
}

// SetLocal says whether the device is reachable over the LAN now. While it
// is, the cloud reads it every cloudEvery for what the LAN lacks (its other
// instances), or, with cloudEvery 0, not periodically at all (the first
// read, reads on request and confirming reads after cloud commands still
// go); the plan counts those reads as a device with an interval of its own
// does, so the devices without LAN get the budget saved. A device no
// longer local is read from the cloud at once and at the common interval
// again. Also for a device not listed yet.
func (p *Poller) SetLocal(k capability.Key, local bool, cloudEvery time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := localReads{local: local}
	if local && cloudEvery > 0 {
		l.every = gridUp(max(cloudEvery, MinInterval))
	}
	if p.locals == nil {
		p.locals = make(map[capability.Key]localReads)
	}
	if p.locals[k] == l {
		return
	}
	if local {
		p.locals[k] = l
	} else {
		delete(p.locals, k)
	}
	d := p.devices[k]
	if d == nil {
		return
	}
	was := d.local
	d.local = l
	p.replan()
	now := p.cfg.Clock.Now()
	p.rescheduleAll(now)
	if was.local && !local && !d.lastSent.IsZero() {
		d.nextPoll = onGrid(now) // back to the cloud: read it now
		p.schedule(d)
	}
	p.wake()
}

// localQuiet: the device is local and the cloud has nothing to read of it
// periodically (its first read is done).
func (d *device) localQuiet() bool {
	return d.local.local && d.local.every == 0 && !d.lastSent.IsZero()
}
