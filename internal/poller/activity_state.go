package poller

import (
	"errors"
	"io/fs"
	"math"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/statedir"
)

// What the poller learned is kept in the state directory (activity.json),
// so that a restart does not read every device at the plain interval again
// while it learns anew: the counts, not the values seen (the first read
// after a start records those).
const (
	activityFile    = "activity.json"
	activityFormat  = "cloud2mqtt/activity"
	activityVersion = 1
)

// activitySaveEvery is how often what was learned is written while it
// moves, at a wake of the poller's loop (no timer of its own); the stop
// writes it once more.
const activitySaveEvery = 5 * time.Minute

// savedActivity is activity.json's data.
type savedActivity struct {
	Devices []savedLearned `json:"devices"`
}

// savedLearned is one device's counts, decayed to At.
type savedLearned struct {
	SKU       string    `json:"sku"`
	Device    string    `json:"device"`
	At        time.Time `json:"at"`
	Changed   float64   `json:"changed_reads"`
	BusySpan  float64   `json:"changed_s"`
	StillSpan float64   `json:"unchanged_s"`
	Other     float64   `json:"other"`
	Watched   float64   `json:"watched_s"`
}

// snapshot is what was learned, decayed to now, for saving; moved says
// whether anything was learned since the last snapshot.
func (a *Activity) snapshot(now time.Time) (s savedActivity, moved bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	moved, a.moved = a.moved, false
	for k, l := range a.devs {
		if l.at.IsZero() {
			continue
		}
		l.decay(now)
		s.Devices = append(s.Devices, savedLearned{SKU: k.SKU, Device: k.Device, At: l.at,
			Changed: l.changed, BusySpan: l.busySpan, StillSpan: l.stillSpan, Other: l.other, Watched: l.watched})
	}
	return s, moved
}

// restore lays saved counts under what is known (nothing, at a start),
// decayed from when they were saved to now. Counts that cannot be (not
// finite, negative, more than the decay keeps) leave their device out.
func (a *Activity) restore(s savedActivity, now time.Time) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, d := range s.Devices {
		k := capability.Key{SKU: d.SKU, Device: d.Device}
		if k.SKU == "" || k.Device == "" || !countable(d.Changed, d.BusySpan, d.StillSpan, d.Other, d.Watched) ||
			d.Watched > activityTau*(1+1e-9) || d.BusySpan+d.StillSpan > 2*activityTau {
			continue
		}
		at := d.At
		if at.IsZero() || at.After(now) {
			at = now // a clock set back: taken as saved now
		}
		l := &learned{at: at, changed: d.Changed, busySpan: d.BusySpan, stillSpan: d.StillSpan, other: d.Other, watched: d.Watched}
		l.decay(now)
		a.devs[k] = l
		n++
	}
	return n
}

// countable: every figure is a finite count of no less than nothing, and
// no more than a lifetime's (what a decayed count can hold by far).
func countable(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || x < 0 || x > 1e12 {
			return false
		}
	}
	return true
}

// restoreActivity reads what a previous run learned from dir. A missing
// file is a first start; a bad one a warning (the poller learns anew).
func restoreActivity(a *Activity, dir statedir.Dir, now time.Time, log zerolog.Logger) {
	if dir == "" {
		return
	}
	var s savedActivity
	switch err := dir.Read(activityFile, activityFormat, activityVersion, &s); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		log.Warn().Err(err).Msg("what was learned of the devices' changes cannot be used; learning anew (every device at the plain interval meanwhile)")
	default:
		n := a.restore(s, now)
		log.Info().Int("devices", n).Str("state_dir", string(dir)).Msg("how often each device changes, as learned before the restart")
	}
}

// saveActivity writes what was learned to dir when anything was learned
// since it was last written.
func saveActivity(a *Activity, dir statedir.Dir, now time.Time, log zerolog.Logger) {
	if dir == "" {
		return
	}
	s, moved := a.snapshot(now)
	if !moved {
		return
	}
	if err := dir.Write(activityFile, activityFormat, activityVersion, s); err != nil {
		log.Warn().Err(err).Msg("cannot save what was learned of the devices' changes to the state directory; a restart learns anew")
	}
}
