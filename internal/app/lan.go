package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/local"
	"cloud2mqtt/internal/topic"
)

// Local control (LAN_ENABLED, docs/local-control.md): the router beside the cloud.

// Validate is cfg.Validate plus the LAN settings lan parses: every problem at
// once, each naming its variable and the fix. The LAN settings are checked even
// when LAN_ENABLED=false, so that a wrong one does not fail only when turned on.
func Validate(cfg config.Config) error {
	_, listenErr := lan.ParseListen(cfg.Local.ListenAddr)
	_, targetsErr := lan.ParseTargets(cfg.Local.ScanTargets)
	return cfg.Validate(listenErr, targetsErr)
}

// lanClientConfig is the LAN client's configuration from the settings, or
// override (Main.LANClient: the demo's, a test's) when set.
func lanClientConfig(cfg config.Config, override *lan.Config) (lan.Config, error) {
	if override != nil {
		return *override, nil
	}
	targets, err := lan.ParseTargets(cfg.Local.ScanTargets)
	if err != nil {
		return lan.Config{}, err
	}
	return lan.Config{Listen: cfg.Local.ListenAddr, Targets: targets}, nil
}

// newLocal starts the LAN router when LAN_ENABLED=true or Main.LANClient is set
// (nil when off). A port taken by another program is an error that says what to do.
func (m *Main) newLocal(cfg config.Config, clk clock.Clock) (*local.Router, error) {
	if !cfg.Local.Enabled && m.LANClient == nil {
		return nil, nil
	}
	cc, err := lanClientConfig(cfg, m.LANClient)
	if err != nil {
		return nil, err
	}
	if cc.Clock == nil {
		cc.Clock = clk
	}
	r, err := local.New(local.Config{Client: cc, ScanInterval: cfg.Local.ScanInterval, PollInterval: cfg.Local.PollInterval,
		Logger: m.Log})
	if err != nil {
		return nil, err
	}
	m.Log.Info().Str("listen", r.Addr()).Str("scan_targets", strings.Join(r.Info().Targets, ",")).
		Stringer("poll_interval", cfg.Local.PollInterval).Msg("local control on: lights that answer on the LAN are switched and read there")
	return r, nil
}

// withLANInfo adds the "lan" object to bridge/info's JSON object.
func withLANInfo(info []byte, r *local.Router) []byte {
	if r == nil || len(info) < 2 || info[len(info)-1] != '}' {
		return info
	}
	p, err := json.Marshal(r.Info())
	if err != nil {
		return info
	}
	out := make([]byte, 0, len(info)+len(p)+8)
	out = append(out, info[:len(info)-1]...)
	if len(info) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"lan":`...)
	out = append(out, p...)
	return append(out, '}')
}

// checkLocal is -check's LAN part: bind LAN_LISTEN, scan once, and report
// the lights found (and answers for devices not on the account).
func checkLocal(ctx context.Context, cfg config.Config, devs []capability.Device, say func(bool, string, string), out io.Writer, log zerolog.Logger) {
	cc, err := lanClientConfig(cfg, nil)
	if err != nil {
		say(false, "local control", err.Error())
		return
	}
	cc.Logger = log
	c, err := lan.New(cc)
	if err != nil {
		say(false, "local control", err.Error())
		return
	}
	defer c.Close()
	var ids []string
	sku := map[string]string{}
	for _, d := range devs {
		if capability.LocalEligible(d) {
			ids = append(ids, d.Device)
			sku[d.Device] = d.SKU
		}
	}
	c.SetKnown(ids)
	found, err := c.Discover(ctx, 3*time.Second)
	if err != nil {
		say(false, "local control", "scan: "+err.Error())
	}
	st := c.Stats()
	detail := fmt.Sprintf("listening on %s, scanned %s: %d of the account's %d lights answered", c.Addr(), cfg.Local.ScanTargets, len(found), len(ids))
	if st.Unknown > 0 {
		detail += fmt.Sprintf("; %d answers from devices not on this account (ignored)", st.Unknown)
	}
	if len(found) == 0 && len(ids) > 0 {
		detail += "; none answered: turn LAN Control on in the vendor's app for each light, and list other subnets' lights in LAN_SCAN_TARGETS (see docs/local-control.md)"
	}
	say(true, "local control", detail)
	for _, d := range found {
		fmt.Fprintf(out, "     %s  %s  %s  at %s\n", topic.DeviceID(d.SKU, d.ID), d.SKU, d.ID, d.Addr)
	}
}
