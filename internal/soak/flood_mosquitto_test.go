//go:build mosquitto

package soak

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/mqtttest"
	"cloud2mqtt/internal/testkit"
	"cloud2mqtt/internal/topic"
)

// The flood: commands over many lights through mosquitto at its
// defaults (20 QoS 1 messages in flight to each client, 1000 more queued,
// the rest dropped), with mosquitto's own mosquitto_sub -q 1 subscribed to
// the same command topics beside the bridge (the release binary, as its own
// process). The broker drops for each client what that client did not take
// in time. Each client reaches the broker through a tap that records what
// the broker delivered to it, so a run fails when:
//
//   - the bridge did not take exactly one command for each message the
//     broker delivered to it (none lost, none twice);
//   - a light did not end, in the cloud and on <id>/state, at the last
//     command the broker delivered to the bridge;
//   - at a pace (not at full speed, where these are figures: slower):
//     the broker dropped more of the flood for the bridge than for
//     mosquitto_sub, beyond dropMargin, or mosquitto_sub received a
//     light's last command and the bridge did not end at it, unless the
//     broker did not deliver it to the bridge and dropped no more for the
//     bridge than for mosquitto_sub (judgeMissed).
//
// The runs' counts of lights at their last command, side by side, are the
// figures of docs/benchmarks.md ("Messages in: a flood beside mosquitto_sub"):
//
//	go test -tags mosquitto ./internal/soak -run TestFloodBesideMosquittoSub -v \
//	    -flood.commands 50000 -flood.paces 20000,40000,0 -flood.runs 3

var (
	floodLights   = flag.Int("flood.lights", 13, "lights the flood's commands go to, round-robin")
	floodCommands = flag.Int("flood.commands", 5005, "commands in each flood")
	floodPaces    = flag.String("flood.paces", "5000,0", "commands a second of each flood, comma-separated; 0: as fast as the publisher can write them")
	floodRuns     = flag.Int("flood.runs", 1, "floods at each pace, each with a new broker and bridge")
	floodNoDelay  = flag.Bool("flood.nodelay", false, "run mosquitto_sub with --nodelay (no Nagle's algorithm: its acknowledgements leave at once, as the bridge's do)")
	floodTap      = flag.Bool("flood.tap", true, "connect the bridge and mosquitto_sub through taps that record what the broker delivered to each")
)

// floodCatalogue is an account of n lights, clones of the demo's H6008.
func floodCatalogue(t testing.TB, n int) *cloudsim.Catalogue {
	t.Helper()
	var light map[string]any
	for _, d := range cloudsim.DemoCatalogue().Devices {
		if d.Device.SKU == "H6008" {
			if err := json.Unmarshal(d.Raw, &light); err != nil {
				t.Fatal(err)
			}
		}
	}
	if light == nil {
		t.Fatal("soak: the demo account has no H6008")
	}
	devices := make([]any, n)
	for i := range devices {
		d := maps.Clone(light)
		d["device"] = fmt.Sprintf("5A:00:00:%02X:%02X:FF:EE:01", i>>8, i&0xff)
		d["deviceName"] = fmt.Sprintf("Flood %d", i)
		devices[i] = d
	}
	b, _ := json.Marshal(map[string]any{"code": 200, "message": "success", "data": devices})
	c, err := cloudsim.ParseCatalogue(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// floodResult is one flood's outcome, device by device.
type floodResult struct {
	pace                  string
	race                  bool // as fast as the publisher writes: speed against mosquitto_sub is a figure
	tapped                bool
	lights, sent          int
	writing               time.Duration // the publisher's time to write the flood
	toBridge, toSub       int           // flood messages the broker delivered to each (-1: not tapped)
	handled               int           // commands the bridge took (ok, superseded, failed)
	bridgeRight, subRight int           // lights whose last command the cloud has / mosquitto_sub printed
	atDelivered           int           // lights the bridge left at the last command the broker delivered to it
	bridgeAck, subAck     string        // times from delivery to acknowledgement, at the taps
	dropWarnings          int           // the bridge's "message dropped" warnings
	loadBefore, loadAfter string
	problems              []string // what makes the run fail
	notes                 []string // what is worth knowing and is no failure
}

func (r floodResult) String() string {
	s := fmt.Sprintf("pace %s: %d commands over %d lights, written in %s; last command: bridge right %d/%d, mosquitto_sub right %d/%d",
		r.pace, r.sent, r.lights, r.writing.Round(time.Millisecond), r.bridgeRight, r.lights, r.subRight, r.lights)
	if r.tapped {
		s += fmt.Sprintf("; delivered to the bridge %d, to mosquitto_sub %d; the bridge took %d commands and ended at the last delivered for %d/%d; "+
			"acknowledged after (p50/p90/p99) bridge %s, mosquitto_sub %s", r.toBridge, r.toSub, r.handled, r.atDelivered, r.lights, r.bridgeAck, r.subAck)
	}
	return s + fmt.Sprintf("; drop warnings %d; load %s → %s", r.dropWarnings, r.loadBefore, r.loadAfter)
}

// TestFloodBesideMosquittoSub floods each pace of -flood.paces
// -flood.runs times and judges the bridge against mosquitto_sub.
func TestFloodBesideMosquittoSub(t *testing.T) {
	if mqtttest.MosquittoPath() == "" {
		t.Fatal("mosquitto is not installed (Debian: apt-get install mosquitto); the mosquitto tag needs it")
	}
	if _, err := exec.LookPath("mosquitto_sub"); err != nil {
		t.Fatal("mosquitto_sub is not installed (Debian: apt-get install mosquitto-clients); the mosquitto tag needs it")
	}
	var results []floodResult
	for p := range strings.SplitSeq(*floodPaces, ",") {
		pace, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || pace < 0 {
			t.Fatalf("-flood.paces: %q is not a number of commands a second (0: as fast as possible)", p)
		}
		for run := 1; run <= *floodRuns; run++ {
			t.Run(fmt.Sprintf("pace=%s/run=%d", paceName(pace), run), func(t *testing.T) {
				r := flood(t, pace)
				t.Log(r)
				results = append(results, r)
				for _, n := range r.notes {
					t.Log(n)
				}
				for _, p := range r.problems {
					t.Error(p)
				}
			})
		}
	}
	for _, r := range results {
		t.Log(r)
	}
}

func paceName(pace int) string {
	if pace == 0 {
		return "max"
	}
	return strconv.Itoa(pace)
}

// floodRig is one flood's world: a cloud of lights, mosquitto at its
// defaults, the bridge binary and mosquitto_sub, each of the two through a
// tap unless -flood.tap=false.
type floodRig struct {
	sim               *cloudsim.Sim
	broker            *mqtttest.Broker
	layout            topic.Layout
	lights            []capability.Device
	watch             *stateWatcher
	d                 *daemon
	bridgeTap, subTap *tap // nil untapped
	sub               *mosquittoSub
	subOut            string
}

func newFloodRig(t *testing.T) *floodRig {
	cat := floodCatalogue(t, *floodLights)
	g := &floodRig{layout: topic.New(baseTopic)}
	for _, d := range cat.Devices {
		g.lights = append(g.lights, d.Device)
	}
	g.sim = cloudsim.New(cloudsim.Options{APIKey: soakKey, Catalogue: cat, LogLimit: 20000})
	cloud := httptest.NewServer(g.sim)
	t.Cleanup(cloud.Close)
	g.broker = mqtttest.Start(t, mqtttest.WithKind(mqtttest.Mosquitto))
	g.watch = newStateWatcher(t, g.broker.URL())
	bridgeAddr, subAddr := g.broker.Addr(), g.broker.Addr()
	if *floodTap {
		g.bridgeTap, g.subTap = newTap(t, g.broker.Addr()), newTap(t, g.broker.Addr())
		bridgeAddr, subAddr = g.bridgeTap.addr(), g.subTap.addr()
	}
	dir := t.ArtifactDir()
	g.d = startDaemon(t, map[string]string{
		"CLOUD_BASE_URL": cloud.URL,
		"CLOUD_API_KEY":  soakKey,
		"MQTT_URL":       "tcp://" + bridgeAddr,
		"MQTT_CLIENT_ID": "flood-bridge",
		"POLL_INTERVAL":  "60s",
		"LOG_LEVEL":      "info",
	}, filepath.Join(dir, "bridge.log"))
	for _, l := range g.lights {
		id := topic.DeviceID(l.SKU, l.Device)
		testkit.WaitFor(t, 30*time.Second, id+"'s first state", func() bool { _, ok := g.watch.last(g.layout.State(id)); return ok })
	}
	g.d.alive()
	g.subOut = filepath.Join(dir, "mosquitto_sub.txt")
	g.sub = startMosquittoSub(t, subAddr, g.layout.Inbound(), g.subOut)
	return g
}

// settle publishes a marker on a topic of no device until the bridge has
// answered it and mosquitto_sub printed it: the broker delivers to each
// client in the order it received, and the bridge handles a
// subscription's messages in order, so each has then taken in everything
// the broker delivered to it before.
func (g *floodRig) settle(t *testing.T, pub *publisher, name string) {
	marker := baseTopic + "/" + name + "/set"
	testkit.WaitFor(t, 60*time.Second, name+" answered by the bridge and printed by mosquitto_sub", func() bool {
		// An id no device has is answered on bridge/error, naming it.
		p, _ := g.watch.last(baseTopic + "/bridge/error")
		if strings.Contains(p, `"device":"`+name+`"`) && fileHas(g.subOut, marker+" {}") {
			return true
		}
		pub.publishOne(t, marker, "{}")
		return false
	})
}

// flood runs one flood with its own cloud, broker, bridge and mosquitto_sub.
func flood(t *testing.T, pace int) floodResult {
	r := floodResult{pace: paceName(pace), race: pace == 0, tapped: *floodTap, lights: *floodLights, sent: *floodCommands, loadBefore: loadAverage()}
	g := newFloodRig(t)
	pub := dialPublisher(t, g.broker.Addr(), "flood-publisher")
	g.settle(t, pub, "flood-start") // both subscribed

	// A unique colour per command: every value names the command it came from.
	msgs := make([]delivery, *floodCommands)
	lastSent := map[string]string{}
	for i := range msgs {
		l := g.lights[i%len(g.lights)]
		msgs[i] = delivery{topic: g.layout.Set(topic.DeviceID(l.SKU, l.Device)), payload: `{"colorRgb":` + strconv.Itoa(i+1) + `}`}
		lastSent[msgs[i].topic] = msgs[i].payload
	}
	r.writing = pub.send(t, msgs, pace)
	g.settle(t, pub, "flood-end")
	g.sub.stop()
	testkit.WaitFor(t, 60*time.Second, "the bridge's commands sent", func() bool {
		m, err := g.d.metrics()
		return err == nil && m["cloud2mqtt_queue_depth"] == 0 && m["cloud2mqtt_in_flight"] == 0
	})

	isFlood := func(topic string) bool { _, ok := lastSent[topic]; return ok }
	printed := readLines(t, g.subOut)
	toSub := lastByTopic(printed)
	r.toSub, r.toBridge = count(printed, isFlood), -1
	var toBridge map[string]string
	if r.tapped {
		delivered := g.bridgeTap.delivered()
		toBridge, r.toBridge = lastByTopic(delivered), count(delivered, isFlood)
		r.bridgeAck, r.subAck = percentiles(g.bridgeTap.ackTimes()), percentiles(g.subTap.ackTimes())
		// The flood's commands only: the settle's markers go out until one
		// is printed, and the last may be delivered but not yet printed when
		// mosquitto_sub is stopped.
		if n := mismatches(only(g.subTap.delivered(), isFlood), only(printed, isFlood)); n > 0 {
			r.problems = append(r.problems, fmt.Sprintf("mosquitto_sub printed %d messages other than those its tap saw delivered: the tap is wrong", n))
		}
		// Every message delivered is one command taken, none twice.
		deadline := time.Now().Add(10 * time.Second)
		for r.handled = g.commandsTaken(t); r.handled < r.toBridge && time.Now().Before(deadline); r.handled = g.commandsTaken(t) {
			time.Sleep(20 * time.Millisecond) // the last reports of superseded commands
		}
		if r.handled != r.toBridge {
			r.problems = append(r.problems, fmt.Sprintf("the broker delivered %d commands to the bridge and it took %d", r.toBridge, r.handled))
		}
		if extra := r.toSub - r.toBridge; float64(extra) > dropMargin*float64(r.sent) {
			r.slower(fmt.Sprintf("the broker dropped %d more of the flood's %d commands for the bridge than for mosquitto_sub (over %.0f %%): the bridge takes messages in slower",
				extra, r.sent, 100*dropMargin))
		}
	}
	var missed []string // lights whose last command mosquitto_sub got and the bridge was not delivered
	for _, l := range g.lights {
		id := topic.DeviceID(l.SKU, l.Device)
		set := g.layout.Set(id)
		cloud, state := g.ended(t, l)
		right := cloud == colorOf(lastSent[set]) && state == cloud
		if right {
			r.bridgeRight++
		}
		if toSub[set] == lastSent[set] {
			r.subRight++
			if !right && (!r.tapped || toBridge[set] != lastSent[set]) { // delivered and lost: a failure below
				missed = append(missed, fmt.Sprintf("%s (sent last %s; the cloud has %d, %s says %d)", id, lastSent[set], cloud, g.layout.State(id), state))
			}
		}
		if r.tapped {
			if want := colorOf(toBridge[set]); cloud == want && state == want {
				r.atDelivered++
			} else {
				r.problems = append(r.problems, fmt.Sprintf("the last command the broker delivered to the bridge for %s was %s; the cloud has %d, %s says %d",
					id, toBridge[set], cloud, g.layout.State(id), state))
			}
		}
	}
	for _, m := range r.judgeMissed(missed) {
		r.slower(m)
	}
	g.d.alive()
	r.dropWarnings = g.d.logs.warned("MQTT queue full; message dropped")
	r.loadAfter = loadAverage()
	return r
}

// dropMargin is how many more of the flood's commands, as a share of
// those sent, the broker may drop for the bridge than for mosquitto_sub:
// two equally fast clients fall a queue behind at different moments and
// lose different messages, so only the counts compare.
const dropMargin = 0.02

// slower records that the bridge took the flood in slower than
// mosquitto_sub: a failure at a pace, only a figure at full speed (pace 0),
// where which subscriber keeps up with mosquitto's queue is a race of
// scheduling on the machine. Losing a delivered command or ending elsewhere
// than at the last one delivered is a failure at every pace.
func (r *floodResult) slower(what string) {
	if r.race {
		r.notes = append(r.notes, "figure, not judged at full speed: "+what)
		return
	}
	r.problems = append(r.problems, what)
}

// judgeMissed judges the lights whose last command mosquitto_sub received
// and the bridge did not end at. Untapped, each is a failure: nothing
// tells whether the broker delivered it. Tapped, the bridge ended at the
// last command delivered to it (checked apart), so the broker did not
// deliver that one: a failure when the broker dropped more for the bridge
// than for mosquitto_sub (the bridge took messages in slower), else the
// broker's choice of what to drop, and reported as such.
func (r *floodResult) judgeMissed(missed []string) []string {
	if len(missed) == 0 {
		return nil
	}
	list := strings.Join(missed, "; ")
	if !r.tapped {
		return []string{"mosquitto_sub received the last command of " + strconv.Itoa(len(missed)) + " lights the bridge did not end at: " + list}
	}
	extra := (r.sent - r.toBridge) - (r.sent - r.toSub)
	if float64(extra) > dropMargin*float64(r.sent) {
		return []string{fmt.Sprintf("mosquitto_sub received the last command of %d lights the broker did not deliver to the bridge, "+
			"and the broker dropped %d more of the flood for the bridge than for mosquitto_sub (over %.0f %%): the bridge takes messages in slower: %s",
			len(missed), extra, 100*dropMargin, list)}
	}
	r.notes = append(r.notes, fmt.Sprintf("the broker did not deliver to the bridge the last command of %d lights that mosquitto_sub received, "+
		"having dropped %d more of the flood for mosquitto_sub than for the bridge: %s", len(missed), -extra, list))
	return nil
}

// commandsTaken is how many commands the bridge has taken: reported
// applied, superseded by a newer one, or failed.
func (g *floodRig) commandsTaken(t *testing.T) int {
	m, err := g.d.metrics()
	if err != nil {
		t.Fatalf("soak: /metrics: %v", err)
	}
	n := 0
	for _, o := range []string{"ok", "superseded", "failed"} {
		n += int(m[`cloud2mqtt_commands_total{outcome="`+o+`"}`])
	}
	return n
}

// ended returns the light's colour in the cloud, once the bridge has sent
// every command, and on <id>/state once that shows it too (or after 10 s).
func (g *floodRig) ended(t *testing.T, l capability.Device) (cloud, state int64) {
	t.Helper()
	v, _ := g.sim.Value(l.Device, capability.InstanceColorRGB)
	cloud, _ = capability.NormalizeValue(v).(int64)
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, _ := g.watch.last(g.layout.State(topic.DeviceID(l.SKU, l.Device)))
		state = colorOf(p)
		if state == cloud || time.Now().After(deadline) {
			return cloud, state
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// percentiles are the 50th, 90th and 99th percentiles of ds.
func percentiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[int(q*float64(len(ds)-1))] }
	return fmt.Sprintf("%s/%s/%s", at(0.5).Round(time.Microsecond), at(0.9).Round(time.Microsecond), at(0.99).Round(time.Microsecond))
}

// colorOf is the colour of a {"colorRgb":N} command; 0 for none.
func colorOf(payload string) int64 {
	var c struct {
		ColorRgb int64 `json:"colorRgb"`
	}
	_ = json.Unmarshal([]byte(payload), &c)
	return c.ColorRgb
}

func lastByTopic(ds []delivery) map[string]string {
	out := map[string]string{}
	for _, d := range ds {
		out[d.topic] = d.payload
	}
	return out
}

// count counts the messages of ds on topics of the flood.
func count(ds []delivery, isFlood func(string) bool) int {
	n := 0
	for _, d := range ds {
		if isFlood(d.topic) {
			n++
		}
	}
	return n
}

// only is the deliveries of the topics keep says to keep.
func only(ds []delivery, keep func(topic string) bool) []delivery {
	var out []delivery
	for _, d := range ds {
		if keep(d.topic) {
			out = append(out, d)
		}
	}
	return out
}

// mismatches counts the differences between what the tap saw delivered to
// mosquitto_sub and what it printed, in order.
func mismatches(tapped, printed []delivery) int {
	n := max(len(tapped), len(printed)) - min(len(tapped), len(printed))
	for i := range min(len(tapped), len(printed)) {
		if tapped[i].topic != printed[i].topic || tapped[i].payload != printed[i].payload {
			n++
		}
	}
	return n
}

// mosquittoSub is the real mosquitto_sub -q 1 -v, its output in a file.
type mosquittoSub struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

func startMosquittoSub(t testing.TB, addr string, filters []string, out string) *mosquittoSub {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(addr)
	args := []string{"-h", host, "-p", port, "-q", "1", "-v", "-i", "flood-mosquitto-sub"}
	if *floodNoDelay {
		args = append(args, "--nodelay")
	}
	for _, filter := range filters {
		args = append(args, "-t", filter)
	}
	cmd := exec.Command("mosquitto_sub", args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("soak: mosquitto_sub: %v", err)
	}
	s := &mosquittoSub{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(s.exited)
	}()
	t.Cleanup(s.stop)
	return s
}

func (s *mosquittoSub) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	<-s.exited
}

// readLines parses mosquitto_sub -v's output: "topic payload" a line.
func readLines(t testing.TB, path string) []delivery {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []delivery
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		topic, payload, _ := strings.Cut(sc.Text(), " ")
		out = append(out, delivery{topic: topic, payload: payload})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func fileHas(path, line string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(b), line+"\n")
}

// warned counts the warnings with this message.
func (l *logCounter) warned(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.messages["warn: "+msg]
}

// loadAverage is the machine's 1-minute load average.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// stateWatcher keeps the last payload of the bridge's state and error
// topics; it subscribes to nothing else, so that the flood reaches only
// the two clients compared.
type stateWatcher struct {
	mu    sync.Mutex
	lasts map[string]string
}

func newStateWatcher(t testing.TB, url string) *stateWatcher {
	t.Helper()
	w := &stateWatcher{lasts: map[string]string{}}
	receive := func(_ paho.Client, m paho.Message) {
		w.mu.Lock()
		w.lasts[m.Topic()] = string(m.Payload())
		w.mu.Unlock()
	}
	opts := paho.NewClientOptions().AddBroker(url).SetClientID("flood-watcher").SetCleanSession(true).SetOrderMatters(true)
	opts.SetOnConnectHandler(func(c paho.Client) {
		c.SubscribeMultiple(map[string]byte{baseTopic + "/+/state": 1, baseTopic + "/+/error": 1}, receive)
	})
	c := paho.NewClient(opts)
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("soak: watcher connect: %v", tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(250) })
	return w
}

func (w *stateWatcher) last(topic string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.lasts[topic]
	return p, ok
}
