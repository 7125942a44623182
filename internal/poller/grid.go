package poller

import "time"

// readGrid is the grid every periodic instant is put on: the periodic state
// reads, the first reads of new devices and the scene rounds all fall due on
// whole multiples of it, so that the devices due in the same second go out
// in one wake of the loop (in list order) instead of each in its own.
//
// Waking up is what an idle daemon spends its CPU on, not the reads: each
// read through net/http costs goroutine hand-offs and futex wake-ups, and
// reads sent together share them (measured in docs/reliability.md and
// docs/decisions.md, "one-second read grid").
//
// Reads a user waits for are not put on it: confirming reads after
// commands, reads and scene or list refreshes on request, and the
// MinInterval floor keep their exact instants.
const readGrid = time.Second

// onGrid returns t rounded up to the next whole multiple of readGrid (on
// absolute time); a t already on the grid is returned as is. It keeps t's
// monotonic clock reading, so timers set from it are not affected by
// changes of the wall clock.
func onGrid(t time.Time) time.Time {
	if past := t.Sub(t.Truncate(readGrid)); past > 0 {
		return t.Add(readGrid - past)
	}
	return t
}

// gridUp returns d rounded up to a whole multiple of readGrid: an interval
// that reads from one grid instant to the next.
func gridUp(d time.Duration) time.Duration {
	if rest := d % readGrid; rest > 0 {
		return d + readGrid - rest
	}
	return d
}

// periodBase is what the device's next periodic read is counted from after
// a read sent (or refused) at sent: the grid instant the periodic read was
// due at, when this was it, sent on time; otherwise sent itself. The loop
// wakes a little after the instant it asked for, and counting from that
// would push every periodic read one grid step later each interval.
//
// Called before nextPoll is replaced: nextPoll is then still the instant
// the periodic read was due at, and a read sent within readGrid after it
// is that read (or one that took its place, such as a confirming read
// falling due in the same second).
func (d *device) periodBase(sent time.Time) time.Time {
	if late := sent.Sub(d.nextPoll); late >= 0 && late < readGrid {
		return d.nextPoll
	}
	return sent
}
