package broker_test

// Home Assistant moves its broker connection to MQTT 5 (3.x deprecated in
// 2026.6, unsupported from 2027.1). The embedded broker,
// set up as the daemon sets it up (the bridge its owner, the packet-size
// limit), must serve an MQTT 5 Home Assistant beside the bridge's 3.1.1
// client as it serves a 3.1.1 one. What Home Assistant's client does is
// the zero value of mqtttest.V5Options and SubOptions (paho-mqtt for
// Python: Clean Start on the first connection only, no Session Expiry
// Interval, no Receive Maximum, No Local and Retain As Published off); it
// subscribes to its discovery configs and the entities' topics and
// publishes commands, its birth and, never disconnecting cleanly, has a
// will.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/rs/zerolog"

	"cloud2mqtt/internal/broker"
	"cloud2mqtt/internal/mqtttest"
)

const bridgeID = "bridge-v5"

// daemonBroker starts the embedded broker with the daemon's options on a
// free loopback port.
func daemonBroker(t *testing.T) *broker.Broker {
	t.Helper()
	b, err := broker.Start(context.Background(), broker.Options{
		Addr:          "127.0.0.1:0",
		MaxPacketSize: broker.DefaultMaxPacketSize,
		Owner: &broker.Owner{ClientID: bridgeID, Reserved: []string{"c2m/#"},
			Open: []string{"c2m/+/set/#", "c2m/+/get/#", "c2m/+/light/set/#", "c2m/+/segment/+/set/#", "c2m/bridge/request/#"}},
		Logger: zerolog.New(testLog{t}).Level(zerolog.WarnLevel),
	})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Logf("broker: %s", strings.TrimSpace(string(p)))
	return len(p), nil
}

// bridge is the bridge's side: a 3.1.1 client with the owner's login, its
// will "offline" retained on c2m/bridge/state, subscribed to the commands
// and Home Assistant's birth topic.
type bridge struct {
	t    *testing.T
	c    paho.Client
	msgs chan mqtttest.Message
}

func dialBridge(t *testing.T, url string, b *broker.Broker) *bridge {
	t.Helper()
	user, pass := b.OwnerLogin()
	br := &bridge{t: t, msgs: make(chan mqtttest.Message, 100)}
	o := paho.NewClientOptions().AddBroker(url).SetClientID(bridgeID).SetUsername(user).SetPassword(pass).
		SetProtocolVersion(4).SetAutoReconnect(false).SetOrderMatters(true).
		SetWill("c2m/bridge/state", "offline", 1, true).
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) {
			br.msgs <- mqtttest.Message{Topic: m.Topic(), Payload: string(m.Payload()), Retained: m.Retained(), QoS: m.Qos()}
		})
	br.c = paho.NewClient(o)
	if tok := br.c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("bridge: connect: %v", tok.Error())
	}
	t.Cleanup(func() { br.c.Disconnect(50) })
	if tok := br.c.SubscribeMultiple(map[string]byte{"c2m/+/set/#": 1, "c2m/+/light/set/#": 1, "homeassistant/status": 1}, nil); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("bridge: subscribe: %v", tok.Error())
	}
	return br
}

// publish publishes at QoS 1, as the bridge does, waiting for the PUBACK.
func (br *bridge) publish(topic, payload string, retained bool) {
	br.t.Helper()
	if tok := br.c.Publish(topic, 1, retained, payload); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		br.t.Fatalf("bridge: publish %s: %v", topic, tok.Error())
	}
}

// settle returns once the broker has forwarded every message the bridge
// published: mochi acknowledges a publish before it forwards it, but
// handles a client's packets in order. Without it, a client subscribing
// right after a retained publish may get the message twice, retained and
// live.
func (br *bridge) settle() {
	br.t.Helper()
	br.publish("sync/bridge", "sync", false)
}

func (br *bridge) next() mqtttest.Message {
	br.t.Helper()
	select {
	case m := <-br.msgs:
		return m
	case <-time.After(5 * time.Second):
		br.t.Fatal("bridge: no message within 5s")
		return mqtttest.Message{}
	}
}

// next is c's next message, failing the test after 5 s.
func next(t *testing.T, c *mqtttest.V5Client, what string) mqtttest.V5Message {
	t.Helper()
	m, ok := c.Next(5 * time.Second)
	if !ok {
		t.Fatalf("%s: no message within 5s (connection: %v)", what, c.Err())
	}
	return m
}

// haFilters are Home Assistant's subscriptions: its discovery configs
// (one filter per component in Home Assistant, the same topics) and the
// topics its entities read.
var haFilters = []string{"homeassistant/+/+/config", "homeassistant/+/+/+/config", "c2m/#"}

func TestHomeAssistantV5(t *testing.T) {
	b := daemonBroker(t)
	proxy := mqtttest.NewProxy(t, b.Addr())
	br := dialBridge(t, proxy.URL(), b)
	retained := map[string]string{
		"homeassistant/light/lamp/light/config": `{"command_topic":"c2m/lamp/light/set"}`,
		"c2m/lamp/state":                        `{"brightness":10}`,
		"c2m/bridge/state":                      "online",
	}
	for tp, p := range retained {
		br.publish(tp, p, true)
	}
	br.settle()

	haWill := &mqtttest.Message{Topic: "homeassistant/status", Payload: "offline"}
	ha := mqtttest.NewV5(t, b.URL(), mqtttest.V5Options{ClientID: "home-assistant", Will: haWill})
	ha.Subscribe(0, mqtttest.SubOptions{}, haFilters...)

	// Every retained message on subscribing, flagged retained, and with
	// no Message Expiry Interval: the bridge gave none.
	for range retained {
		m := next(t, ha, "the retained messages")
		if want, ok := retained[m.Topic]; !ok || m.Payload != want || !m.Retain || m.QoS != 0 || m.Expiry != 0 {
			t.Errorf("on subscribing: %+v, want one of %v, retained, QoS 0, no expiry", m, retained)
		}
	}

	// A change on an established subscription arrives with the retain
	// flag clear (Retain As Published off). Home Assistant takes one
	// retained message per topic and subscription and drops any further
	// one (homeassistant/components/mqtt/client.py, _retained_topics):
	// were the flag kept, it would never see a state change.
	br.publish("c2m/lamp/state", `{"brightness":20}`, true)
	if m := next(t, ha, "the state change"); m != (mqtttest.V5Message{Topic: "c2m/lamp/state", Payload: `{"brightness":20}`}) {
		t.Errorf("state change: %+v, want brightness 20, not retained, QoS 0, no expiry", m)
	}

	// Commands: at QoS 1 acknowledged (PUBACK success), at QoS 0 (Home
	// Assistant's default) too; the bridge gets each at its QoS.
	ha.Publish(mqtttest.V5Message{Topic: "c2m/lamp/set/brightness", Payload: "30", QoS: 1})
	ha.Publish(mqtttest.V5Message{Topic: "c2m/lamp/light/set", Payload: `{"state":"ON"}`})
	for _, want := range []mqtttest.Message{{Topic: "c2m/lamp/set/brightness", Payload: "30", QoS: 1}, {Topic: "c2m/lamp/light/set", Payload: `{"state":"ON"}`}} {
		if m := br.next(); m != want {
			t.Errorf("the bridge got %+v, want %+v", m, want)
		}
	}

	// Home Assistant's birth reaches the bridge (which then publishes
	// every config again).
	ha.Publish(mqtttest.V5Message{Topic: "homeassistant/status", Payload: "online", QoS: 1})
	if m := br.next(); m.Topic != "homeassistant/status" || m.Payload != "online" {
		t.Errorf("the bridge got %+v, want Home Assistant's birth", m)
	}

	// Home Assistant stops without a DISCONNECT: its will reaches the
	// bridge. It comes back as paho-mqtt reconnects (Clean Start off, no
	// Session Expiry Interval): the broker kept no session, and the
	// retained messages come again on subscribing, flagged retained.
	ha.Drop()
	if m := br.next(); m.Topic != haWill.Topic || m.Payload != haWill.Payload {
		t.Errorf("the bridge got %+v, want Home Assistant's will", m)
	}
	waitGone(t, b, "home-assistant")
	ha = mqtttest.NewV5(t, b.URL(), mqtttest.V5Options{ClientID: "home-assistant", Resume: true, Will: haWill})
	if ha.SessionPresent {
		t.Error("Home Assistant's session (no Session Expiry Interval) outlived its connection")
	}
	ha.Subscribe(0, mqtttest.SubOptions{}, haFilters...)
	for range retained {
		if m := next(t, ha, "the retained messages after the reconnection"); !m.Retain {
			t.Errorf("after the reconnection: %+v, want it retained", m)
		}
	}

	// The bridge's connection dies: its will reaches Home Assistant at
	// once (a live message: retain flag clear), and a Home Assistant that
	// starts meanwhile finds it retained.
	proxy.SetDown(true)
	proxy.Sever()
	if m := next(t, ha, "the bridge's will"); m != (mqtttest.V5Message{Topic: "c2m/bridge/state", Payload: "offline"}) {
		t.Errorf("will: %+v, want offline on c2m/bridge/state, not retained", m)
	}
	late := mqtttest.NewV5(t, b.URL(), mqtttest.V5Options{})
	late.Subscribe(1, mqtttest.SubOptions{}, "c2m/bridge/state")
	if m := next(t, late, "the retained will"); m != (mqtttest.V5Message{Topic: "c2m/bridge/state", Payload: "offline", QoS: 1, Retain: true}) {
		t.Errorf("a later subscriber got %+v, want the will retained at QoS 1", m)
	}
}

// The subscription options Home Assistant leaves off work when asked for:
// Retain As Published keeps the flag of a live retained message, No Local
// holds back the client's own messages.
func TestV5SubscriptionOptions(t *testing.T) {
	b := daemonBroker(t)
	br := dialBridge(t, b.URL(), b)
	c := mqtttest.NewV5(t, b.URL(), mqtttest.V5Options{})
	c.Subscribe(1, mqtttest.SubOptions{RetainAsPublished: true}, "c2m/+/state")
	c.Subscribe(1, mqtttest.SubOptions{NoLocal: true}, "echo/#")
	c.Subscribe(1, mqtttest.SubOptions{}, "marker")
	br.publish("c2m/lamp/state", "on", true)
	if m := next(t, c, "the state"); m != (mqtttest.V5Message{Topic: "c2m/lamp/state", Payload: "on", QoS: 1, Retain: true}) {
		t.Errorf("with Retain As Published: %+v, want it retained", m)
	}
	// The broker forwards one client's messages in order: the marker
	// after the echo that must not come.
	c.Publish(mqtttest.V5Message{Topic: "echo/x", Payload: "mine", QoS: 1})
	c.Publish(mqtttest.V5Message{Topic: "marker", Payload: "after", QoS: 1})
	if m := next(t, c, "the marker"); m.Topic != "marker" {
		t.Errorf("with No Local: got %+v before the marker", m)
	}
}

// A session with a Session Expiry Interval outlives its connection: the
// QoS 1 messages published meanwhile arrive when the client resumes it.
func TestV5SessionExpiry(t *testing.T) {
	b := daemonBroker(t)
	br := dialBridge(t, b.URL(), b)
	o := mqtttest.V5Options{ClientID: "keeper", SessionExpiry: 300}
	c := mqtttest.NewV5(t, b.URL(), o)
	c.Subscribe(1, mqtttest.SubOptions{}, "c2m/+/state")
	c.Drop()
	br.publish("c2m/lamp/state", "while away", false)
	o.Resume = true
	c = mqtttest.NewV5(t, b.URL(), o)
	if !c.SessionPresent {
		t.Error("the session with a Session Expiry Interval of 300 s was not kept")
	}
	if m := next(t, c, "the message queued for the session"); m != (mqtttest.V5Message{Topic: "c2m/lamp/state", Payload: "while away", QoS: 1}) {
		t.Errorf("resumed session got %+v", m)
	}
}

// A client that sends a Receive Maximum (libmosquitto's send 20) gets every
// retained config on subscribing at QoS 1, and what comes after (v5.go).
func TestV5ReceiveMaximum(t *testing.T) {
	b := daemonBroker(t)
	br := dialBridge(t, b.URL(), b)
	const configs = 150 // about the demo household's
	for i := range configs {
		br.publish(fmt.Sprintf("homeassistant/sensor/d%d/x/config", i), fmt.Sprint(i), true)
	}
	br.settle()
	c := mqtttest.NewV5(t, b.URL(), mqtttest.V5Options{ReceiveMaximum: 20})
	c.Subscribe(1, mqtttest.SubOptions{}, haFilters...)
	for i := range configs {
		m, ok := c.Next(5 * time.Second)
		if !ok {
			t.Fatalf("got %d of the %d retained configs (connection: %v)", i, configs, c.Err())
		}
		if !m.Retain || m.QoS != 1 {
			t.Fatalf("config %+v: want it retained at QoS 1", m)
		}
	}
	br.publish("homeassistant/sensor/d0/x/config", "changed", true)
	if m := next(t, c, "a change after the burst"); m.Payload != "changed" {
		t.Errorf("after the burst: %+v, want the change", m)
	}
}

// A retained message stays until it is replaced, however old: the bridge
// publishes bridge/state "online" once per connection, and every entity's
// availability needs it. An MQTT 5 publisher's Message Expiry Interval is
// kept: it reaches the subscribers, and the retained copy goes once it
// passed.
func TestRetainedMessagesDoNotExpire(t *testing.T) {
	b := daemonBroker(t)
	b.RetainSince("c2m/bridge/state", "online", time.Now().Add(-48*time.Hour))
	sub := mqtttest.NewV5(t, b.URL(), mqtttest.V5Options{})
	sub.Subscribe(1, mqtttest.SubOptions{}, "other/#")
	pub := mqtttest.NewV5(t, b.URL(), mqtttest.V5Options{})
	pub.Publish(mqtttest.V5Message{Topic: "other/short-lived", Payload: "x", QoS: 1, Retain: true, Expiry: 1})
	if m := next(t, sub, "the expiring message"); m.Topic != "other/short-lived" || m.Expiry == 0 || m.Expiry > 1 {
		t.Errorf("got %+v, want the message with its expiry interval (1 s)", m)
	}
	// mochi looks for expired messages every second: once the short-lived
	// one is gone, it has looked at the old one too.
	deadline := time.Now().Add(10 * time.Second)
	for b.HasRetained("other/short-lived") {
		if time.Now().After(deadline) {
			t.Fatal("the message whose expiry interval passed is still retained after 10s")
		}
		time.Sleep(20 * time.Millisecond) // polling the broker, bounded by the deadline
	}
	late := mqtttest.NewV5(t, b.URL(), mqtttest.V5Options{})
	late.Subscribe(1, mqtttest.SubOptions{}, "c2m/bridge/state")
	if m := next(t, late, "the two-day-old retained message"); m != (mqtttest.V5Message{Topic: "c2m/bridge/state", Payload: "online", QoS: 1, Retain: true}) {
		t.Errorf("got %+v, want the retained online, without an expiry", m)
	}
}

// waitGone waits until the broker dropped the client (a session without a
// Session Expiry Interval ends with its connection).
func waitGone(t *testing.T, b *broker.Broker, id string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for b.HasClient(id) {
		if time.Now().After(deadline) {
			t.Fatalf("the broker still holds client %s 5s after its connection ended", id)
		}
		time.Sleep(5 * time.Millisecond) // polling the broker, bounded by the deadline
	}
}

// Subscriptions made while the bridge publishes retained messages, and
// while a will is stored: each subscriber gets every retained topic, with
// no race reported in mochi's retained index (retained.go).
func TestRetainedWhileSubscribing(t *testing.T) {
	b := daemonBroker(t)
	br := dialBridge(t, b.URL(), b)
	const topics = 20
	for i := range topics {
		br.publish(fmt.Sprintf("c2m/d%d/state", i), "0", true)
	}
	br.settle()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for round := 1; round <= 10; round++ {
			for i := range topics {
				if tok := br.c.Publish(fmt.Sprintf("c2m/d%d/state", i), 1, true, fmt.Sprint(round)); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
					t.Errorf("bridge: publish: %v", tok.Error())
					return
				}
			}
		}
	}()
	for range 10 {
		w := mqtttest.NewV5(t, b.URL(), mqtttest.V5Options{Will: &mqtttest.Message{Topic: "other/will", Payload: "gone", Retained: true}})
		w.Subscribe(1, mqtttest.SubOptions{}, "c2m/#", "other/#")
		w.Sync()
		seen := map[string]bool{}
		for _, m := range w.Received() {
			if m.Retain {
				seen[m.Topic] = true
			}
		}
		for len(seen) < topics {
			m := next(t, w, "the retained states")
			if m.Retain {
				seen[m.Topic] = true
			}
		}
		w.Drop() // its will is stored while the next one subscribes
	}
	<-done
}

// A client's next subscription while the retained messages of its last
// are in flight (not yet acknowledged: Home Assistant subscribes in
// batches as its configs arrive) is granted, whatever its packet id
// (packetid.go).
func TestSubscribeWhileRetainedInFlight(t *testing.T) {
	b := daemonBroker(t)
	br := dialBridge(t, b.URL(), b)
	for i := range 5 {
		br.publish(fmt.Sprintf("c2m/d%d/state", i), "on", true)
	}
	br.settle()
	c := mqtttest.NewV5(t, b.URL(), mqtttest.V5Options{HoldAcks: true})
	c.Subscribe(1, mqtttest.SubOptions{}, "c2m/+/state") // packet id 1; the retained messages 1 to 5
	for range 5 {
		next(t, c, "the retained states")
	}
	c.Subscribe(1, mqtttest.SubOptions{}, "c2m/+/availability") // packet id 2, in flight the other way
	c.Subscribe(1, mqtttest.SubOptions{}, "other/#")            // 3
	br.publish("c2m/d9/availability", "online", false)
	if m := next(t, c, "a message of the later subscription"); m.Topic != "c2m/d9/availability" {
		t.Errorf("got %+v, want the availability", m)
	}
}
