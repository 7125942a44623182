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

// appScrub hides, in Home Assistant app mode, what an error about the
// configuration must not show: a secret option's value and any value longer
// than addon.MaxShown characters (the app's documentation promises it, and
// its log is shown to everyone who opens the app's Log tab). Outside app
// mode err is returned as it is.
func appScrub(err error, environment map[string]string) error {
	if err == nil || !addon.Active(environment) {
		return err
	}
	return addon.Scrub(err, environment)
}

// appIngress is, in Home Assistant app mode, the status page's listener for
// the sidebar: config.yaml's ingress_port, answering only the Supervisor's
// ingress proxy (ADDON_INGRESS_ADDR and ADDON_INGRESS_PEER move them, for
// tests). Outside app mode it is off (the zero Ingress).
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
