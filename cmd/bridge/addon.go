package main

import (
	"errors"

	"cloud2mqtt/internal/addon"
	"cloud2mqtt/internal/app"
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

// appScrub hides secrets and long values in app mode's configuration
// errors, because anyone can read the app's log. Outside app mode err is
// returned as it is.
func appScrub(err error, environment map[string]string) error {
	if err == nil || !addon.Active(environment) {
		return err
	}
	return addon.Scrub(err, environment)
}

// appIngress is the status page's sidebar listener in app mode, answering
// only the Supervisor's proxy; outside app mode it is off.
func appIngress(environment map[string]string) (app.Ingress, error) {
	if !addon.Active(environment) {
		return app.Ingress{}, nil
	}
	peer, err := addon.IngressPeer(environment)
	if err != nil {
		return app.Ingress{}, err
	}
	return app.Ingress{Addr: addon.IngressAddr(environment), Peer: peer.String()}, nil
}
