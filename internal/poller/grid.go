package poller

import (
	"time"

	"cloud2mqtt/internal/clock"
)

// readGrid is the finest grid: first reads and every interval fall on whole
// multiples of it. Periodic reads use the coarser periodicGrid so that the
// devices due together share one wake of the loop, since waking up, not
// reading, is what an idle daemon spends its CPU on; reads a user waits for
// keep their exact instants.
const readGrid = time.Second

// maxGrid and minSlots bound the grid of periodic reads, so that an
// interval keeps several instants and a read off the grid (a confirming
// read, a read on request) delays the device's next periodic read by at
// most maxGrid; maxBatch bounds the reads of one instant, so that a batch
// is answered well before the next: the scheduler sends 7 reads at once,
// and a live cloud answers in 100–300 ms, so 100 reads take 1.5–4.5 s.
const (
	maxGrid  = 10 * time.Second
	minSlots = 6
	maxBatch = 100
)

// periodicGrid returns the grid of the periodic reads of n devices read
// every interval: the widest that is at most maxGrid and interval/minSlots,
// puts at most maxBatch reads in each of its instants, and is a whole
// number of seconds that divides the interval (so that a device read on
// the grid is read again exactly one interval later, still on it). At
// 1000 devices and 60 s that is 6 s, about 100 reads a wake; at 100
// devices 10 s. It is readGrid for short intervals and for accounts so
// large that even a second holds maxBatch reads.
func periodicGrid(interval time.Duration, n int) time.Duration {
	if n <= 0 || interval <= 0 {
		return readGrid
	}
	want := min(interval*maxBatch/time.Duration(n), interval/minSlots, maxGrid)
	return fitGrid(want, interval)
}

// fitGrid returns the widest whole number of seconds, at most g, that
// divides interval; readGrid when there is none wider.
func fitGrid(g, interval time.Duration) time.Duration {
	if interval%readGrid != 0 {
		return readGrid
	}
	secs := int64(interval / readGrid)
	for s := int64(g / readGrid); s > 1; s-- {
		if secs%s == 0 {
			return time.Duration(s) * readGrid
		}
	}
	return readGrid
}

// onGrid returns t rounded up to the next whole multiple of readGrid.
func onGrid(t time.Time) time.Time { return onGridOf(t, readGrid) }

// onGridOf returns t rounded up to the next whole multiple of g (on
// absolute time); a t already on the grid is returned as is. It keeps t's
// monotonic clock reading, so timers set from it are not affected by
// changes of the wall clock.
func onGridOf(t time.Time, g time.Duration) time.Time { return clock.Ceil(t, g) }

// gridUp returns d rounded up to a whole multiple of readGrid: an interval
// that reads from one grid instant to the next.
func gridUp(d time.Duration) time.Duration {
	if rest := d % readGrid; rest > 0 {
		return d + readGrid - rest
	}
	return d
}

// gridOf is the grid of the device's periodic reads: the poller's, or for a
// device with an interval of its own, the widest that divides it.
func (p *Poller) gridOf(d *device) time.Duration {
	if d.own > 0 {
		return fitGrid(p.grid, d.own)
	}
	return p.grid
}

// periodBase is what the device's next periodic read is counted from after
// a read sent (or refused) at sent: the grid instant it was due at when it
// went within readGrid of it, otherwise sent itself, because the loop wakes
// a little late and counting from that would drift a grid step an interval.
// Called before nextPoll is replaced.
func (d *device) periodBase(sent time.Time) time.Time {
	if late := sent.Sub(d.nextPoll); late >= 0 && late < readGrid {
		return d.nextPoll
	}
	return sent
}
