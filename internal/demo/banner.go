package demo

import (
	"fmt"
	"io"
	"net"
	"strings"
	"text/tabwriter"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/topic"
)

// printInstructions tells how to watch and drive the demo with its own device
// ids, so that every printed command works as printed.
func (d *Demo) printInstructions(w io.Writer, base, brokerURL string) {
	printDemo(w, base, brokerURL, d.srv.URL, d.sim.Devices(), d.lights)
}

// printDemo is the instructions for the demo's devices (devs) and its
// lights on the LAN simulator.
func printDemo(w io.Writer, base, mqttURL, cloudURL string, devs []capability.Device, lights []lanLight) {
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(mqttURL, "tcp://"))
	sub := fmt.Sprintf("mosquitto_sub -h %s -p %s", host, port)
	pub := fmt.Sprintf("mosquitto_pub -h %s -p %s", host, port)
	var b strings.Builder
	fmt.Fprintf(&b, `
cloud2mqtt demo: a simulated cloud account and an embedded MQTT broker.

  MQTT broker      %s   (anonymous)
  Simulated cloud  %s

Devices (topic id, model, name):
`, mqttURL, cloudURL)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, d := range devs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", topic.DeviceID(d.SKU, d.Device), d.SKU, d.Name)
	}
	_ = tw.Flush()
	b.WriteString("\n")
	line := func(what, cmd string) { fmt.Fprintf(&b, "%-23s %s\n", what+":", cmd) }
	line("Watch everything", sub+" -t '#' -v")
	line("Device list (JSON)", sub+" -t '"+base+"/bridge/devices' -C 1")
	if light, ok := device(devs, capability.InstanceColorRGB); ok {
		id := topic.DeviceID(light.SKU, light.Device)
		line("A light's state", sub+" -t '"+base+"/"+id+"/state' -C 1")
		line("Switch it on", pub+" -t '"+base+"/"+id+"/set' -m '{\"powerSwitch\":\"on\",\"brightness\":60,\"colorRgb\":\"#ff8800\"}'")
		if c, ok := light.Capability(capability.InstanceLightScene); ok && c.Parameters != nil && len(c.Parameters.Options) > 0 {
			line("Pick a scene", pub+" -t '"+base+"/"+id+"/set/lightScene' -m '"+c.Parameters.Options[0].Name+"'")
		}
	}
	if heater, ok := device(devs, capability.InstanceTargetTemperature); ok {
		id := topic.DeviceID(heater.SKU, heater.Device)
		line("Heater to 22 °C", pub+" -t '"+base+"/"+id+"/set/targetTemperature' -m 22C")
	}
	line("Errors of commands", sub+" -t '"+base+"/+/error' -v")
	b.WriteString("\n")
	printLAN(&b, lights, base)
	fmt.Fprintf(&b, `Home Assistant:         add the MQTT integration with broker %s, port %s; devices appear by discovery.
Node-RED:               import deploy/node-red/flows.json and point its broker node at %s:%s.

Stop with Ctrl-C.

`, host, port, host, port)
	_, _ = io.WriteString(w, b.String())
}

// printLAN says which demo lights are local.
func printLAN(w io.Writer, lights []lanLight, base string) {
	if len(lights) == 0 {
		return
	}
	fmt.Fprintf(w, "Local control (LAN simulator on loopback; LAN_SCAN_TARGETS points there):\n")
	for _, l := range lights {
		fmt.Fprintf(w, "  %-28s at %s: switched and read over the LAN\n", l.id, l.addr)
	}
	fmt.Fprintf(w, "  their \"connection\" in %s/<id>/state says local; the others say cloud.\n\n", base)
}

// printPage tells the demo's user where the status page is.
func printPage(w io.Writer, url string) {
	fmt.Fprintf(w, "Status page:            %s/   (devices, today's budget, recent problems)\n\n", url)
}
