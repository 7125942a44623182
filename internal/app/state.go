package app

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/statedir"
)

// The files of the state directory (STATE_DIR).
const (
	devicesFile    = "devices.json"
	devicesFormat  = "cloud2mqtt/devices"
	devicesVersion = 1
)

// SaveEvery is how often the registry is written to the state directory
// when it changed: a crash loses at most this much of the last known
// states, and a clean stop saves everything.
const SaveEvery = 5 * time.Minute

// restoreState fills the registry from the state directory, so that the
// device list, discovery and the last known states are published as soon
// as the broker is connected, before (or without) the cloud. A missing
// file is a first start; a bad one is a warning, never a failure.
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
		reg.Restore(saved)
		log.Info().Int("devices", len(saved.Devices)).Str("state_dir", string(dir)).
			Msg("devices and their last known states restored from the state directory")
	}
}

// saveState writes the registry to the state directory if it changed.
func saveState(dir statedir.Dir, reg *registry.Registry, log zerolog.Logger) {
	if dir == "" || !reg.Unsaved() {
		return
	}
	if err := dir.Write(devicesFile, devicesFormat, devicesVersion, reg.Save()); err != nil {
		log.Warn().Err(err).Msg("cannot save the devices to the state directory; they are read from the cloud at the next start")
	}
}

// persist saves the registry every SaveEvery while it changes, until ctx
// ends (the shutdown saves once more after the poller has stopped).
func persist(ctx context.Context, dir statedir.Dir, reg *registry.Registry, log zerolog.Logger) {
	if dir == "" {
		return
	}
	t := time.NewTicker(SaveEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			saveState(dir, reg, log)
		}
	}
}

// stateDirOf is STATE_DIR. TODO(session 3): cfg.StateDir once config has it.
func stateDirOf(config.Config) string { return "" }
