package soak

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/mqtttest"
	"cloud2mqtt/internal/topic"
)

const (
	soakKey   = "soak-key-8d2e41c07b"
	baseTopic = "cloud2mqtt"
	haPrefix  = "homeassistant"
)

// generateCatalogue is cloudsim's household of n devices.
func generateCatalogue(t testing.TB, n int) *cloudsim.Catalogue {
	t.Helper()
	c, err := cloudsim.Household(n)
	if err != nil {
		t.Fatalf("soak: %v", err)
	}
	if *sceneFile != "" {
		b, err := os.ReadFile(*sceneFile)
		if err != nil {
			t.Fatalf("soak: -scenes: %v", err)
		}
		if c.DefaultScenes, err = cloudsim.ParseSceneList(b); err != nil {
			t.Fatalf("soak: -scenes %s: %v", *sceneFile, err)
		}
	}
	return c
}

// world is everything around the daemon: the simulated cloud, the broker
// and a client that watches every topic and sends commands.
type world struct {
	t       testing.TB
	sim     *cloudsim.Sim
	cloud   *httptest.Server
	broker  *mqtttest.Broker
	devices []capability.Device
	watch   *watcher
}

func newWorld(t testing.TB, n int) *world {
	t.Helper()
	cat := generateCatalogue(t, n)
	w := &world{t: t}
	for _, d := range cat.Devices {
		w.devices = append(w.devices, d.Device)
	}
	w.sim = cloudsim.New(cloudsim.Options{APIKey: soakKey, Catalogue: cat, LogLimit: 20000})
	w.cloud = httptest.NewServer(w.sim)
	t.Cleanup(w.cloud.Close)
	w.broker = mqtttest.Start(t)
	w.watch = newWatcher(t, w.broker.URL())
	return w
}

// env is the daemon's configuration for this world.
func (w *world) env(poll time.Duration) map[string]string {
	return map[string]string{
		"CLOUD_BASE_URL": w.cloud.URL,
		"CLOUD_API_KEY":  soakKey,
		"MQTT_URL":       w.broker.URL(),
		"MQTT_CLIENT_ID": "soak-bridge",
		"POLL_INTERVAL":  poll.String(),
	}
}

// discoveryTopics are the config topics the daemon must publish: what
// package discovery maps each listed device to.
func (w *world) discoveryTopics() map[string]string {
	layout := topic.New(baseTopic)
	cfg := discovery.Config{Prefix: haPrefix, Layout: layout, Version: "soak", BridgeID: topic.DeviceID("bridge", baseTopic)}
	out := map[string]string{}
	for _, d := range w.devices {
		id := topic.DeviceID(d.SKU, d.Device)
		for t := range discovery.Configs(cfg, d) {
			out[t] = id
		}
	}
	return out
}

// rateLimited is the number of 429s the simulator has answered.
func (w *world) rateLimited() int {
	n := 0
	for _, v := range w.sim.Counts().RateLimited {
		n += v
	}
	return n
}

func (w *world) requests() int {
	c := w.sim.Counts()
	n := 0
	for ep := range c.Requests {
		n += c.Total(ep)
	}
	return n
}

// watcher is an MQTT client subscribed to everything: it notes when each
// topic first arrived and counts error messages.
type watcher struct {
	t     testing.TB
	c     paho.Client
	mu    sync.Mutex
	first map[string]time.Time
	count int
	errs  map[string]int // <id>/error payloads by text
	nErrs int
	bytes int64
	// bridge counts the messages and bytes of each <base>/bridge/... topic.
	bridge map[string][2]int64
}

func newWatcher(t testing.TB, url string) *watcher {
	t.Helper()
	w := &watcher{t: t, first: map[string]time.Time{}, errs: map[string]int{}, bridge: map[string][2]int64{}}
	opts := paho.NewClientOptions().AddBroker(url).SetClientID("soak-watcher").
		SetAutoReconnect(true).SetOrderMatters(false).SetCleanSession(true)
	opts.SetOnConnectHandler(func(c paho.Client) {
		c.Subscribe("#", 0, w.receive)
	})
	w.c = paho.NewClient(opts)
	if tok := w.c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("soak: watcher connect: %v", tok.Error())
	}
	t.Cleanup(func() { w.c.Disconnect(250) })
	return w
}

func (w *watcher) receive(_ paho.Client, m paho.Message) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.count++
	w.bytes += int64(len(m.Payload()))
	if strings.HasPrefix(m.Topic(), baseTopic+"/bridge/") {
		c := w.bridge[m.Topic()]
		w.bridge[m.Topic()] = [2]int64{c[0] + 1, c[1] + int64(len(m.Payload()))}
	}
	if _, ok := w.first[m.Topic()]; !ok && len(m.Payload()) > 0 {
		w.first[m.Topic()] = now
	}
	if strings.HasSuffix(m.Topic(), "/error") {
		w.nErrs++
		if len(w.errs) < 50 {
			w.errs[m.Topic()+" "+string(m.Payload())]++
		}
	}
}

// discovered waits until every topic in want has arrived and returns the
// latest first arrival, or fails with what is missing after timeout.
func (w *watcher) discovered(want map[string]string, timeout time.Duration) time.Time {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		w.mu.Lock()
		var last time.Time
		missing := 0
		var example string
		for t := range want {
			at, ok := w.first[t]
			if !ok {
				missing++
				example = t
				continue
			}
			if at.After(last) {
				last = at
			}
		}
		w.mu.Unlock()
		if missing == 0 {
			return last
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("soak: %d of %d discovery configs not published within %s, e.g. %s", missing, len(want), timeout, example)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// traffic sums up what the watcher received: all messages, and those of
// the bridge's own topics.
func (w *watcher) traffic() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "MQTT received: %d messages, %.1f MB", w.count, float64(w.bytes)/(1<<20))
	var topics []string
	for t := range w.bridge {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		c := w.bridge[t]
		fmt.Fprintf(&b, "\n  %s: %d messages, %.1f MB", t, c[0], float64(c[1])/(1<<20))
	}
	return b.String()
}

// arrived counts the topics of want that have arrived.
func (w *watcher) arrived(want map[string]string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for t := range want {
		if _, ok := w.first[t]; ok {
			n++
		}
	}
	return n
}

func (w *watcher) errors() (int, map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for k, v := range w.errs {
		out[k] = v
	}
	return w.nErrs, out
}

func (w *watcher) publish(topic string, payload []byte) {
	w.t.Helper()
	tok := w.c.Publish(topic, 0, false, payload)
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		w.t.Fatalf("soak: publish %s: %v", topic, tok.Error())
	}
}

// command is one random valid command: the topic <id>/set/<instance> and a
// value that passes capability.Validate for the capability.
type command struct {
	device   capability.Device
	id       string
	instance string
	value    any
}

func (c command) topic() string { return topic.New(baseTopic).SetInstance(c.id, c.instance) }

func (c command) payload() []byte {
	b, _ := json.Marshal(c.value)
	return b
}

// randomCommand picks a controllable capability of a random device and a
// valid value for it: an option, a point of the range, or the definition's
// example. Scene capabilities are left out: their options come from the
// scene endpoints, not the definition.
func randomCommand(rng *rand.Rand, devices []capability.Device) command {
	for {
		d := devices[rng.IntN(len(devices))]
		var caps []capability.Capability
		for _, c := range d.Capabilities {
			if c.Controllable() && c.Instance != capability.InstanceLightScene && c.Instance != capability.InstanceDIYScene && c.Instance != capability.InstanceSnapshot {
				caps = append(caps, c)
			}
		}
		if len(caps) == 0 {
			continue
		}
		c := caps[rng.IntN(len(caps))]
		v, ok := randomValue(rng, c)
		if !ok || capability.Validate(c, v) != nil {
			continue
		}
		return command{device: d, id: topic.DeviceID(d.SKU, d.Device), instance: c.Instance, value: v}
	}
}

func randomValue(rng *rand.Rand, c capability.Capability) (any, bool) {
	p := c.Parameters
	switch {
	case p != nil && len(p.Options) > 0 && p.DataType == capability.DataEnum:
		o := p.Options[rng.IntN(len(p.Options))]
		if o.Value == nil {
			return nil, false
		}
		return o.Value, true
	case p != nil && p.Range != nil && p.DataType == capability.DataInteger:
		r := *p.Range
		steps := (r.Max-r.Min)/r.Step() + 1
		return int64(r.Min + r.Step()*rng.IntN(max(steps, 1))), true
	}
	return capability.Example(c)
}
