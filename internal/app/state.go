package app

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/statedir"
)

// The files of the state directory (STATE_DIR).
const (
	devicesFile    = "devices.json"
	devicesFormat  = "cloud2mqtt/devices"
	devicesVersion = 1

	// statesFile holds only the devices' last values, written within seconds of a
	// change; devicesFile, megabytes on a large account, only when the list or
	// scenes change, or every fullSaveEvery.
	statesFile    = "states.json"
	statesFormat  = "cloud2mqtt/states"
	statesVersion = 1

	requestsFile    = "requests.json"
	requestsFormat  = "cloud2mqtt/requests"
	requestsVersion = 1
)

// spent is today's request count, so that a restart does not forget what
// the daily limit has spent.
type spent struct {
	Day      int `json:"day"` // yyyymmdd, local time
	Requests int `json:"requests"`
}

// readSpent returns the count a previous run saved (zero when none).
func readSpent(dir statedir.Dir, log zerolog.Logger) spent {
	var s spent
	if dir == "" {
		return s
	}
	if err := dir.Read(requestsFile, requestsFormat, requestsVersion, &s); err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Warn().Err(err).Msg("the saved request count cannot be used; counting today's requests from zero")
		return spent{}
	}
	return s
}

// saveSpent writes today's request count to the state directory.
func saveSpent(dir statedir.Dir, st scheduler.Stats, log zerolog.Logger) {
	if dir == "" || st.RequestsToday == 0 {
		return
	}
	if err := dir.Write(requestsFile, requestsFormat, requestsVersion, spent{Day: st.Day, Requests: st.RequestsToday}); err != nil {
		log.Warn().Err(err).Msg("cannot save today's request count to the state directory")
	}
}

// restoreState fills the registry from the state directory, so that devices,
// discovery and last states are published as soon as the broker is connected,
// even without the cloud. A missing file is a first start; a bad one a warning.
func restoreState(dir statedir.Dir, reg *registry.Registry, log zerolog.Logger) {
	if dir == "" {
		return
	}
	var saved registry.Saved
	err := dir.Read(devicesFile, devicesFormat, devicesVersion, &saved)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		log.Info().Str("state_dir", string(dir)).Msg("no saved devices yet: the first start with this state directory")
	case err != nil:
		log.Warn().Err(err).Msg("the saved devices cannot be used; starting without them")
	default:
		var values registry.SavedValues
		switch err := dir.Read(statesFile, statesFormat, statesVersion, &values); {
		case err == nil:
			saved.Overlay(values)
		case !errors.Is(err, fs.ErrNotExist):
			log.Warn().Err(err).Msg("the saved last values cannot be used; those saved with the device list are")
		}
		reg.Restore(saved)
		log.Info().Int("devices", len(saved.Devices)).Str("state_dir", string(dir)).
			Msg("devices and their last known states restored from the state directory")
	}
}

// fullSaveEvery is how often devices.json is rewritten when only values
// changed (they are in states.json meanwhile): it is the large file.
const fullSaveEvery = 5 * time.Minute

// saveValues writes the devices' last values to the state directory.
func saveValues(dir statedir.Dir, reg *registry.Registry, log zerolog.Logger) {
	if err := dir.WriteTo(statesFile, statesFormat, statesVersion, reg.WriteValues); err != nil {
		log.Warn().Err(err).Msg("cannot save the devices' last values to the state directory")
	}
}

// saveState writes the registry to the state directory if it changed.
func saveState(dir statedir.Dir, reg *registry.Registry, log zerolog.Logger) {
	if dir == "" || !reg.Unsaved() {
		return
	}
	if err := dir.WriteTo(devicesFile, devicesFormat, devicesVersion, reg.WriteSaved); err != nil {
		log.Warn().Err(err).Msg("cannot save the devices to the state directory; they are read from the cloud at the next start")
	}
}

// persist writes the registry and today's request count at most saveDelay after
// a change, so that a kill loses at most saveDelay. The write falls on the
// poller's read grid when it can, so that an idle daemon's saves share its
// reads' wake-ups. The settings write the options themselves.
func persist(ctx context.Context, clk clock.Clock, kick *listener, dir statedir.Dir, reg *registry.Registry, sched *scheduler.Scheduler, pollStats func() poller.Stats, saveChart func(statedir.Dir, zerolog.Logger), log zerolog.Logger) {
	if dir == "" {
		return
	}
	t := clk.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	pending := false
	savedCount := spent{}
	lastFull := clk.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick.c.C():
			woken := kick.c.Take()
			if !pending {
				pending = true
				t.ResetAt(lastOnGrid(clk.Now(), saveDelay, pollStats().Grid))
			}
			woken() // the save waits on the clock
		case <-t.C():
			pending = false
			kick.done()
			switch {
			case reg.ListUnsaved() || reg.Unsaved() && clk.Now().Sub(lastFull) >= fullSaveEvery:
				saveState(dir, reg, log)
				lastFull = clk.Now()
			case reg.ValuesUnsaved():
				saveValues(dir, reg, log)
			}
			st := sched.Stats()
			if now := (spent{Day: st.Day, Requests: st.RequestsToday}); now != savedCount {
				saveSpent(dir, st, log)
				saveChart(dir, log)
				savedCount = now
			}
			t.Done()
		}
	}
}

// lastOnGrid is the latest multiple of g in (now, now+within], or now+within
// when there is none.
func lastOnGrid(now time.Time, within, g time.Duration) time.Time {
	end := now.Add(within)
	if at := clock.Floor(end, g); at.After(now) {
		return at
	}
	return end
}
