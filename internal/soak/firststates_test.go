//go:build soak

package soak

import (
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/mqtttest"
	"cloud2mqtt/internal/topic"
)

var (
	bins         binList
	firstSizes   = flag.String("first-devices", "18,100,1000", "TestFirstStates: account sizes (lights), comma-separated")
	firstRuns    = flag.Int("first-runs", 5, "TestFirstStates: starts of each binary at each size")
	firstLatency = flag.String("first-latency", "0,5ms", "TestFirstStates: the simulated cloud's delay before each answer (cmd/cloudsim -latency), comma-separated: each is a series of its own")
	firstSchemes = flag.String("first-scheme", "http,https", "TestFirstStates: plain HTTP and/or HTTPS (HTTP/2, as the live cloud serves), comma-separated: each is a series of its own")
	firstTimeout = flag.Duration("first-timeout", 60*time.Second, "TestFirstStates: how long a start may take before the run fails")
)

func init() {
	flag.Var(&bins, "bins", "TestFirstStates, TestIdleRatio: bridge binaries to alternate in one run (A/B), comma-separated; default -bin or the checkout's release build")
}

// firstRun is one start of the bridge, timed from its exec.
type firstRun struct {
	list        time.Duration // the device list's publication (bridge/devices)
	first, last time.Duration // the first and the last device's first state
	configs     time.Duration // the last of every device's discovery configs
	conns, open int           // connections opened to the cloud during the start; open at its end
	requests    string        // the cloud requests the daemon counted by then
	load        string
}

// TestFirstStates measures the time from the bridge's
// exec to the last of the N <id>/state messages (and from the device
// list's publication to it), for accounts of N lights, with cmd/cloudsim,
// mosquitto and the bridge's release binary each its own process; the
// binaries of -bins alternate, start after start, so that before and after
// share the sitting:
//
//	go test -tags soak ./internal/soak -run TestFirstStates -v -count=1 \
//	    -args -bins=/tmp/before/bridge,/tmp/after/bridge -first-runs=5
//
// Each start gets a fresh simulator and broker (nothing retained from the
// run before). -first-latency delays every answer of the simulator: against
// a cloud that answers in a few ms the number of reads in flight at once
// shows; 0 shows the bridge's own part. -first-scheme serves plain HTTP, or
// HTTPS with HTTP/2 as the live cloud does (the daemon trusts a test
// certificate through SSL_CERT_FILE). It also counts the TCP connections the bridge opened to the
// cloud from its exec to its last first state (ss -E at the simulator's
// port) and those still open then.
func TestFirstStates(t *testing.T) {
	paths, labels := bridgeBins(t)
	tools := t.TempDir()
	simBin := buildTool(t, "cloud2mqtt/cmd/cloudsim", tools, true)
	var sizes []int
	for s := range strings.SplitSeq(*firstSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			t.Fatalf("-first-devices %q: give positive numbers, e.g. 18,100,1000", *firstSizes)
		}
		sizes = append(sizes, n)
	}
	var latencies []time.Duration
	for s := range strings.SplitSeq(*firstLatency, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d < 0 {
			t.Fatalf("-first-latency %q: give durations of 0 or more, e.g. 0,5ms", *firstLatency)
		}
		latencies = append(latencies, d)
	}
	var tlsDirs []string // "" for plain HTTP, else the directory of the certificates
	for s := range strings.SplitSeq(*firstSchemes, ",") {
		switch strings.TrimSpace(s) {
		case "http":
			tlsDirs = append(tlsDirs, "")
		case "https":
			dir := t.TempDir()
			mqtttest.WriteCerts(t, dir)
			tlsDirs = append(tlsDirs, dir)
		default:
			t.Fatalf("-first-scheme %q: give http, https or both", *firstSchemes)
		}
	}
	t.Logf("load average at the start: %s", loadAverages())
	for _, tlsDir := range tlsDirs {
		for _, lat := range latencies {
			for _, n := range sizes {
				firstStatesOf(t, paths, labels, simBin, filepath.Join(tools, fmt.Sprintf("lights-%d.json", n)), n, lat, tlsDir)
			}
		}
	}
	t.Logf("load average at the end: %s", loadAverages())
}

// firstStatesOf alternates the binaries' starts on an account of n lights
// with the simulator's latency, over HTTPS when tlsDir holds the
// certificates, and logs each start and each binary's spread.
func firstStatesOf(t *testing.T, paths, labels []string, simBin, catalogue string, n int, latency time.Duration, tlsDir string) {
	t.Helper()
	scheme := "http"
	if tlsDir != "" {
		scheme = "https"
	}
	writeCatalogue(t, lightsCatalogue(t, n), catalogue)
	runs := make([][]firstRun, len(paths))
	for r := range *firstRuns {
		for k := range paths {
			// ABBA...: neither binary always goes first.
			b := k
			if r%2 == 1 {
				b = len(paths) - 1 - k
			}
			fr := startOnce(t, paths[b], simBin, catalogue, n, latency, tlsDir, fmt.Sprintf("%s-%d-%s-%s-%d", strings.ReplaceAll(labels[b], "/", "_"), n, latency, scheme, r))
			runs[b] = append(runs[b], fr)
			t.Logf("%d lights, %s, latency %s, %s, start %d: device list %.3f s, first state %.3f s, last first state %.3f s after exec (%.3f s after the list), every discovery config %.3f s; %d connections opened, %d open; %s; load %s",
				n, scheme, latency, labels[b], r+1, fr.list.Seconds(), fr.first.Seconds(), fr.last.Seconds(), (fr.last - fr.list).Seconds(), fr.configs.Seconds(), fr.conns, fr.open, fr.requests, fr.load)
		}
	}
	for b := range paths {
		var list, last, after, conns, configs []float64
		for _, fr := range runs[b] {
			configs = append(configs, fr.configs.Seconds())
			list = append(list, fr.list.Seconds())
			last = append(last, fr.last.Seconds())
			after = append(after, (fr.last - fr.list).Seconds())
			conns = append(conns, float64(fr.conns))
		}
		l0, l1, l2 := spread(last)
		a0, a1, a2 := spread(after)
		c0, _, c2 := spread(conns)
		_, d1, _ := spread(list)
		g0, g1, g2 := spread(configs)
		t.Logf("SUMMARY %d lights, %s, latency %s, %s, %d starts: last first state after exec min %.3f / median %.3f / max %.3f s; after the device list %.3f / %.3f / %.3f s (the list: median %.3f s after exec); every discovery config %.3f / %.3f / %.3f s; connections %.0f–%.0f",
			n, scheme, latency, labels[b], len(runs[b]), l0, l1, l2, a0, a1, a2, d1, g0, g1, g2, c0, c2)
	}
}

// startOnce starts one bridge against a fresh simulator and broker and
// times its first states.
func startOnce(t *testing.T, bin, simBin, catalogue string, n int, latency time.Duration, tlsDir, name string) firstRun {
	t.Helper()
	args := []string{"-latency", latency.String()}
	if tlsDir != "" {
		args = append(args, "-tls-cert", filepath.Join(tlsDir, "server.pem"), "-tls-key", filepath.Join(tlsDir, "server.key"))
	}
	sim := startCloudsim(t, simBin, catalogue, args...)
	defer sim.stop()
	broker := mqtttest.Start(t)
	defer broker.Stop()
	watch := newFirstWatcher(t, broker.URL(), lightsCatalogue(t, n))
	defer watch.close()

	conns := countConns(sim.port)
	fr := firstRun{load: loadAverages()}
	env := map[string]string{
		"CLOUD_BASE_URL": sim.url,
		"CLOUD_API_KEY":  soakKey,
		"MQTT_URL":       broker.URL(),
		"MQTT_CLIENT_ID": "soak-bridge",
		"POLL_INTERVAL":  "60s",
	}
	if tlsDir != "" {
		env["SSL_CERT_FILE"] = filepath.Join(tlsDir, "ca.pem")
	}
	d := startDaemonBin(t, bin, env, filepath.Join(artifacts(t), name+".log"))
	select {
	case <-watch.all:
	case <-d.exited:
		t.Fatalf("bridge exited early: %v; log:\n%s", d.waitErr, d.logs.tail())
	case <-time.After(*firstTimeout):
		t.Fatalf("%d of %d first states and %d of %d discovery configs within %s; log:\n%s", watch.count(), n, watch.configCount(), watch.cfgN, *firstTimeout, d.logs.tail())
	}
	fr.open = established(sim.port)
	list, first, last, configs := watch.times()
	if list.IsZero() {
		t.Errorf("%s: every first state arrived before the device list (bridge/devices)", name)
		list = last
	}
	fr.list, fr.first, fr.last, fr.configs = list.Sub(d.started), first.Sub(d.started), last.Sub(d.started), configs.Sub(d.started)
	if m, err := d.metrics(); err == nil {
		var parts []string
		for _, ep := range []string{"devices", "state", "scenes", "diy-scenes"} {
			var sum float64
			for k, v := range m {
				if strings.HasPrefix(k, `cloud2mqtt_cloud_requests_total{endpoint="`+ep+`"`) {
					sum += v
				}
			}
			parts = append(parts, fmt.Sprintf("%s %.0f", ep, sum))
		}
		fr.requests = "requests: " + strings.Join(parts, ", ")
	}
	d.stop()
	fr.conns = conns.stop()
	if e := d.logs.count("error"); e != 0 {
		t.Errorf("%s: %d error log lines", name, e)
	}
	return fr
}

// firstWatcher notes when each device's first <id>/state message, the
// device list and each of its discovery configs arrive (Home Assistant
// shows a state once the entity's config is in), and says when every
// state and config has.
type firstWatcher struct {
	c       paho.Client
	all     chan struct{} // closed when every state and config has arrived
	mu      sync.Mutex
	want    map[string]bool // state topics not yet seen
	n       int
	cfgWant map[string]bool // config topics not yet seen
	cfgN    int
	list    time.Time
	first   time.Time
	last    time.Time
	cfgLast time.Time
}

func newFirstWatcher(t testing.TB, url string, c *cloudsim.Catalogue) *firstWatcher {
	t.Helper()
	w := &firstWatcher{all: make(chan struct{}), want: map[string]bool{}, cfgWant: map[string]bool{}}
	dcfg := discovery.Config{Layout: topic.New(baseTopic)}
	for _, d := range c.Devices {
		w.want[baseTopic+"/"+topic.DeviceID(d.SKU, d.Device.Device)+"/state"] = true
		for t := range discovery.Configs(dcfg, d.Device) {
			w.cfgWant[t] = true
		}
	}
	w.n, w.cfgN = len(w.want), len(w.cfgWant)
	devices := baseTopic + "/bridge/devices"
	opts := paho.NewClientOptions().AddBroker(url).SetClientID("soak-first-states").SetCleanSession(true).SetOrderMatters(false)
	w.c = paho.NewClient(opts)
	if tok := w.c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("soak: watcher connect: %v", tok.Error())
	}
	// The configs at QoS 0: mosquitto queues at most 1000 QoS 1 messages
	// for a subscriber, and a start sends thousands of configs at once.
	tok := w.c.SubscribeMultiple(map[string]byte{baseTopic + "/+/state": 1, devices: 1, discovery.DefaultPrefix + "/#": 0}, func(_ paho.Client, m paho.Message) {
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		switch {
		case m.Topic() == devices:
			if w.list.IsZero() {
				w.list = now
			}
		case w.want[m.Topic()] && len(m.Payload()) > 0:
			if len(w.want) == w.n {
				w.first = now
			}
			delete(w.want, m.Topic())
			if len(w.want) == 0 {
				w.last = now
				w.doneLocked()
			}
		case w.cfgWant[m.Topic()] && len(m.Payload()) > 0:
			delete(w.cfgWant, m.Topic())
			if len(w.cfgWant) == 0 {
				w.cfgLast = now
				w.doneLocked()
			}
		}
	})
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("soak: watcher subscribe: %v", tok.Error())
	}
	return w
}

// doneLocked closes all once every state and config has arrived.
func (w *firstWatcher) doneLocked() {
	if len(w.want) == 0 && len(w.cfgWant) == 0 {
		close(w.all)
	}
}

func (w *firstWatcher) configCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cfgN - len(w.cfgWant)
}

func (w *firstWatcher) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n - len(w.want)
}

func (w *firstWatcher) times() (list, first, last, configs time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.list, w.first, w.last, w.cfgLast
}

func (w *firstWatcher) close() { w.c.Disconnect(100) }
