package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/rs/zerolog"

	"cloud2mqtt/internal/app"
	"cloud2mqtt/internal/clock/clocktest"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/logging"
	"cloud2mqtt/internal/mqtttest"
)

// harness is one whole daemon started in-process against a test broker and
// a simulated cloud, with a watcher subscribed to everything.
type harness struct {
	t      *testing.T
	broker *mqtttest.Broker
	// proxy is between the bridge and the broker with harnessOptions.proxy,
	// so a test can cut the bridge off while the broker stays up.
	proxy  *mqtttest.Proxy
	sim    *cloudsim.Sim
	cloud  *httptest.Server
	main   *app.Main
	watch  *watcher
	logs   *mqtttest.SyncBuffer
	cancel context.CancelFunc
	done   chan error
	// clock is the time of every daemon h starts and of the simulated
	// cloud (its buckets, its log): it runs with the system's time, and a
	// test jumps it over an interval, a hold-off or a delay (jumpUntil),
	// once the daemon has no work in hand by its own account (idle).
	clock *clocktest.Clock
}

type harnessOptions struct {
	env     map[string]string
	sim     cloudsim.Options
	broker  []mqtttest.Option
	noStart bool
	// proxy connects the bridge to the broker through an mqtttest.Proxy.
	proxy bool
	// frozen stops the clock (clocktest.NewFrozen): only the test's jumps
	// move it. What happens then needed no time to pass on it.
	frozen bool
	// watch is the watcher's topic filter (default "#"): a thousand
	// devices' discovery configs to a watcher that takes everything, on a
	// busy machine, overflow the broker's queue for it (mosquitto drops
	// what is beyond 1000 messages).
	watch string
}

const testKey = "test-key-5f3a9c1e77"

func startHarness(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	// The daemon's day starts at local midnight (requests_today, a day's
	// quota): the clock starts at today's noon, so that the minutes a test
	// jumps never cross one, whenever it runs.
	y, mo, d := time.Now().Date()
	noon := time.Date(y, mo, d, 12, 0, 0, 0, time.Local)
	h := &harness{t: t, logs: &mqtttest.SyncBuffer{}, clock: clocktest.NewAt(noon)}
	if o.frozen {
		h.clock = clocktest.NewFrozen(noon)
	}
	h.broker = mqtttest.Start(t, o.broker...)
	mqttURL := h.broker.URL()
	if o.proxy {
		h.proxy = mqtttest.NewProxy(t, h.broker.Addr())
		mqttURL = h.proxy.URL()
	}
	if o.sim.APIKey == "" {
		o.sim.APIKey = testKey
	}
	if o.sim.Now == nil {
		o.sim.Now = h.clock.Now
	}
	h.sim = cloudsim.New(o.sim)
	h.cloud = httptest.NewServer(h.sim)
	t.Cleanup(h.cloud.Close)

	env := map[string]string{
		"CLOUD_BASE_URL": h.cloud.URL,
		"CLOUD_API_KEY":  o.sim.APIKey,
		"MQTT_URL":       mqttURL,
		"MQTT_CLIENT_ID": fmt.Sprintf("bridge-%s", strings.ReplaceAll(t.Name(), "/", "-")),
		"LOG_LEVEL":      "debug",
		"POLL_INTERVAL":  "2s",
	}
	for k, v := range o.env {
		env[k] = v
	}
	cfg, err := config.Load(env)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	t.Cleanup(func() {
		// DEBUG_LOG_DIR, when set, receives every daemon's whole log.
		if dir := os.Getenv("DEBUG_LOG_DIR"); dir != "" {
			_ = os.WriteFile(filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "-")+".log"), []byte(h.logs.String()), 0o600)
		}
		if t.Failed() {
			lines := strings.Split(strings.TrimSpace(h.logs.String()), "\n")
			t.Logf("the daemon's last %d log lines:\n%s", min(len(lines), 150), strings.Join(lines[max(0, len(lines)-150):], "\n"))
		}
	})
	if o.watch == "" {
		o.watch = "#"
	}
	h.watch = newFilteredWatcher(t, h.broker.URL(), "watcher-"+strings.ReplaceAll(t.Name(), "/", "-"), o.watch)
	h.main = h.newMain(cfg)
	t.Cleanup(h.noFormatArtefacts) // after the daemon stopped (heldreads_test.go)
	if !o.noStart {
		h.start()
	}
	return h
}

// newMain is a daemon on h's clock logging to h.logs, with its warnings
// and errors forwarded to bridge/logging as cmd/bridge does.
func (h *harness) newMain(cfg config.Config) *app.Main {
	forward := logging.NewForwarder()
	log := zerolog.New(zerolog.MultiLevelWriter(h.logs, forward)).With().Timestamp().Logger()
	return &app.Main{Config: cfg, Version: "test", Log: log, LogForward: forward, Clock: h.clock}
}

func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.main.Run(ctx) }()
	h.t.Cleanup(h.stop)
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	if err := h.main.WaitReady(wctx); err != nil {
		h.t.Fatalf("bridge not ready: %v\nlogs:\n%s", err, h.logs.String())
	}
}

// stop shuts the daemon down and checks it exits cleanly.
func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("bridge exited with %v", err)
		}
	case <-time.After(10 * time.Second):
		h.t.Errorf("bridge did not stop within 10s")
	}
}

// publish sends a message as a user would. When the bridge is connected
// and subscribes to the topic, it returns once the bridge has taken the
// message in, so that a jump after it finds the message in hand.
func (h *harness) publish(topic, payload string) {
	h.t.Helper()
	takes, before := h.main.Takes(topic)
	if p, _ := h.watch.get("cloud2mqtt/bridge/state"); p != "online" {
		takes = false // cut off: the broker keeps the message for later
	}
	tok := h.watch.c.Publish(topic, 1, false, payload)
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		h.t.Fatalf("publish %s: %v", topic, tok.Error())
	}
	if !takes {
		return
	}
	deadline := time.Now().Add(wait)
	for {
		if _, n := h.main.Takes(topic); n > before {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out after %s waiting for the bridge to take in %s", wait, topic)
		}
		time.Sleep(5 * time.Millisecond) // polling a counter, bounded by the deadline
	}
}

// watcher keeps the last message of every topic and every message in order.
type watcher struct {
	t  *testing.T
	id string
	c  paho.Client
	mu sync.Mutex
	// last payload per topic; a deleted retained topic maps to "".
	last  map[string]string
	count map[string]int
	all   []msg
	cond  chan struct{}
	// barriers are the watcher's own messages on barrierTopic, back
	// from the broker (sync).
	barriers chan string
	nextBar  atomic.Int64
}

// barrierTopic is where a watcher sends itself a message to know that
// whatever the broker took before has reached it (sync).
const barrierTopic = "harness/barrier"

type msg struct{ topic, payload string }

func newWatcher(t *testing.T, url string, b *mqtttest.Broker) *watcher {
	return newNamedWatcher(t, url, "watcher-"+strings.ReplaceAll(t.Name(), "/", "-"))
}

// newNamedWatcher is a watcher with its own client id, for a second,
// fresh subscriber beside the harness's.
func newNamedWatcher(t *testing.T, url, clientID string) *watcher {
	return newFilteredWatcher(t, url, clientID, "#")
}

// newFilteredWatcher is a watcher of the topics of filter.
func newFilteredWatcher(t *testing.T, url, clientID, filter string) *watcher {
	w := &watcher{t: t, last: map[string]string{}, count: map[string]int{}, cond: make(chan struct{}, 1), barriers: make(chan string, 16)}
	opts := paho.NewClientOptions().AddBroker(url).SetClientID(clientID).
		SetAutoReconnect(true).SetConnectRetry(true).SetConnectRetryInterval(100 * time.Millisecond).
		SetMaxReconnectInterval(200 * time.Millisecond).SetOrderMatters(true)
	opts.SetOnConnectHandler(func(c paho.Client) {
		c.Subscribe(barrierTopic+"/"+clientID, 0, func(_ paho.Client, m paho.Message) { w.barriers <- string(m.Payload()) })
		c.Subscribe(filter, 1, func(_ paho.Client, m paho.Message) {
			if strings.HasPrefix(m.Topic(), barrierTopic+"/") {
				return
			}
			w.mu.Lock()
			w.last[m.Topic()] = string(m.Payload())
			w.count[m.Topic()]++
			w.all = append(w.all, msg{m.Topic(), string(m.Payload())})
			w.mu.Unlock()
			select {
			case w.cond <- struct{}{}:
			default:
			}
		})
	})
	w.id = clientID
	w.c = paho.NewClient(opts)
	if tok := w.c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("watcher: %v", tok.Error())
	}
	t.Cleanup(func() { w.c.Disconnect(100) })
	return w
}

// get returns the last payload of a topic.
func (w *watcher) get(topic string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.last[topic]
	return p, ok
}

func (w *watcher) seen(topic string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count[topic]
}

// topics returns the topics whose last payload is not empty, by prefix.
func (w *watcher) topics(prefix string) map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]string{}
	for t, p := range w.last {
		if strings.HasPrefix(t, prefix) && p != "" {
			out[t] = p
		}
	}
	return out
}

// messages returns every message so far.
func (w *watcher) messages() []msg {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]msg(nil), w.all...)
}

// until waits for cond, failing the test with what describes the miss.
func (w *watcher) until(timeout time.Duration, what string, cond func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			w.t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-w.cond:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// jumpUntil waits for cond, jumping the daemon's clock by step whenever the
// daemon is idle, so that reads, retries and hold-offs happen at once instead of
// after their real duration. Idle means the daemon has no work in hand and the
// watcher has every message the broker took (sync), so a jump never cuts short
// what the last one set off, however slow the machine.
func (h *harness) jumpUntil(timeout, step time.Duration, what string, cond func() bool) {
	h.t.Helper()
	start := time.Now()
	deadline, guard := start.Add(timeout), start.Add(jumpGuard)
	// The clock goes at most as far as the old quiet windows let it in
	// timeout (a jump per jumpPace); then the test waits for what takes
	// real time (a reconnection), jumping no further.
	limit := step * time.Duration(timeout/jumpPace)
	var jumped time.Duration
	for {
		h.idle(guard, what)
		if cond() {
			return
		}
		now := time.Now()
		if jumped >= limit && now.After(deadline) || now.After(guard) {
			h.t.Fatalf("timed out after %s (the clock jumping %s at a time, %s in this wait, %s in all) waiting for %s",
				now.Sub(start).Round(time.Millisecond), step, jumped, h.jumped(), what)
		}
		if jumped >= limit {
			select {
			case <-h.watch.cond:
			case <-time.After(50 * time.Millisecond): // polling cond, bounded by the deadline
			}
			continue
		}
		h.clock.Advance(step)
		jumped += step
	}
}

// jumpPace is how often the harness's quiet windows let the clock jump at
// most; jumpGuard the longest any jumpUntil waits, however slow the machine.
const (
	jumpPace  = 25 * time.Millisecond
	jumpGuard = 5 * time.Minute
)

// idle waits until the daemon has no work in hand and the watcher has caught
// up, failing at deadline with what is still in hand.
func (h *harness) idle(deadline time.Time, what string) {
	h.t.Helper()
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := h.clock.WaitIdle(ctx); err != nil {
		h.t.Fatalf("waiting for %s (the clock jumped %s in all): the daemon never went idle: %v", what, h.jumped(), err)
	}
	h.watch.sync(deadline)
}

// sync returns once the watcher has received a message it sent itself; the
// broker delivers in order, so everything before it has arrived too. QoS 0,
// because paho races on a QoS 1 message it resends (eclipse-paho/paho.mqtt.golang#703).
// While the watcher is not connected there is nothing to wait for.
func (w *watcher) sync(deadline time.Time) {
	w.t.Helper()
	if !w.c.IsConnectionOpen() {
		return
	}
	id := strconv.FormatInt(w.nextBar.Add(1), 10)
	tok := w.c.Publish(barrierTopic+"/"+w.id, 0, false, id)
	if !tok.WaitTimeout(time.Until(deadline)) || tok.Error() != nil {
		return // the connection dropped: the test sees what it sees
	}
	for {
		select {
		case got := <-w.barriers:
			if got == id {
				return
			}
		case <-time.After(time.Until(deadline)):
			w.t.Fatalf("the watcher's own message %s did not come back from the broker", id)
		}
	}
}

// jumpStats waits for bridge/stats to satisfy cond, jumping the clock a
// second at a time: the stats follow a change at the read grid's first
// instant a second or more after it (background.go).
func (h *harness) jumpStats(cond func(map[string]any) bool) map[string]any {
	h.t.Helper()
	var got map[string]any
	h.jumpUntil(wait, time.Second, "a matching payload on cloud2mqtt/bridge/stats", func() bool {
		p, _ := h.watch.get("cloud2mqtt/bridge/stats")
		got = nil
		return json.Unmarshal([]byte(p), &got) == nil && cond(got)
	})
	return got
}

// waitCommands waits until the cloud applied every acknowledged command.
func (h *harness) waitCommands(what string, cmds []command) {
	h.t.Helper()
	h.waitCommandsJumping(0, what, cmds)
}

// notSuperseded leaves out of cmds those the daemon says a newer command
// for the same device and setting replaced before they were sent (the
// scheduler's latest-wins: a backlog the broker kept for the bridge while
// it was away arrives at once): they never reach the cloud by design, and
// the newer one is in cmds too.
func (h *harness) notSuperseded(cmds []command) []command {
	var out []command
	for _, c := range cmds {
		v, err := json.Marshal(c.value)
		if err != nil {
			h.t.Fatalf("command value %v: %v", c.value, err)
		}
		said := false
		for _, l := range strings.Split(h.logs.String(), "\n") {
			if strings.Contains(l, "command superseded") && strings.Contains(l, "/"+c.device+`"`) &&
				strings.Contains(l, `"instance":"`+c.instance+`","value":`+string(v)+`,`) {
				said = true
				break
			}
		}
		if !said {
			out = append(out, c)
		}
	}
	return out
}

// waitCommandsJumping is waitCommands jumping the daemon's clock by step
// (jumpUntil) while commands are missing; 0 does not jump.
func (h *harness) waitCommandsJumping(step time.Duration, what string, cmds []command) {
	h.t.Helper()
	var left []command
	cond := func() bool { left = h.notSuperseded(missing(h.sim, cmds, commandKey)); return len(left) == 0 }
	if step > 0 {
		h.jumpUntil(faultWait, step, what, cond)
		return
	}
	deadline := time.Now().Add(faultWait)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out after %s waiting for %s: %d of %d commands never reached the cloud, the first %+v",
				faultWait, what, len(left), len(cmds), left[0])
		}
		time.Sleep(50 * time.Millisecond) // polling the simulator, not waiting for an outcome
	}
}

// availabilityJumping is availability, jumping the daemon's clock by step
// (jumpUntil) while a device has another.
func (h *harness) availabilityJumping(step time.Duration, want string, ids ...string) {
	h.t.Helper()
	for _, id := range ids {
		h.jumpUntil(faultWait, step, id+" availability "+want, func() bool {
			p, _ := h.watch.get("cloud2mqtt/" + id + "/availability")
			return p == want
		})
	}
}

// jumped is how far the test has jumped h's clock.
func (h *harness) jumped() time.Duration { return h.clock.Advanced() }

// waitJSON waits for the topic's last payload to be JSON satisfying cond.
func (w *watcher) waitJSON(timeout time.Duration, topic string, cond func(map[string]any) bool) map[string]any {
	w.t.Helper()
	var got map[string]any
	w.until(timeout, "a matching payload on "+topic, func() bool {
		p, ok := w.get(topic)
		if !ok || p == "" {
			return false
		}
		got = nil
		if json.Unmarshal([]byte(p), &got) != nil {
			return false
		}
		return cond(got)
	})
	return got
}

// logLines returns the daemon's log lines (zerolog JSON) that keep says to.
func (h *harness) logLines(keep func(line map[string]any) bool) []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(h.logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		if keep(m) {
			out = append(out, m)
		}
	}
	return out
}

// firstDevices is the demo catalogue cut to its first n devices (the first
// three are lights), so that a test polls few devices.
func firstDevices(n int) *cloudsim.Catalogue {
	c := cloudsim.DemoCatalogue()
	c.Devices = c.Devices[:n]
	return c
}
