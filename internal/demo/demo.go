// Package demo runs the daemon against a simulated account (cloud2mqtt -demo):
// the simulated cloud and LAN lights on loopback, the embedded broker, the
// status page, and instructions once the first device list is in.
// It is the only production code that links the simulators; internal/app gets
// the demo's cloud, LAN client and events through app.Main's fields.
package demo

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/app"
	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/events"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/lansim"
	"cloud2mqtt/internal/topic"
)

// localLights is how many of the demo's lights run on the LAN simulator
// too.
const localLights = 3

// eventsEvery is how often the simulated account raises an event on a
// random device.
const eventsEvery = 45 * time.Second

// Demo is a running simulated account: its cloud and, for Run, its lights
// on the LAN. Close stops them.
type Demo struct {
	sim     *cloudsim.Sim
	srv     *loopbackServer
	cc      lan.Config // the LAN client's settings, pointed at the simulator
	lights  []lanLight
	closers []func()
}

// lanLight is a demo light on the LAN simulator, for the instructions.
type lanLight struct {
	id   string
	addr netip.Addr
}

// startCloud serves the simulated cloud on a free loopback port.
func startCloud() (*Demo, error) {
	sim := cloudsim.New(cloudsim.Options{})
	srv, err := newLoopbackServer(sim)
	if err != nil {
		return nil, fmt.Errorf("demo: serve the simulated cloud: %w", err)
	}
	return &Demo{sim: sim, srv: srv, closers: []func(){srv.Close}}, nil
}

// Start starts the simulated cloud and runs its first lights on the LAN
// simulator, linked so that a change either way shows in both.
func Start(log zerolog.Logger) (*Demo, error) {
	d, err := startCloud()
	if err != nil {
		return nil, err
	}
	if err := d.startLAN(log); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// startLAN runs the first demo lights on the LAN simulator (127.0.0.2, … at free
// ports), so that a newcomer sees local control without touching the network.
func (d *Demo) startLAN(log zerolog.Logger) error {
	var specs []lansim.Spec
	for _, dev := range d.sim.Devices() {
		if len(specs) < localLights && capability.LocalEligible(dev) && strings.HasSuffix(dev.Type, ".light") {
			specs = append(specs, lansim.Spec{ID: dev.Device, SKU: dev.SKU, Linked: true})
		}
	}
	ls, err := lansim.New(lansim.Options{Cloud: d.sim, Logger: log}, specs...)
	if err != nil {
		return fmt.Errorf("demo: start the LAN simulator: %w", err)
	}
	d.closers = append(d.closers, func() { _ = ls.Close() })
	d.cc = lan.Config{Listen: "127.0.0.1:0", ScanPort: ls.ScanPort(), CommandPort: ls.CommandPort()}
	for _, s := range specs {
		if a, err := ls.Addr(s.ID); err == nil {
			d.cc.Targets = append(d.cc.Targets, lan.Target{Host: a.String()})
			d.lights = append(d.lights, lanLight{id: topic.DeviceID(s.SKU, s.ID), addr: a})
		}
	}
	return nil
}

// Close stops the simulators, last started first.
func (d *Demo) Close() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
}

// withCloud is cfg reading the simulated account. cfg.Demo stays set: the
// start's log and -check's report show "the simulated cloud (-demo)".
func (d *Demo) withCloud(cfg config.Config) config.Config {
	cfg.Cloud.BaseURL, cfg.Cloud.APIKey = d.srv.URL, config.Secret(d.sim.APIKey())
	return cfg
}

// Prepare makes m run against the demo: simulated cloud, embedded broker,
// simulated LAN lights, the status page (127.0.0.1:8080 or a free port unless
// HTTP_ADDR is set), events, and instructions on stdout once devices are listed.
func (d *Demo) Prepare(m *app.Main, stdout io.Writer) {
	cfg := d.withCloud(m.Config)
	cfg.MQTT.URL = config.EmbeddedBroker
	cfg.Local.Enabled = true
	if cfg.HTTP.Addr == "" {
		cfg.HTTP.Addr = httpAddr() // the demo shows its status page
	}
	m.Config = cfg
	cc := d.cc
	m.LANClient = &cc
	m.Events = d.events
	m.OnReady = func(r app.Ready) {
		if stdout == nil {
			return
		}
		d.printInstructions(stdout, cfg.MQTT.BaseTopic, r.BrokerURL)
		if r.PageURL != "" {
			printPage(stdout, r.PageURL)
		}
	}
}

// Run runs m (its Config from -demo) against a demo until ctx ends; the
// instructions go to stdout.
func Run(ctx context.Context, m *app.Main, stdout io.Writer) error {
	d, err := Start(m.Log)
	if err != nil {
		return err
	}
	defer d.Close()
	d.Prepare(m, stdout)
	return m.Run(ctx)
}

// Check is app.Check of a -demo configuration: the simulated account is
// the cloud it reaches.
func Check(ctx context.Context, cfg config.Config, cfgErr error, out io.Writer, log zerolog.Logger) bool {
	d, err := startCloud()
	if err != nil {
		fmt.Fprintf(out, "FAIL cloud: %v\n", err)
		return false
	}
	defer d.Close()
	return app.Check(ctx, d.withCloud(cfg), cfgErr, out, log)
}

// Devices is app.Devices of the simulated account.
func Devices(ctx context.Context, cfg config.Config, out io.Writer, log zerolog.Logger) error {
	d, err := startCloud()
	if err != nil {
		return err
	}
	defer d.Close()
	return app.Devices(ctx, d.withCloud(cfg), out, log)
}

// events feeds the simulator's events to the daemon through the live decoder,
// and raises one on a random demo device from time to time.
func (d *Demo) events(ctx context.Context, deliver func(events.Event)) {
	remove := d.sim.OnEvent(func(ev cloudsim.Event) {
		for _, e := range events.Parse(ev.Payload) {
			deliver(e)
		}
	})
	defer remove()
	d.sim.RaiseEventsEvery(ctx, eventsEvery, nil)
}

// httpAddr is the demo's HTTP_ADDR when none is set: 127.0.0.1:8080, or a
// free loopback port when that one is taken.
func httpAddr() string {
	const addr = "127.0.0.1:8080"
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "127.0.0.1:0"
	}
	_ = ln.Close()
	return addr
}

// device is the first device with the instance, for the instructions'
// examples.
func device(devs []capability.Device, instance string) (capability.Device, bool) {
	for _, d := range devs {
		if _, ok := d.Capability(instance); ok && d.Name != "" {
			return d, true
		}
	}
	return capability.Device{}, false
}
