//go:build mosquitto

package mosquitto

import (
	"path/filepath"
	"testing"
	"time"

	"cloud2mqtt/internal/mqtttest"
)

// Needs mosquitto: -tags mosquitto, which .ci/run sets.

const (
	bridgePass = "bridge-pass-7f1c"
	haPass     = "ha-pass-2b9e"
	otherPass  = "other-pass-51d0"
	wait       = 5 * time.Second
)

// startACL is mosquitto with cloud2mqtt.acl and the users of its examples
// (the bridge's, Home Assistant's, another app's), anonymous clients let in.
func startACL(t *testing.T) *mqtttest.Broker {
	t.Helper()
	if mqtttest.MosquittoPath() == "" {
		t.Fatal("mosquitto is not installed (Debian: apt-get install mosquitto); the mosquitto tag needs it")
	}
	acl, err := filepath.Abs(aclFile)
	if err != nil {
		t.Fatal(err)
	}
	return mqtttest.Start(t, mqtttest.WithKind(mqtttest.Mosquitto),
		mqtttest.WithACL(acl, map[string]string{"cloud2mqtt": bridgePass, "homeassistant": haPass, "zigbee2mqtt": otherPass}))
}

// the bridge's retained values, as it publishes them.
var truth = map[string]string{
	"cloud2mqtt/bridge/state":                   "online",
	"cloud2mqtt/h6072_aa/availability":          "online",
	"cloud2mqtt/h6072_aa/state":                 `{"online":true,"brightness":40}`,
	"homeassistant/light/h6072_aa/light/config": `{"name":null}`,
}

// TestMosquittoKeepsTheBridgesTopics is issue 40 §4's attack on mosquitto
// with cloud2mqtt.acl: an anonymous client, another app's user and Home
// Assistant's each publish a retained bridge/state "offline", a device's
// availability "offline" and a false state, at QoS 0 and 1. mosquitto
// drops them all: a fresh subscriber sees the bridge's values. Anonymous
// clients and Home Assistant may still send commands and requests, which
// reach the bridge's user, and a wrong password for the bridge's user is
// refused.
func TestMosquittoKeepsTheBridgesTopics(t *testing.T) {
	b := startACL(t)
	bridge := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{ClientID: "bridge", Username: "cloud2mqtt", Password: bridgePass})
	bridge.Subscribe("cloud2mqtt/+/set/#", 1)
	bridge.Subscribe("cloud2mqtt/bridge/request/#", 1)
	for tp, p := range truth {
		bridge.Publish(tp, p, true, 1)
	}

	if _, err := mqtttest.DialClient(t, b.URL(), mqtttest.ClientOptions{Username: "cloud2mqtt", Password: "guess", NoRetry: true}); err == nil {
		t.Errorf("a client with the bridge's user name and a wrong password connected")
	}
	for name, o := range map[string]mqtttest.ClientOptions{
		"anonymous":      {},
		"another app":    {Username: "zigbee2mqtt", Password: otherPass}, // granted nothing of the bridge's
		"home assistant": {Username: "homeassistant", Password: haPass},
	} {
		c := mqtttest.NewClient(t, b.URL(), o)
		for _, tp := range []string{"cloud2mqtt/bridge/state", "cloud2mqtt/h6072_aa/availability", "cloud2mqtt/h6072_aa/state"} {
			c.Publish(tp, "offline", true, 0)
			c.Publish(tp, "offline", true, 1) // acknowledged after the QoS 0 one was handled
		}
		for _, tp := range []string{"cloud2mqtt/h6072_aa/set/brightness", "cloud2mqtt/h6072_aa/set", "cloud2mqtt/bridge/request/health"} {
			if o.Username == "zigbee2mqtt" {
				break
			}
			c.Publish(tp, name, false, 1)
			bridge.WaitFor(tp, name, wait)
		}
		c.Close()
	}
	expectTruth(t, b)
}

// TestMosquittoRefusesAWillOnTheBridgesTopics: a client that leaves a will
// on bridge/state and drops its connection: the will does not land. (A
// second client's will on a command topic, cut after it, shows mosquitto
// has handled both drops.)
func TestMosquittoRefusesAWillOnTheBridgesTopics(t *testing.T) {
	b := startACL(t)
	bridge := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{ClientID: "bridge", Username: "cloud2mqtt", Password: bridgePass})
	bridge.Subscribe("cloud2mqtt/+/set/#", 1)
	for tp, p := range truth {
		bridge.Publish(tp, p, true, 1)
	}
	spoofer, witness := mqtttest.NewProxy(t, b.Addr()), mqtttest.NewProxy(t, b.Addr())
	_, err := mqtttest.DialClient(t, spoofer.URL(), mqtttest.ClientOptions{
		Will: &mqtttest.Message{Topic: "cloud2mqtt/bridge/state", Payload: "offline", Retained: true, QoS: 1}})
	if err != nil {
		t.Logf("the spoofer's connection was refused: %v", err) // as good
	}
	mqtttest.NewClient(t, witness.URL(), mqtttest.ClientOptions{
		Will: &mqtttest.Message{Topic: "cloud2mqtt/h6072_aa/set/powerSwitch", Payload: "witness", QoS: 1}})
	spoofer.Sever()
	witness.Sever()
	bridge.WaitFor("cloud2mqtt/h6072_aa/set/powerSwitch", "witness", wait)
	expectTruth(t, b)
}

// expectTruth: a fresh subscriber gets the bridge's retained values.
func expectTruth(t *testing.T, b *mqtttest.Broker) {
	t.Helper()
	watcher := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{Username: "homeassistant", Password: haPass})
	watcher.Subscribe("cloud2mqtt/#", 1)
	watcher.Subscribe("homeassistant/#", 1)
	got := map[string]string{}
	deadline := time.Now().Add(wait)
	for len(got) < len(truth) {
		m, ok := watcher.Next(time.Until(deadline))
		if !ok {
			break
		}
		got[m.Topic] = m.Payload
	}
	for tp, p := range truth {
		if got[tp] != p {
			t.Errorf("%s = %q, want the bridge's %q", tp, got[tp], p)
		}
	}
}
