package poller

import (
	"cmp"
	"container/heap"
	"slices"
	"time"
)

// agenda is a min-heap of the devices by the instant each next needs the
// loop (device.dueAt), so that a wake of the loop costs O(k log n) for the
// k devices due instead of a visit of all n. A device is in it exactly when
// it has something that will fall due without a report arriving: a read
// that is not in flight, or a scene round that is not in flight.
type agenda []*device

func (a agenda) Len() int           { return len(a) }
func (a agenda) Less(i, j int) bool { return a[i].dueAt.Before(a[j].dueAt) }

func (a agenda) Swap(i, j int) {
	a[i], a[j] = a[j], a[i]
	a[i].slot, a[j].slot = i, j
}

func (a *agenda) Push(x any) {
	d := x.(*device)
	d.slot = len(*a)
	*a = append(*a, d)
}

func (a *agenda) Pop() any {
	old := *a
	n := len(old) - 1
	d := old[n]
	old[n] = nil // no dangling pointer to a removed device
	d.slot = -1
	*a = old[:n]
	return d
}

// readDue is when the device's next state read may go: the periodic read,
// an earlier confirming read, or at once (the zero time) for a read on
// request, never sooner than MinInterval after the last read. ok is false
// while a read is in flight: its report reschedules the device.
func (d *device) readDue() (due time.Time, ok bool) {
	if d.inFlight || d.disabled || d.stateless && !d.readNow {
		return time.Time{}, false
	}
	if d.localQuiet() && !d.readNow && d.confirmDue.IsZero() {
		return time.Time{}, false // the LAN reads it (local.go)
	}
	due = latest(d.nextPoll, d.pacedUntil) // only the periodic read waits for the quota
	if !d.confirmDue.IsZero() && d.confirmDue.Before(due) {
		due = d.confirmDue
	}
	if d.readNow {
		due = time.Time{}
	}
	// Whatever the reason, never two reads of a device closer than the
	// cloud's per-device limit allows.
	if !d.lastSent.IsZero() {
		due = latest(due, d.lastSent.Add(MinInterval))
	}
	if !d.heldUntil.IsZero() {
		due = latest(due, d.heldUntil)
	}
	return due, true
}

// scenesDue is when the device's next scene round is due (the zero time:
// at once). ok is false while a round is in flight and for a device
// without scene capabilities.
func (d *device) scenesDue() (due time.Time, ok bool) {
	if d.round != nil || d.disabled || (!d.hasLight() && !d.hasDIY()) {
		return time.Time{}, false
	}
	if d.scenesWanted {
		return time.Time{}, true
	}
	return latest(d.nextScenes, d.scenesPacedUntil), true
}

// schedule (re)places the device in the agenda at the instant it next needs
// the loop, or takes it out when nothing of it falls due before a report
// arrives. Every change to what readDue and scenesDue look at must be
// followed by it. Called with p.mu held.
func (p *Poller) schedule(d *device) {
	read, readOK := d.readDue()
	scenes, scenesOK := d.scenesDue()
	switch {
	case readOK && scenesOK:
		d.dueAt = read
		if scenes.Before(read) { // the zero time is "at once" here, not "never"
			d.dueAt = scenes
		}
	case readOK:
		d.dueAt = read
	case scenesOK:
		d.dueAt = scenes
	default:
		p.unschedule(d)
		return
	}
	if d.slot >= 0 {
		heap.Fix(&p.agenda, d.slot)
	} else {
		heap.Push(&p.agenda, d)
	}
}

// unschedule takes the device out of the agenda. Called with p.mu held.
func (p *Poller) unschedule(d *device) {
	if d.slot >= 0 {
		heap.Remove(&p.agenda, d.slot)
	}
}

// due takes every device due at now out of the agenda, in list order: reads
// falling due at the same instant go out in a stable order. The slice is
// reused by the next call. Called with p.mu held.
func (p *Poller) due(now time.Time) []*device {
	batch := p.batch[:0]
	for len(p.agenda) > 0 && !p.agenda[0].dueAt.After(now) {
		batch = append(batch, heap.Pop(&p.agenda).(*device))
	}
	if len(batch) > 1 {
		slices.SortFunc(batch, func(a, b *device) int { return cmp.Compare(a.order, b.order) })
	}
	p.batch = batch
	return batch
}
