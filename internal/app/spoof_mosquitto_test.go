//go:build mosquitto

package app_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/mqtttest"
)

// Needs mosquitto: -tags mosquitto, which .ci/run sets.

// TestMosquittoACLKeepsTheBridgesTopics: with deploy/mosquitto/cloud2mqtt.acl
// the daemon works as without it, while retained spoofs of bridge/state,
// <id>/availability and <id>/state from an anonymous client and Home
// Assistant's user are dropped by mosquitto and a fresh subscriber finds the truth.
func TestMosquittoACLKeepsTheBridgesTopics(t *testing.T) {
	if mqtttest.MosquittoPath() == "" {
		t.Fatal("mosquitto is not installed (Debian: apt-get install mosquitto); the mosquitto tag needs it")
	}
	t.Parallel()
	deployed, err := os.ReadFile(filepath.Join("..", "..", "deploy", "mosquitto", "cloud2mqtt.acl"))
	if err != nil {
		t.Fatal(err)
	}
	// The file as users install it, and for the harness's anonymous
	// watcher its own barrier topic and the discovery configs to read
	// (lines before the first "user" are the anonymous clients').
	acl := filepath.Join(t.TempDir(), "cloud2mqtt.acl")
	if err := os.WriteFile(acl, append([]byte("topic readwrite harness/#\ntopic read homeassistant/#\n"), deployed...), 0o644); err != nil {
		t.Fatal(err)
	}
	const bridgePass, haPass = "bridge-pass-0a7d", "ha-pass-93c1"
	h := startHarness(t, harnessOptions{
		sim:    cloudsim.Options{Catalogue: firstDevices(2)},
		broker: []mqtttest.Option{mqtttest.WithKind(mqtttest.Mosquitto), mqtttest.WithACL(acl, map[string]string{"cloud2mqtt": bridgePass, "homeassistant": haPass})},
		env:    map[string]string{"MQTT_USERNAME": "cloud2mqtt", "MQTT_PASSWORD": bridgePass},
	})
	id := h.ids()[0]
	state, avail, values := "cloud2mqtt/bridge/state", "cloud2mqtt/"+id+"/availability", "cloud2mqtt/"+id+"/state"
	availability(h.watch, wait, "online", h.ids()...)
	h.devices() // the device list and the discovery configs, published under the ACL
	h.watch.until(wait, "the bridge online", func() bool { p, _ := h.watch.get(state); return p == "online" })
	if len(h.watch.topics("homeassistant/")) == 0 {
		t.Fatal("no discovery configs under the ACL")
	}

	for name, o := range map[string]mqtttest.ClientOptions{
		"anonymous":      {},
		"home assistant": {Username: "homeassistant", Password: haPass},
	} {
		c := mqtttest.NewClient(t, h.broker.URL(), o)
		for _, tp := range []string{state, avail, values} {
			c.Publish(tp, "offline", true, 0)
			c.Publish(tp, "offline", true, 1) // acknowledged: the QoS 0 one before it was handled
		}
		c.Publish("cloud2mqtt/"+id+"/set/brightness", fmt.Sprint(len(name)), false, 1)
		c.Close()
	}
	h.watch.until(wait, "both commands at the cloud", func() bool {
		n := 0
		for _, c := range h.sim.ControlLog() {
			if c.Instance == capability.InstanceBrightness {
				n++
			}
		}
		return n == 2
	})

	fresh := newNamedWatcher(t, h.broker.URL(), "fresh-"+t.Name())
	fresh.until(wait, "the truth retained", func() bool {
		s, _ := fresh.get(state)
		a, _ := fresh.get(avail)
		v, _ := fresh.get(values)
		return s == "online" && a == "online" && strings.HasPrefix(v, "{")
	})
	for _, m := range h.watch.messages() {
		if m.payload == "offline" {
			t.Errorf("a spoof reached a subscriber: %s", m.topic)
		}
	}
	if n := len(h.logLines(func(l map[string]any) bool {
		m, _ := l["message"].(string)
		return strings.HasPrefix(m, "another client overwrote")
	})); n != 0 {
		t.Errorf("the daemon saw %d overwrites: mosquitto let them through", n)
	}
}
