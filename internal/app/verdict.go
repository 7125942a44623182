package app

import (
	"fmt"
	"os"
	"strings"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/statedir"
)

// Problems is the one verdict on the settings that -check prints and the daemon
// acts on: the configuration's own, loadErr, and what only this machine tells
// (STATE_DIR unusable is an error, a page open to the network a warning).
// Errors come first.
func Problems(cfg config.Config, loadErr error) config.Problems {
	_, listenErr := lan.ParseListen(cfg.Local.ListenAddr)
	_, targetsErr := lan.ParseTargets(cfg.Local.ScanTargets)
	ps := cfg.Problems(loadErr, listenErr, targetsErr)
	if p, ok := stateDirProblem(cfg); ok {
		ps = append(ps, p)
	}
	ps = append(ps, httpProblems(cfg)...)
	errs := ps.Errors()
	return append(errs, ps.Warnings()...)
}

// stateDirProblem is an error when STATE_DIR is set but unusable. It creates
// the directory, as the daemon would.
func stateDirProblem(cfg config.Config) (config.Problem, bool) {
	d := cfg.State.Dir
	if d == "" || !strings.HasPrefix(d, "/") { // not absolute: Validate says so
		return config.Problem{}, false
	}
	if fi, err := os.Stat(d); err == nil && !fi.IsDir() {
		return config.Problem{Level: config.Error, Text: fmt.Sprintf("STATE_DIR=%s is a file, not a directory: set it to a directory the bridge's user may write, like /var/lib/cloud2mqtt (under systemd, StateDirectory=cloud2mqtt sets it)",
			config.Clip(d))}, true
	}
	if err := statedir.Dir(d).Check(); err != nil {
		return config.Problem{Level: config.Error, Text: strings.TrimPrefix(err.Error(), "statedir: ")}, true
	}
	return config.Problem{}, false
}

// httpProblems warn when HTTP_ADDR is open to the network: without HTTP_TOKEN
// anyone who reaches it reads the page, and /metrics and /healthz are exposed.
func httpProblems(cfg config.Config) config.Problems {
	addr := cfg.HTTP.Addr
	if addr == "" || loopbackListen(addr) {
		return nil
	}
	var ps config.Problems
	at := []config.Field{{Key: "HTTP_ADDR", Value: addr}}
	if !cfg.HTTP.Token.IsSet() {
		ps = append(ps, config.Problem{Level: config.Warning, Text: noTokenWarning(addr), Fields: at})
	}
	if exposedAddr(addr) {
		ps = append(ps, config.Problem{Level: config.Warning, Text: exposedWarning, Fields: at})
	}
	return ps
}

// noTokenWarning is the warning for HTTP_ADDR=addr, not loopback, without
// HTTP_TOKEN.
func noTokenWarning(addr string) string {
	return fmt.Sprintf("HTTP_ADDR=%s is not a loopback address and HTTP_TOKEN is not set: anyone who reaches it reads the status page, /metrics and /healthz, and the page's actions are off; "+
		"set HTTP_TOKEN (or HTTP_TOKEN_FILE, or the systemd credential http_token), or HTTP_ADDR=127.0.0.1:%s for this machine only", config.Clip(addr), portOf(addr))
}

// exposedWarning is the warning for an HTTP_ADDR on every interface.
const exposedWarning = "HTTP_ADDR listens on every interface: the status page, /metrics and /healthz are open to the network (devices, request counts, errors; actions only with HTTP_TOKEN); set HTTP_ADDR=127.0.0.1:PORT unless another host must see them"

// logWarnings logs the warnings of ps, each with its fields: the daemon runs
// on them, doing what their words say.
func logWarnings(ps config.Problems, log zerolog.Logger) {
	for _, p := range ps.Warnings() {
		ev := log.Warn()
		for _, f := range p.Fields {
			ev = ev.Str(f.Key, f.Value)
		}
		ev.Msg(p.Text)
	}
}
