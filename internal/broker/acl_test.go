package broker

import (
	"errors"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/rs/zerolog"
)

// testOwner reserves c2m/# to the bridge but its command topics (as
// topic.Layout.Inbound names them for the base c2m).
func testOwner() *Owner {
	return &Owner{ClientID: "bridge-1", Reserved: []string{"c2m/#"},
		Open: []string{"c2m/+/set/#", "c2m/+/get/#", "c2m/+/light/set/#", "c2m/+/segment/+/set/#", "c2m/bridge/request/#"}}
}

// The attack on the embedded broker: any client publishes a
// retained bridge/state "offline", <id>/availability "offline" or
// <id>/state, which Home Assistant would show until the next real change.
// Each is refused (QoS 0 dropped, QoS 1 disconnects), and a will on them
// too; only the bridge's login publishes there. Commands, requests and
// topics outside the base are everyone's.
func TestOnlyTheOwnerPublishesItsTopics(t *testing.T) {
	logs := &lockedBuffer{}
	b := start(t, Options{Owner: testOwner(), MaxPacketSize: DefaultMaxPacketSize, Logger: zerolog.New(logs)})
	user, pass := b.OwnerLogin()
	if user != OwnerUsername || len(pass) < 32 {
		t.Fatalf("owner login %q/%q", user, pass)
	}
	owner, _, err := connect(t, b.URL(), "bridge-1", true, user, pass)
	if err != nil {
		t.Fatalf("the owner's login: %v", err)
	}
	truth := map[string]string{"c2m/bridge/state": "online", "c2m/d1/availability": "online", "c2m/d1/state": `{"online":true}`}
	for tp, p := range truth {
		wait(t, owner.Publish(tp, 1, true, p))
	}

	for tp := range truth {
		for _, qos := range []byte{0, 1} {
			attacker, _, err := connect(t, b.URL(), "attacker", true, "", "")
			if err != nil {
				t.Fatal(err)
			}
			tok := attacker.Publish(tp, qos, true, "offline")
			tok.WaitTimeout(5 * time.Second)
			if qos == 1 {
				deadline := time.Now().Add(5 * time.Second)
				for attacker.IsConnectionOpen() && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond) // polling the client's state, bounded
				}
				if attacker.IsConnectionOpen() {
					t.Errorf("%s QoS 1: the attacker is still connected", tp)
				}
			}
			attacker.Disconnect(0)
		}
	}
	// A will, the owner's client id, and the owner's user name without its
	// password: each connection is refused.
	for name, c := range map[string]struct {
		id, user, pass, will string
	}{
		"will on bridge/state":     {"w", "", "", "c2m/bridge/state"},
		"will on an availability":  {"w", "someone", "x", "c2m/d1/availability"},
		"the owner's client id":    {"bridge-1", "", "", ""},
		"the owner's name, no key": {"x", OwnerUsername, "guess", ""},
	} {
		if _, err := connectWill(t, b.URL(), c.id, c.user, c.pass, c.will); err == nil {
			t.Errorf("%s: connected", name)
		}
	}
	if !owner.IsConnectionOpen() {
		t.Fatalf("the owner was disconnected (its client id taken over?)")
	}

	// A fresh subscriber sees the owner's values.
	sub, ch := mustConnect(t, b.URL(), "sub", true)
	wait(t, sub.Subscribe("c2m/#", 1, nil))
	for range truth {
		m := next(t, ch)
		if truth[m.topic] != m.payload {
			t.Errorf("%s = %q, want the owner's %q", m.topic, m.payload, truth[m.topic])
		}
	}

	// Commands, requests, Home Assistant's status and a will on a command
	// topic are anyone's.
	ha, err := connectWill(t, b.URL(), "ha", "", "", "c2m/d1/set")
	if err != nil {
		t.Fatalf("a client with a will on a command topic: %v", err)
	}
	wait(t, sub.Subscribe("homeassistant/#", 1, nil))
	open := []string{"c2m/d1/set", "c2m/d1/set/brightness", "c2m/d1/set/brightness/x", "c2m/d1/get", "c2m/d1/light/set",
		"c2m/d1/segment/3/set", "c2m/bridge/request/health", "c2m/bridge/request/device/options", "homeassistant/status"}
	for _, tp := range open {
		wait(t, ha.Publish(tp, 1, false, "x"))
		if m := next(t, ch); m.topic != tp {
			t.Errorf("got %s, want the command on %s", m.topic, tp)
		}
	}
	if l := logs.String(); !strings.Contains(l, "embedded broker refused") || !strings.Contains(l, `"refused":"publish"`) {
		t.Errorf("no refusal logged: %s", l)
	}
}

// TestRefusalsAreLoggedOnceASecond: a flood of refused publishes makes a
// line, not a line each.
func TestRefusalsAreLoggedOnceASecond(t *testing.T) {
	logs := &lockedBuffer{}
	b := start(t, Options{Owner: testOwner(), Logger: zerolog.New(logs)})
	attacker, _ := mustConnect(t, b.URL(), "attacker", true)
	for range 500 {
		attacker.Publish("c2m/bridge/state", 0, true, "offline")
	}
	wait(t, attacker.Publish("c2m/d1/set", 1, false, "fence")) // the broker has handled the flood
	if n := strings.Count(logs.String(), "embedded broker refused"); n < 1 || n > 3 {
		t.Errorf("%d refusals logged for 500 publishes in well under 3 s, want 1 to 3", n)
	}
}

// Without an owner, every client publishes everywhere.
func TestNoOwnerNoReservedTopics(t *testing.T) {
	b := start(t, Options{})
	if u, p := b.OwnerLogin(); u != "" || p != "" {
		t.Errorf("OwnerLogin without an owner: %q %q", u, p)
	}
	c, _ := mustConnect(t, b.URL(), "anyone", true)
	wait(t, c.Publish("c2m/bridge/state", 1, true, "offline"))
	sub, ch := mustConnect(t, b.URL(), "sub", true)
	wait(t, sub.Subscribe("c2m/#", 1, nil))
	if m := next(t, ch); m.payload != "offline" {
		t.Errorf("got %+v", m)
	}
}

// connectWill connects with a will (retained "offline") on will, when set.
func connectWill(t *testing.T, url, id, user, pass, will string) (paho.Client, error) {
	t.Helper()
	o := paho.NewClientOptions().AddBroker(url).SetClientID(id).SetProtocolVersion(4).SetAutoReconnect(false).
		SetUsername(user).SetPassword(pass).SetConnectTimeout(5 * time.Second)
	if will != "" {
		o.SetWill(will, "offline", 1, true)
	}
	c := paho.NewClient(o)
	tok := c.Connect()
	if !tok.WaitTimeout(5 * time.Second) {
		return nil, errors.New("connect timed out")
	}
	if err := tok.Error(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Disconnect(50) })
	return c, nil
}
