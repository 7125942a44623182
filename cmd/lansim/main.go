// Command lansim runs simulated lights with the vendor's LAN interface on
// loopback addresses of this host, for trying local control by hand.
//
//	lansim [-devices ID=SKU,ID=SKU,...] [-first 127.0.0.2]
//	       [-scan-port 4001] [-command-port 4003] [-reply-port 4002]
//
// Each light listens on the next loopback address from -first, at the
// production ports by default, and answers as the real ones do. It prints
// the settings that point the bridge at them. The default lights are the
// demo catalogue's three and keep their own state.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/lansim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

const demoLights = "AA:BB:CC:DD:EE:FF:10:01=H619C,AA:BB:CC:DD:EE:FF:10:02=H6076,AA:BB:CC:DD:EE:FF:10:03=H6008"

// run serves the lights until ctx ends.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("lansim", flag.ContinueOnError)
	fs.SetOutput(stdout)
	devices := fs.String("devices", demoLights, "comma-separated lights as id=sku")
	first := fs.String("first", "127.0.0.2", "loopback address of the first light; the others take the next ones")
	scanPort := fs.Int("scan-port", lan.ScanPort, "port the lights hear scans on (0: a free one)")
	cmdPort := fs.Int("command-port", lan.CommandPort, "port the lights hear commands on (0: a free one)")
	replyPort := fs.Int("reply-port", lan.ListenPort, "port the lights answer to (0: the port a request came from)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("lansim: unexpected arguments %q: every setting is a flag (see -h)", fs.Args())
	}
	specs, err := parseDevices(*devices, *first)
	if err != nil {
		return err
	}
	sim, err := lansim.New(lansim.Options{ScanPort: *scanPort, CommandPort: *cmdPort, ReplyPort: *replyPort}, specs...)
	if err != nil {
		return fmt.Errorf("%w (another lansim running? choose other ports or -first)", err)
	}
	defer sim.Close()
	var targets []string
	for _, s := range specs {
		targets = append(targets, fmt.Sprintf("%s:%d", s.Addr, sim.ScanPort()))
		fmt.Fprintf(stdout, "light %s (%s) on %s\n", s.ID, s.SKU, s.Addr)
	}
	fmt.Fprintf(stdout, "LAN_ENABLED=true LAN_LISTEN=127.0.0.1:%d LAN_SCAN_TARGETS=%s\n", *replyPort, strings.Join(targets, ","))
	if sim.CommandPort() != lan.CommandPort {
		fmt.Fprintf(stdout, "note: the lights hear commands on port %d, not %d: only a client configured in code reaches them\n",
			sim.CommandPort(), lan.CommandPort)
	}
	<-ctx.Done()
	return nil
}

// parseDevices reads -devices, giving each light the next address.
func parseDevices(list, first string) ([]lansim.Spec, error) {
	addr, err := netip.ParseAddr(first)
	if err != nil || !addr.Is4() || !addr.IsLoopback() {
		return nil, fmt.Errorf("lansim: -first %q: give an IPv4 loopback address such as 127.0.0.2", first)
	}
	var specs []lansim.Spec
	for _, item := range strings.Split(list, ",") {
		id, sku, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || id == "" || sku == "" {
			return nil, fmt.Errorf("lansim: -devices entry %q: write id=sku, e.g. AA:BB:CC:DD:EE:FF:10:01=H619C", item)
		}
		if !addr.IsLoopback() {
			return nil, fmt.Errorf("lansim: too many lights for the loopback addresses from %s", first)
		}
		specs = append(specs, lansim.Spec{ID: id, SKU: sku, Addr: addr,
			State: lan.Status{On: true, Brightness: 100, HasBrightness: true, Color: lan.RGB{R: 255, G: 255, B: 255}, HasColor: true, HasKelvin: true}})
		addr = addr.Next()
	}
	return specs, nil
}
