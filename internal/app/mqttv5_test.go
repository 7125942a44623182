package app_test

// Home Assistant connects with MQTT 5 while the bridge speaks 3.1.1, so the
// broker between them must carry everything across. These tests put MQTT 5
// clients beside the whole daemon, connecting as Home Assistant does, and check:
//
//   - one running before the bridge gets every config and state live with the
//     retain flag clear, since Home Assistant drops all but one retained message
//     per topic and subscription;
//   - one starting after gets them retained, at the QoS it subscribed at, also
//     with a Receive Maximum;
//   - no message carries a Message Expiry Interval;
//   - a QoS 1 command reaches the cloud and the new state comes back to both;
//   - its birth makes the bridge publish every config again;
//   - the bridge's will puts "offline" on bridge/state at once, retained.
//
// mqttv5_mosquitto_test.go runs the same against mosquitto and its clients.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/app"
	"cloud2mqtt/internal/mqtttest"
	"cloud2mqtt/internal/topic"
)

// v5Home is an MQTT 5 Home Assistant beside the bridge, subscribed to
// haFilters at the QoS it was dialled with.
type v5Home interface {
	// received is every message so far, in order.
	received() []mqtttest.V5Message
	// arrived is signalled after messages arrive.
	arrived() <-chan struct{}
	// publish publishes m (QoS 0 or 1) and returns once the broker took it.
	publish(t *testing.T, m mqtttest.V5Message)
	// sync returns once the broker has handled the client's
	// subscriptions: their retained messages are on their way.
	sync(t *testing.T)
}

// v5Dialer connects an MQTT 5 Home Assistant to url and subscribes it to
// haFilters at qos.
type v5Dialer func(t *testing.T, url, name string, qos byte) v5Home

// haFilters are Home Assistant's subscriptions: its discovery configs
// (one pair per component in Home Assistant, the same topics) and what its
// entities read (one filter per topic in Home Assistant).
var haFilters = []string{"homeassistant/+/+/config", "homeassistant/+/+/+/config", "cloud2mqtt/#"}

// goHome is mqtttest's MQTT 5 client, sending a Receive Maximum of 20
// (libmosquitto's) when it subscribes at QoS 1, none (Home Assistant's)
// at QoS 0.
func goHome(t *testing.T, url, name string, qos byte) v5Home {
	t.Helper()
	o := mqtttest.V5Options{ClientID: name}
	if qos > 0 {
		o.ReceiveMaximum = 20
	}
	c := mqtttest.NewV5(t, url, o)
	c.Subscribe(qos, mqtttest.SubOptions{}, haFilters...)
	return goV5{c}
}

type goV5 struct{ c *mqtttest.V5Client }

func (g goV5) received() []mqtttest.V5Message             { return g.c.Received() }
func (g goV5) arrived() <-chan struct{}                   { return g.c.Arrived() }
func (g goV5) publish(t *testing.T, m mqtttest.V5Message) { t.Helper(); g.c.Publish(m) }
func (g goV5) sync(t *testing.T)                          { t.Helper(); g.c.Sync() }

// TestHomeAssistantV5 runs the checks above through the embedded broker
// (package broker, the bridge behind a proxy that can cut it off) with
// mqtttest's MQTT 5 client.
func TestHomeAssistantV5(t *testing.T) {
	t.Parallel()
	homeAssistantV5(t, mqtttest.Embedded, goHome)
}

// homeAssistantV5 starts a daemon against a kind broker, with MQTT 5 Home
// Assistants dialled by dial beside it, and checks what they get.
func homeAssistantV5(t *testing.T, kind mqtttest.Kind, dial v5Dialer) {
	// A frozen clock: the daemon publishes only what a start and the
	// test's messages make it publish, so that what the clients should
	// have is what the watcher has once the daemon is idle.
	h := startHarness(t, harnessOptions{broker: []mqtttest.Option{mqtttest.WithKind(kind)}, proxy: true, noStart: true, frozen: true})
	url := h.broker.URL()

	early := dial(t, url, "ha-early", 0)
	early.sync(t)
	h.start()
	h.devices()
	h.idle(time.Now().Add(wait), "the bridge's first publishes")
	want := retainedTopics(h, url)

	// Home Assistant running before the bridge: everything live.
	v5Until(t, early, "every retained topic, live, at the early Home Assistant", func(got []mqtttest.V5Message) string {
		return missingTopics(want, got, false)
	})
	for _, m := range early.received() {
		if m.Retain || m.QoS != 0 || m.Expiry != 0 {
			t.Errorf("early Home Assistant got %s %s: want live (retain clear), QoS 0, no expiry", m.Topic, describe(m))
			break
		}
	}

	// Home Assistant starting after the bridge: everything retained on
	// subscribing, at QoS 1.
	late := dial(t, url, "ha-late", 1)
	late.sync(t)
	v5Until(t, late, "every retained topic, retained, at the late Home Assistant", func(got []mqtttest.V5Message) string {
		return missingTopics(want, got, true)
	})
	for _, m := range late.received() {
		if m.QoS != 1 || m.Expiry != 0 {
			t.Errorf("late Home Assistant got %s %s: want QoS 1, no expiry", m.Topic, describe(m))
			break
		}
	}

	homeAssistantCommands(t, h, early, late)

	// Home Assistant's birth (QoS 0, not retained): the bridge publishes
	// every config again, which reach it live.
	from := len(late.received())
	early.publish(t, mqtttest.V5Message{Topic: "homeassistant/status", Payload: "online"})
	configs := map[string]string{}
	for tp, p := range want {
		if strings.HasPrefix(tp, "homeassistant/") {
			configs[tp] = p
		}
	}
	v5Until(t, late, "every config again after Home Assistant's birth", func(got []mqtttest.V5Message) string {
		return missingTopics(configs, got[min(from, len(got)):], false)
	})

	// The bridge's connection dies (cut, and kept from reconnecting).
	h.proxy.SetDown(true)
	h.proxy.Sever()
	for _, c := range []v5Home{early, late} {
		v5Until(t, c, "the bridge's will", func(got []mqtttest.V5Message) string {
			if l := last(got, "cloud2mqtt/bridge/state"); l.Payload != "offline" || l.Retain {
				return "offline (live) on cloud2mqtt/bridge/state, last " + describe(l)
			}
			return ""
		})
	}
	restarted := dial(t, url, "ha-restarted", 1)
	restarted.sync(t)
	v5Until(t, restarted, "the retained will", func(got []mqtttest.V5Message) string {
		if l := last(got, "cloud2mqtt/bridge/state"); l.Payload != "offline" || !l.Retain {
			return "offline retained on cloud2mqtt/bridge/state, last " + describe(l)
		}
		return ""
	})
	h.proxy.SetDown(false)
	for _, c := range []v5Home{early, late, restarted} {
		v5Until(t, c, "the bridge online again", func(got []mqtttest.V5Message) string {
			if l := last(got, "cloud2mqtt/bridge/state"); l.Payload != "online" {
				return "online on cloud2mqtt/bridge/state, last " + describe(l)
			}
			return ""
		})
	}
}

// TestHomeAssistantV5DaemonBroker runs the checks a daemon's own broker
// (MQTT_URL=embedded: the bridge its owner, the packet-size limit) allows:
// a Home Assistant starting after the bridge gets every config and state
// retained, its command reaches the cloud, its birth brings the configs
// again. The bridge runs in the broker's process: its will is never sent
// (TestHomeAssistantV5 checks it through the same broker code).
func TestHomeAssistantV5DaemonBroker(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{broker: []mqtttest.Option{mqtttest.WithKind(mqtttest.Embedded)}, noStart: true, frozen: true,
		env: map[string]string{"MQTT_URL": "embedded", "MQTT_LISTEN": "127.0.0.1:0"}})
	ready := make(chan app.Ready, 1)
	h.main.OnReady = func(r app.Ready) { ready <- r }
	h.start()
	var url string
	select {
	case r := <-ready:
		url = r.BrokerURL
	case <-time.After(wait):
		t.Fatal("the daemon never said where its broker is")
	}
	// The harness's watcher is on a broker the daemon does not use: watch
	// the daemon's.
	h.watch = newFilteredWatcher(t, url, "watcher-daemon-"+strings.ReplaceAll(t.Name(), "/", "-"), "#")
	h.devices()
	h.idle(time.Now().Add(wait), "the bridge's first publishes")
	want := retainedTopics(h, url)

	ha := goHome(t, url, "ha", 1)
	ha.sync(t)
	v5Until(t, ha, "every retained topic, retained", func(got []mqtttest.V5Message) string {
		return missingTopics(want, got, true)
	})
	homeAssistantCommands(t, h, ha)

	from := len(ha.received())
	ha.publish(t, mqtttest.V5Message{Topic: "homeassistant/status", Payload: "online"})
	configs := map[string]string{}
	for tp, p := range want {
		if strings.HasPrefix(tp, "homeassistant/") {
			configs[tp] = p
		}
	}
	v5Until(t, ha, "every config again after Home Assistant's birth", func(got []mqtttest.V5Message) string {
		return missingTopics(configs, got[min(from, len(got)):], false)
	})
}

// homeAssistantCommands sends a light command as Home Assistant's JSON
// light does, at QoS 1, from the first client, to the command topic of
// the first light's config it received: the cloud gets the brightness,
// and the new state reaches every client live.
func homeAssistantCommands(t *testing.T, h *harness, clients ...v5Home) {
	t.Helper()
	var cfg struct {
		CommandTopic string `json:"command_topic"`
		StateTopic   string `json:"state_topic"`
		Scale        int    `json:"brightness_scale"`
	}
	var device string
	for _, m := range clients[0].received() {
		// A light's own entity (its segments are lights too).
		if strings.HasPrefix(m.Topic, "homeassistant/light/") && strings.HasSuffix(m.Topic, "/light/config") && m.Payload != "" {
			if err := json.Unmarshal([]byte(m.Payload), &cfg); err != nil {
				t.Fatalf("light config %s: %v", m.Topic, err)
			}
			device = strings.Split(m.Topic, "/")[2]
			break
		}
	}
	if cfg.CommandTopic == "" || cfg.StateTopic == "" {
		t.Fatalf("no light config with command and state topics among %d messages", len(clients[0].received()))
	}
	sim := ""
	for _, d := range h.sim.Devices() {
		if topic.DeviceID(d.SKU, d.Device) == device {
			sim = d.Device
		}
	}
	if sim == "" {
		t.Fatalf("no simulated device for %s", device)
	}
	brightness := 42
	if cfg.Scale != 0 && cfg.Scale < brightness {
		brightness = cfg.Scale / 2
	}
	before := len(h.sim.ControlLog())
	clients[0].publish(t, mqtttest.V5Message{Topic: cfg.CommandTopic, Payload: fmt.Sprintf(`{"state":"ON","brightness":%d}`, brightness), QoS: 1})
	h.jumpUntil(wait, 100*time.Millisecond, "the light command at the cloud", func() bool {
		for _, c := range h.sim.ControlLog()[before:] {
			if c.Device == sim && c.Instance == "brightness" {
				return true
			}
		}
		return false
	})
	for _, c := range clients {
		v5Until(t, c, "the light's new state", func(got []mqtttest.V5Message) string {
			l := last(got, cfg.StateTopic)
			var st struct {
				State      string `json:"state"`
				Brightness int    `json:"brightness"`
			}
			if json.Unmarshal([]byte(l.Payload), &st) != nil || st.State != "ON" || st.Brightness != brightness || l.Retain {
				return fmt.Sprintf("brightness %d (live) on %s, last %s", brightness, cfg.StateTopic, describe(l))
			}
			return ""
		})
	}
}

// retainedTopics is what the broker at url holds retained under the
// discovery prefix and the base topic once the daemon is idle, as a 3.1.1
// client (the bridge's protocol) gets it on subscribing; every discovery
// config the watcher saw the bridge publish is among it.
func retainedTopics(h *harness, url string) map[string]string {
	h.t.Helper()
	ref := mqtttest.NewClient(h.t, url, mqtttest.ClientOptions{})
	defer ref.Close()
	end := "harness/reference/" + strings.ReplaceAll(h.t.Name(), "/", "-")
	ref.Subscribe("homeassistant/#", 1)
	ref.Subscribe("cloud2mqtt/#", 1)
	ref.Subscribe(end, 1)
	ref.Publish(end, "end", false, 1) // after the subscriptions' retained messages
	out := map[string]string{}
	for _, m := range ref.Until(end, "end", wait) {
		if m.Retained && m.Payload != "" {
			out[m.Topic] = m.Payload
		}
	}
	for tp, p := range h.watch.topics("homeassistant/") {
		if out[tp] != p {
			h.t.Fatalf("the broker holds %.40q retained on %s, the bridge published %.40q", out[tp], tp, p)
		}
	}
	if len(out) < 20 {
		h.t.Fatalf("only %d retained topics: %v", len(out), out)
	}
	return out
}

// missingTopics says which topics of want got lacks with want's payload
// (the last message on each, flagged retained when retained), or "".
func missingTopics(want map[string]string, got []mqtttest.V5Message, retained bool) string {
	lastOf := map[string]mqtttest.V5Message{}
	for _, m := range got {
		if !retained || m.Retain {
			lastOf[m.Topic] = m
		}
	}
	var miss []string
	for tp, p := range want {
		if m, ok := lastOf[tp]; !ok || m.Payload != p {
			miss = append(miss, tp)
		}
	}
	if len(miss) == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d topics, e.g. %s", len(miss), len(want), miss[0])
}

func last(got []mqtttest.V5Message, topic string) mqtttest.V5Message {
	for i := len(got) - 1; i >= 0; i-- {
		if got[i].Topic == topic {
			return got[i]
		}
	}
	return mqtttest.V5Message{}
}

func describe(m mqtttest.V5Message) string {
	if m.Topic == "" {
		return "none"
	}
	return fmt.Sprintf("%.40q (retain %v, QoS %d, expiry %d)", m.Payload, m.Retain, m.QoS, m.Expiry)
}

// v5Until waits until miss (what is missing, "" for nothing) is "" for
// what c received, failing the test with what is missing after wait.
func v5Until(t *testing.T, c v5Home, what string, miss func([]mqtttest.V5Message) string) {
	t.Helper()
	deadline := time.After(wait)
	for {
		m := miss(c.received())
		if m == "" {
			return
		}
		select {
		case <-c.arrived():
		case <-time.After(50 * time.Millisecond): // a message may have arrived before the last look
		case <-deadline:
			t.Fatalf("timed out after %s waiting for %s: missing %s", wait, what, m)
		}
	}
}
