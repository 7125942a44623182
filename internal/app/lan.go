package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/lansim"
	"cloud2mqtt/internal/local"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/topic"
)

// Local control (LAN_ENABLED, docs/lan.md): the router beside the cloud.

// lanClientConfig is the LAN client's configuration from the settings;
// the demo and tests replace the ports and targets (environment.lan).
func lanClientConfig(cfg config.Config, env *environment) (lan.Config, error) {
	if env != nil && env.lan != nil {
		return *env.lan, nil
	}
	targets, err := lan.ParseTargets(cfg.Local.ScanTargets)
	if err != nil {
		return lan.Config{}, err
	}
	return lan.Config{Listen: cfg.Local.ListenAddr, Targets: targets}, nil
}

// newLocal starts the LAN router when LAN_ENABLED=true (always in the demo,
// whose lights partly run on the LAN simulator); nil when off. A port
// taken by another program is an error that says which and what to do.
func (m *Main) newLocal(cfg config.Config, env *environment) (*local.Router, error) {
	m.mu.Lock()
	override := m.lanClient
	m.mu.Unlock()
	if override != nil {
		env.lan = override
	}
	if !cfg.Local.Enabled && env.lan == nil {
		return nil, nil
	}
	cc, err := lanClientConfig(cfg, env)
	if err != nil {
		return nil, err
	}
	r, err := local.New(local.Config{Client: cc, ScanInterval: cfg.Local.ScanInterval, PollInterval: cfg.Local.PollInterval,
		Logger: m.Log})
	if err != nil {
		return nil, err
	}
	m.Log.Info().Str("listen", r.Addr()).Str("scan_targets", strings.Join(r.Info().Targets, ",")).
		Stringer("poll_interval", cfg.Local.PollInterval).Msg("local control on: lights that answer on the LAN are switched and read there")
	m.mu.Lock()
	m.lan = r
	m.mu.Unlock()
	return r, nil
}

// lanSink is the registry's sink that also hands each device list to the
// LAN router (which only takes it over: the registry is locked).
type lanSink struct {
	registry.Sink
	r *local.Router
}

func (s lanSink) Devices(all, added, removed []capability.Device) {
	s.Sink.Devices(all, added, removed)
	s.r.SetDevices(all)
}

// withLANSink wraps sink when LAN control is on.
func withLANSink(sink registry.Sink, r *local.Router) registry.Sink {
	if r == nil {
		return sink
	}
	return lanSink{sink, r}
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

// LAN is the running LAN router, nil when LAN control is off (tests).
func (m *Main) LAN() *local.Router {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lan
}

// demoLocalLights is how many of the demo's lights run on the LAN
// simulator too.
const demoLocalLights = 3

// demoLAN runs the first demo lights on the LAN simulator, linked to the
// simulated cloud (a change either way shows in both), on 127.0.0.2, …
// at free ports, and points the LAN client there: the newcomer sees local
// control work without touching the real network.
func (m *Main) demoLAN(env *environment, sim *cloudsim.Sim) error {
	var specs []lansim.Spec
	for _, d := range sim.Devices() {
		if len(specs) < demoLocalLights && capability.LocalEligible(d) && strings.HasSuffix(d.Type, ".light") {
			specs = append(specs, lansim.Spec{ID: d.Device, SKU: d.SKU, Linked: true})
		}
	}
	ls, err := lansim.New(lansim.Options{Cloud: sim, Logger: m.Log}, specs...)
	if err != nil {
		return fmt.Errorf("app: demo: start the LAN simulator: %w", err)
	}
	env.closers = append(env.closers, func() { _ = ls.Close() })
	cc := lan.Config{Listen: "127.0.0.1:0", ScanPort: ls.ScanPort(), CommandPort: ls.CommandPort()}
	for _, s := range specs {
		if a, err := ls.Addr(s.ID); err == nil {
			cc.Targets = append(cc.Targets, lan.Target{Host: a.String()})
			env.lanLights = append(env.lanLights, demoLANLight{id: topic.DeviceID(s.SKU, s.ID), addr: a})
		}
	}
	env.lan = &cc
	return nil
}

// demoLANLight is a demo light on the LAN simulator, for the printout.
type demoLANLight struct {
	id   string
	addr netip.Addr
}

// printDemoLAN says which demo lights are local.
func printDemoLAN(w io.Writer, lights []demoLANLight, base string) {
	if w == nil || len(lights) == 0 {
		return
	}
	fmt.Fprintf(w, "Local control (LAN simulator on loopback; LAN_SCAN_TARGETS points there):\n")
	for _, l := range lights {
		fmt.Fprintf(w, "  %-28s at %s: switched and read over the LAN\n", l.id, l.addr)
	}
	fmt.Fprintf(w, "  their \"connection\" in %s/<id>/state says local; the others say cloud.\n\n", base)
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
		detail += "; none answered: turn LAN Control on in the vendor's app for each light, and list other subnets' lights in LAN_SCAN_TARGETS (see README, Local control)"
	}
	say(true, "local control", detail)
	for _, d := range found {
		fmt.Fprintf(out, "     %s  %s  %s  at %s\n", topic.DeviceID(d.SKU, d.ID), d.SKU, d.ID, d.Addr)
	}
}

// connectionOf is how a device is reached, for the status page's "path"
// (internal/web: webSource.Path): "local" while the LAN reaches it, else
// "cloud".
func connectionOf(reg *registry.Registry) func(capability.Key) string {
	return func(k capability.Key) string {
		if reg.Location(k).Local {
			return "local"
		}
		return "cloud"
	}
}
