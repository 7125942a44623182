// Command ha-e2e is a developer check (not run in CI): it runs the whole
// chain — Mosquitto, the cloud simulator with a catalogue, the bridge daemon
// and a real Home Assistant (tools/ha-check) — and proves that every
// device appears in Home Assistant with all its capabilities, that the
// entities' states match the simulated devices, and that Home Assistant's own
// service calls change the simulated devices. It needs root (Home Assistant
// runs in a chroot), mosquitto and the Home Assistant set up by
// tools/ha-check/setup.sh.
//
//	go run ./tools/ha-e2e -catalogue demo
//	go run ./tools/ha-e2e -catalogue testdata/list_devices_issue4.json -scenes testdata/scenes.json
//
// It prints a Markdown table per device and every failure, and exits 1 when
// anything failed. See docs/ha-check.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"cloud2mqtt/internal/cloudsim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type options struct {
	catalogue string
	scenes    string
	hassSh    string
	haRoot    string
	work      string
	timeout   time.Duration
	segments  bool
	bridgeBin string
	// dailyLimit is the bridge's CLOUD_DAILY_LIMIT (0: none); with one,
	// its "Quota left today" sensor exists and is checked.
	dailyLimit int
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	var o options
	fs := flag.NewFlagSet("ha-e2e", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.catalogue, "catalogue", "demo", `device-list file, or "demo" for the simulator's demo catalogue`)
	fs.StringVar(&o.scenes, "scenes", "", "optional scenes-endpoint answer served for lights without scenes of their own")
	fs.StringVar(&o.hassSh, "hass", filepath.Join(root, "tools/ha-check/hass.sh"), "tools/ha-check's hass.sh")
	fs.StringVar(&o.haRoot, "ha-root", defaultHARoot(), "the Home Assistant chroot tools/ha-check/setup.sh prepared")
	fs.StringVar(&o.work, "work", "", "directory for logs and binaries (default: a new temporary directory)")
	fs.DurationVar(&o.timeout, "step-timeout", 20*time.Second, "how long one expectation may take to come true")
	fs.BoolVar(&o.segments, "segments", true, "restart Home Assistant with the (disabled by default) segment lights enabled and drive them")
	fs.StringVar(&o.bridgeBin, "bridge", "", "bridge binary to run (default: go build ./cmd/bridge)")
	fs.IntVar(&o.dailyLimit, "daily-limit", 0, "CLOUD_DAILY_LIMIT for the bridge (0: none); with one, the bridge's \"Quota left today\" sensor is created and checked")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.work == "" {
		if o.work, err = os.MkdirTemp("", "ha-e2e-"); err != nil {
			fmt.Fprintln(stderr, "ha-e2e:", err)
			return 2
		}
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "ha-e2e %s: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
	}
	rep, err := check(ctx, root, o, logf)
	if rep != nil {
		rep.write(stdout, o)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if rep.failed() {
		return 1
	}
	return 0
}

// defaultHARoot is the chroot the ha-check scripts use (common.sh): HA_ROOT,
// else the one setup.sh prepared last, else /tmp/ha-root.
func defaultHARoot() string {
	if r := os.Getenv("HA_ROOT"); r != "" {
		return r
	}
	state := os.Getenv("HA_CHECK_STATE")
	if state == "" {
		state = "/tmp/ha-check.root"
	}
	if b, err := os.ReadFile(state); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return "/tmp/ha-root"
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" || strings.TrimSpace(string(out)) == os.DevNull {
		return "", fmt.Errorf("ha-e2e: run me inside the cloud2mqtt module (go env GOMOD: %v)", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func waitTCP(addr string, timeout time.Duration) error {
	return eventually(timeout, func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
}

// proc is a child process the check started and stops.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

func startProc(name, logPath string, env []string, bin string, args ...string) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("ha-e2e: %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("ha-e2e: start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	return p, nil
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// check runs the whole chain and returns the report.
func check(ctx context.Context, root string, o options, logf func(string, ...any)) (*report, error) {
	// one Home Assistant chroot: one check at a time
	lock, err := os.OpenFile("/tmp/ha-e2e.lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ha-e2e: lock file: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return nil, fmt.Errorf("ha-e2e: another check is running (it holds /tmp/ha-e2e.lock): they would share one Home Assistant; wait for it")
	}
	if _, err := exec.LookPath("mosquitto"); err != nil {
		return nil, fmt.Errorf("ha-e2e: needs mosquitto on PATH: %w", err)
	}
	if _, err := os.Stat(o.hassSh); err != nil {
		return nil, fmt.Errorf("ha-e2e: %s: %w; set -hass", o.hassSh, err)
	}
	var cat *cloudsim.Catalogue
	if o.catalogue == "demo" {
		cat = cloudsim.DemoCatalogue()
	} else {
		var err error
		if cat, err = cloudsim.LoadCatalogue(o.catalogue); err != nil {
			return nil, err
		}
	}
	if o.scenes != "" {
		b, err := os.ReadFile(o.scenes)
		if err != nil {
			return nil, fmt.Errorf("ha-e2e: read -scenes: %w", err)
		}
		if cat.DefaultScenes, err = cloudsim.ParseSceneList(b); err != nil {
			return nil, fmt.Errorf("ha-e2e: -scenes %s: %w", o.scenes, err)
		}
	}

	// the bridge, built as a user would
	bin := o.bridgeBin
	if bin == "" {
		bin = filepath.Join(o.work, "bridge")
		logf("building the bridge into %s", bin)
		b := exec.Command("go", "build", "-o", bin, "./cmd/bridge")
		b.Dir = root
		if out, err := b.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("ha-e2e: go build ./cmd/bridge: %w: %s", err, out)
		}
	}

	// mosquitto on a free loopback port
	mport, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("ha-e2e: free port: %w", err)
	}
	conf := filepath.Join(o.work, "mosquitto.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, "listener %d 127.0.0.1\nallow_anonymous true\n", mport), 0o644); err != nil {
		return nil, fmt.Errorf("ha-e2e: %w", err)
	}
	mosq, err := startProc("mosquitto", filepath.Join(o.work, "mosquitto.log"), os.Environ(), "mosquitto", "-c", conf)
	if err != nil {
		return nil, err
	}
	defer mosq.stop()
	broker := fmt.Sprintf("tcp://127.0.0.1:%d", mport)
	if err := waitTCP(fmt.Sprintf("127.0.0.1:%d", mport), 10*time.Second); err != nil {
		return nil, fmt.Errorf("ha-e2e: mosquitto did not listen (see %s/mosquitto.log): %w", o.work, err)
	}
	logf("mosquitto on %s", broker)

	// the simulator, in this process so the check reads the devices' true state
	key := fmt.Sprintf("e2e-%d", time.Now().UnixNano())
	// A quota the bridge learns from the answers' headers, large enough
	// never to slow it: the bridge's quota sensors have values to show.
	sim := cloudsim.New(cloudsim.Options{APIKey: key, Catalogue: cat, Seed: 1,
		Quota: cloudsim.Quota{Limit: 10_000_000, Window: 24 * time.Hour}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("ha-e2e: simulator listen: %w", err)
	}
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	simURL := "http://" + ln.Addr().String()
	logf("simulator with %d devices at %s", len(sim.Devices()), simURL)

	st := newStore()
	cl, err := mqttClient(broker, st)
	if err != nil {
		return nil, err
	}
	defer cl.Disconnect(250)

	env := append(os.Environ(), "CLOUD_BASE_URL="+simURL, "CLOUD_API_KEY="+key, "MQTT_URL="+broker,
		"POLL_INTERVAL=2s", "LOG_FORMAT=json")
	if o.dailyLimit > 0 {
		env = append(env, fmt.Sprintf("CLOUD_DAILY_LIMIT=%d", o.dailyLimit))
	}
	bridge, err := startProc("bridge", filepath.Join(o.work, "bridge.log"), env, bin)
	if err != nil {
		return nil, err
	}
	defer bridge.stop()

	c := &checker{cl: cl, st: st, sim: sim, timeout: o.timeout, logf: logf, dailyLimit: o.dailyLimit,
		ha: &hass{script: o.hassSh, root: o.haRoot, port: mport}}
	if err := c.waitDiscovery(ctx, bridge); err != nil {
		return nil, err
	}
	bridgeBeforeHA := c.bridgeConfigsSeen()
	logf("the bridge published %d discovery configs (its own device's: %v); starting Home Assistant", len(c.configs()), bridgeBeforeHA)
	if err := c.ha.start(); err != nil {
		return nil, err
	}
	defer func() {
		if err := c.ha.stop(); err != nil {
			logf("%v", err)
		}
		// keep Home Assistant's log and registry with the check's logs
		for _, f := range []string{c.ha.logPath(), c.ha.registryPath()} {
			if b, err := os.ReadFile(f); err == nil {
				_ = os.WriteFile(filepath.Join(o.work, filepath.Base(f)), b, 0o644)
			}
		}
	}()
	rep, err := c.run(ctx, o, bridgeBeforeHA)
	if bridge.exited() {
		err = errors.Join(err, fmt.Errorf("ha-e2e: the bridge exited during the check; see %s/bridge.log", o.work))
	}
	if rep != nil {
		rep.catalogue = o.catalogue
		rep.work = o.work
		rep.port = strconv.Itoa(mport)
	}
	return rep, err
}
