package app

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"text/tabwriter"
	"time"

	"cloud2mqtt/internal/bridge"
	"cloud2mqtt/internal/broker"
	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/events"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/mqtt"
	"cloud2mqtt/internal/topic"
)

// environment is what the daemon talks to: the cloud's address and key, the
// broker's URL, and the event source, with whatever Run started for them
// (the embedded broker, the demo's simulated cloud).
type environment struct {
	baseURL, apiKey, mqttURL string
	events                   func(ctx context.Context, mirror *bridge.Mirror)
	closers                  []func()
	// lan replaces the LAN client's settings (the demo's simulated
	// lights, lan.go); lanLights are those lights.
	lan       *lan.Config
	lanLights []demoLANLight
	// demo are the demo's devices, for its instructions (printDemo).
	demo []capability.Device
}

func (e *environment) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
}

// environment starts what the configuration asks for: in demo mode the
// simulated cloud and the embedded broker, with MQTT_URL=embedded the
// embedded broker.
func (m *Main) environment(ctx context.Context) (*environment, error) {
	cfg := m.Config
	env := &environment{baseURL: cfg.Cloud.BaseURL, apiKey: cfg.Cloud.APIKey.Reveal(), mqttURL: cfg.MQTT.URL}
	fail := func(err error) (*environment, error) {
		env.close()
		return nil, err
	}
	if cfg.Demo || cfg.Embedded() {
		// The embedded broker refuses packets over 64 KiB from anyone but
		// the bridge's own client (whose device list outgrows that).
		id := cfg.MQTT.ClientID
		if id == "" {
			id = mqtt.DefaultClientID(topic.New(cfg.MQTT.BaseTopic).BridgeState())
		}
		b, err := broker.Start(ctx, broker.Options{Addr: cfg.MQTT.Listen, Logger: m.Log,
			MaxPacketSize: broker.DefaultMaxPacketSize, Unlimited: []string{id}})
		if err != nil {
			return fail(fmt.Errorf("app: the embedded broker cannot listen on MQTT_LISTEN=%s: %s; %s",
				cfg.MQTT.Listen, bindError(err), listenHint("MQTT_LISTEN", "127.0.0.1:1884", err)))
		}
		env.closers = append(env.closers, func() { _ = b.Close() })
		env.mqttURL = b.URL()
		m.Log.Info().Str("url", b.URL()).Msg("embedded MQTT broker listening")
	}
	if cfg.Cloud.EventsURL != "" {
		env.events = m.cloudEvents(cfg.Cloud.EventsURL, env.apiKey)
	}
	if !cfg.Demo {
		return env, nil
	}

	sim := cloudsim.New(cloudsim.Options{})
	srv, err := newLoopbackServer(sim)
	if err != nil {
		return fail(fmt.Errorf("app: demo: serve the simulated cloud: %w", err))
	}
	env.closers = append(env.closers, srv.Close)
	env.baseURL = srv.URL
	env.apiKey = sim.APIKey()
	// The demo's events come straight from the simulator, in the live
	// service's payload shape, through the same decoder as real ones.
	env.events = func(ctx context.Context, mirror *bridge.Mirror) { demoEvents(ctx, sim, mirror) }
	if err := m.demoLAN(env, sim); err != nil {
		return fail(err)
	}
	env.demo = sim.Devices()
	return env, nil
}

// cloudEvents subscribes to the cloud's event broker.
func (m *Main) cloudEvents(url, key string) func(context.Context, *bridge.Mirror) {
	return func(ctx context.Context, mirror *bridge.Mirror) {
		err := events.Subscribe(ctx, events.Config{URL: url, APIKey: key, Logger: m.Log},
			func(e events.Event) { mirror.Event(e.SKU, e.Device, e.Instance, e.Name, e.Value, e.Message) })
		if err != nil && ctx.Err() == nil {
			m.Log.Error().Err(err).Msg("cloud events unavailable")
		}
	}
}

// demoEvents feeds the simulator's events to the bridge, through the same
// decoder as pushed ones, and raises one on a random demo device now and then.
func demoEvents(ctx context.Context, sim *cloudsim.Sim, mirror *bridge.Mirror) {
	remove := sim.OnEvent(func(ev cloudsim.Event) {
		for _, e := range events.Parse(ev.Payload) {
			mirror.Event(e.SKU, e.Device, e.Instance, e.Name, e.Value, e.Message)
		}
	})
	defer remove()
	sim.RaiseEventsEvery(ctx, 45*time.Second, nil)
}

// printDemo tells how to watch and drive the demo, with the ids of its own
// devices, so every command it prints works as printed.
func (m *Main) printDemo(env *environment, devs []capability.Device) {
	if m.Stdout == nil {
		return
	}
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(env.mqttURL, "tcp://"))
	base := m.Config.MQTT.BaseTopic
	sub := fmt.Sprintf("mosquitto_sub -h %s -p %s", host, port)
	pub := fmt.Sprintf("mosquitto_pub -h %s -p %s", host, port)
	var b strings.Builder
	fmt.Fprintf(&b, `
cloud2mqtt demo: a simulated cloud account and an embedded MQTT broker.

  MQTT broker      %s   (anonymous)
  Simulated cloud  %s

Devices (topic id, model, name):
`, env.mqttURL, env.baseURL)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, d := range devs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", topic.DeviceID(d.SKU, d.Device), d.SKU, d.Name)
	}
	_ = tw.Flush()
	b.WriteString("\n")
	line := func(what, cmd string) { fmt.Fprintf(&b, "%-23s %s\n", what+":", cmd) }
	line("Watch everything", sub+" -t '#' -v")
	line("Device list (JSON)", sub+" -t '"+base+"/bridge/devices' -C 1")
	if light, ok := demoDevice(devs, capability.InstanceColorRGB); ok {
		id := topic.DeviceID(light.SKU, light.Device)
		line("A light's state", sub+" -t '"+base+"/"+id+"/state' -C 1")
		line("Switch it on", pub+" -t '"+base+"/"+id+"/set' -m '{\"powerSwitch\":\"on\",\"brightness\":60,\"colorRgb\":\"#ff8800\"}'")
		if c, ok := light.Capability(capability.InstanceLightScene); ok && c.Parameters != nil && len(c.Parameters.Options) > 0 {
			line("Pick a scene", pub+" -t '"+base+"/"+id+"/set/lightScene' -m '"+c.Parameters.Options[0].Name+"'")
		}
	}
	if heater, ok := demoDevice(devs, capability.InstanceTargetTemperature); ok {
		id := topic.DeviceID(heater.SKU, heater.Device)
		line("Heater to 22", pub+" -t '"+base+"/"+id+"/set/targetTemperature' -m 22")
	}
	line("Errors of commands", sub+" -t '"+base+"/+/error' -v")
	b.WriteString("\n")
	printDemoLAN(&b, env.lanLights, base)
	fmt.Fprintf(&b, `Home Assistant:         add the MQTT integration with broker %s, port %s; devices appear by discovery.
Node-RED:               import deploy/node-red/flows.json and point its broker node at %s:%s.

Stop with Ctrl-C.

`, host, port, host, port)
	_, _ = io.WriteString(m.Stdout, b.String())
}

// demoDevice is the first device with the instance, for the demo's examples.
func demoDevice(devs []capability.Device, instance string) (capability.Device, bool) {
	for _, d := range devs {
		if _, ok := d.Capability(instance); ok && d.Name != "" {
			return d, true
		}
	}
	return capability.Device{}, false
}
