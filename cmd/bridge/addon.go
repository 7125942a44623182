package main

import (
	"errors"

	"cloud2mqtt/internal/addon"
)

// appExitCode is the exit code for an error of Home Assistant app mode: a
// Supervisor that cannot give a broker yet may be retried (1); a mistake in
// the app's options is a configuration error (EX_CONFIG).
func appExitCode(err error) int {
	if errors.Is(err, addon.ErrSupervisor) {
		return 1
	}
	return exitConfig
}
