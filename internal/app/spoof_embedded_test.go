package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/mqtttest"
)

// TestEmbeddedBrokerKeepsTheBridgesTopics: the embedded broker refuses every
// publish under the base but commands from anyone but the bridge's login (QoS 0
// dropped, QoS 1 disconnected), and such wills and the bridge's client id too.
// Spoofs never reach the daemon, a fresh subscriber finds the truth, and an
// anonymous command still reaches the cloud.
func TestEmbeddedBrokerKeepsTheBridgesTopics(t *testing.T) {
	t.Parallel()
	listen := fmt.Sprintf("127.0.0.1:%d", mqtttest.FreePort(t))
	clientID := "bridge-" + strings.ReplaceAll(t.Name(), "/", "-") // the harness's MQTT_CLIENT_ID
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(2)},
		env: map[string]string{"MQTT_URL": "embedded", "MQTT_LISTEN": listen}})
	url := "tcp://" + listen
	w := newNamedWatcher(t, url, "embedded-watcher-"+t.Name())
	id := h.ids()[0]
	state, avail, values := "cloud2mqtt/bridge/state", "cloud2mqtt/"+id+"/availability", "cloud2mqtt/"+id+"/state"
	availability(w, wait, "online", h.ids()...)
	w.until(wait, "the bridge online and the device's state", func() bool {
		s, _ := w.get(state)
		v, _ := w.get(values)
		return s == "online" && v != ""
	})
	truth, _ := w.get(values)

	for _, tp := range []string{state, avail, values} {
		for _, qos := range []byte{0, 1} {
			c := dialPaho(t, url, "", "")
			c.Publish(tp, qos, true, "offline")
			if qos == 0 {
				// QoS 0 is dropped silently: a QoS 1 publish after it on a
				// command topic, acknowledged, shows it was handled.
				if tok := c.Publish("cloud2mqtt/"+id+"/get", 1, false, ""); !tok.WaitTimeout(wait) || tok.Error() != nil {
					t.Fatalf("a command after the QoS 0 spoof: %v", tok.Error())
				}
				c.Disconnect(50)
				continue
			}
			deadline := time.Now().Add(wait)
			for c.IsConnectionOpen() && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond) // polling the client's state, bounded
			}
			if c.IsConnectionOpen() {
				t.Errorf("%s: a QoS 1 spoof left its sender connected", tp)
			}
		}
	}
	for name, o := range map[string]mqtttest.ClientOptions{
		"a will on bridge/state":     {Will: &mqtttest.Message{Topic: state, Payload: "offline", Retained: true, QoS: 1}, NoRetry: true},
		"a will on the availability": {Will: &mqtttest.Message{Topic: avail, Payload: "offline", Retained: true, QoS: 1}, NoRetry: true},
		"the bridge's client id":     {ClientID: clientID, NoRetry: true},
		"the bridge's user name":     {Username: "cloud2mqtt-bridge", Password: "guess", NoRetry: true},
	} {
		if _, err := mqtttest.DialClient(t, url, o); err == nil {
			t.Errorf("%s: connected", name)
		}
	}

	// A command from anyone still reaches the cloud.
	cmd := mqtttest.NewClient(t, url, mqtttest.ClientOptions{})
	cmd.Publish("cloud2mqtt/"+id+"/set/brightness", "33", false, 1)
	w.until(wait, "the command at the cloud", func() bool {
		for _, c := range h.sim.ControlLog() {
			if c.Instance == capability.InstanceBrightness && fmt.Sprint(c.Value) == "33" {
				return true
			}
		}
		return false
	})

	fresh := newNamedWatcher(t, url, "embedded-fresh-"+t.Name())
	fresh.until(wait, "the truth retained", func() bool {
		s, _ := fresh.get(state)
		a, _ := fresh.get(avail)
		v, _ := fresh.get(values)
		return s == "online" && a == "online" && v != "" && v != "offline"
	})
	for _, m := range w.messages() {
		if m.payload == "offline" {
			t.Errorf("a spoof reached a subscriber: %s %s", m.topic, m.payload)
		}
	}
	if v, _ := fresh.get(values); v != truth && !strings.Contains(v, `"brightness":33`) {
		t.Errorf("state %s, want the bridge's %s", v, truth)
	}
	if n := len(h.logLines(func(l map[string]any) bool {
		m, _ := l["message"].(string)
		return strings.HasPrefix(m, "another client overwrote")
	})); n != 0 {
		t.Errorf("the daemon saw %d overwrites: the broker let them through", n)
	}
	if n := len(h.logLines(func(l map[string]any) bool {
		m, _ := l["message"].(string)
		return strings.HasPrefix(m, "embedded broker refused")
	})); n == 0 {
		t.Errorf("the broker logged no refusal")
	}
}

// dialPaho is a bare MQTT 3.1.1 client of the test's, without retries.
func dialPaho(t *testing.T, url, user, pass string) paho.Client {
	t.Helper()
	c := paho.NewClient(paho.NewClientOptions().AddBroker(url).SetClientID(fmt.Sprintf("attacker-%d", time.Now().UnixNano())).
		SetProtocolVersion(4).SetAutoReconnect(false).SetUsername(user).SetPassword(pass))
	if tok := c.Connect(); !tok.WaitTimeout(wait) || tok.Error() != nil {
		t.Fatalf("attacker: connect: %v", tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(50) })
	return c
}
