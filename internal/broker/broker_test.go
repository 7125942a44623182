package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func start(t *testing.T, o Options) *Broker {
	t.Helper()
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	b, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

type got struct {
	topic, payload string
	retained       bool
}

func connect(t *testing.T, url, id string, clean bool, user, pass string) (paho.Client, chan got, error) {
	t.Helper()
	ch := make(chan got, 100)
	o := paho.NewClientOptions().AddBroker(url).SetClientID(id).SetCleanSession(clean).
		SetProtocolVersion(4).SetAutoReconnect(false).SetUsername(user).SetPassword(pass).
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) {
			ch <- got{m.Topic(), string(m.Payload()), m.Retained()}
		})
	c := paho.NewClient(o)
	tok := c.Connect()
	if !tok.WaitTimeout(5 * time.Second) {
		return nil, nil, errors.New("connect timed out")
	}
	if tok.Error() != nil {
		return nil, nil, tok.Error()
	}
	t.Cleanup(func() { c.Disconnect(50) })
	return c, ch, nil
}

func mustConnect(t *testing.T, url, id string, clean bool) (paho.Client, chan got) {
	t.Helper()
	c, ch, err := connect(t, url, id, clean, "", "")
	if err != nil {
		t.Fatalf("connect %s: %v", id, err)
	}
	return c, ch
}

func wait(t *testing.T, tok paho.Token) {
	t.Helper()
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("token: %v", tok.Error())
	}
}

func next(t *testing.T, ch chan got) got {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(5 * time.Second):
		t.Fatalf("no message within 5s")
		return got{}
	}
}

func TestAddrIsTheBoundPort(t *testing.T) {
	b := start(t, Options{Addr: "127.0.0.1:0", WSAddr: "127.0.0.1:0"})
	host, port, err := net.SplitHostPort(b.Addr())
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("Addr() = %q, want 127.0.0.1 and the port actually bound", b.Addr())
	}
	if b.URL() != "tcp://"+b.Addr() {
		t.Errorf("URL() = %q, want tcp://%s", b.URL(), b.Addr())
	}
	if !strings.HasPrefix(b.WSURL(), "ws://127.0.0.1:") || strings.Contains(b.WSURL(), ":0/") {
		t.Errorf("WSURL() = %q, want ws://127.0.0.1:<port>/", b.WSURL())
	}
	mustConnect(t, b.URL(), "tcp-client", true)
	mustConnect(t, b.WSURL(), "ws-client", true)
}

func TestAddrInUse(t *testing.T) {
	b := start(t, Options{})
	_, err := Start(context.Background(), Options{Addr: b.Addr()})
	if err == nil || !strings.Contains(err.Error(), "broker: listen on "+b.Addr()) {
		t.Fatalf("second broker on %s: err = %v, want a listen error naming the address", b.Addr(), err)
	}
	if _, err := Start(context.Background(), Options{Addr: "no-port"}); err == nil {
		t.Errorf("address without a port accepted")
	}
}

func TestRetained(t *testing.T) {
	b := start(t, Options{})
	pub, _ := mustConnect(t, b.URL(), "pub", true)
	wait(t, pub.Publish("a/state", 1, true, "on"))
	sub, ch := mustConnect(t, b.URL(), "sub", true)
	wait(t, sub.Subscribe("a/#", 1, nil))
	if m := next(t, ch); m != (got{"a/state", "on", true}) {
		t.Fatalf("new subscriber got %+v, want the retained a/state=on", m)
	}
}

// A client with a persistent session gets the QoS 1 messages published
// while it was away.
func TestPersistentSessionQueuesQoS1(t *testing.T) {
	b := start(t, Options{})
	c, _ := mustConnect(t, b.URL(), "bridge", false)
	wait(t, c.Subscribe("cmd/#", 1, nil))
	c.Disconnect(50)

	pub, _ := mustConnect(t, b.URL(), "ha", true)
	for i := range 3 {
		wait(t, pub.Publish("cmd/x", 1, false, fmt.Sprint(i)))
	}
	_, ch := mustConnect(t, b.URL(), "bridge", false)
	var got []string
	for range 3 {
		m := next(t, ch)
		if m.topic != "cmd/x" {
			t.Fatalf("after reconnect: %+v", m)
		}
		got = append(got, m.payload)
	}
	// mochi resends queued messages sorted by the second they arrived in,
	// so the order within one second is not kept.
	slices.Sort(got)
	if strings.Join(got, ",") != "0,1,2" {
		t.Errorf("queued messages after reconnect: %v, want 0, 1 and 2", got)
	}
}

func TestUsers(t *testing.T) {
	b := start(t, Options{Users: map[string]string{"bridge": "pw"}})
	if _, _, err := connect(t, b.URL(), "ok", true, "bridge", "pw"); err != nil {
		t.Errorf("right password refused: %v", err)
	}
	for _, c := range []struct{ user, pass string }{{"bridge", "nope"}, {"", ""}, {"other", "pw"}} {
		if _, _, err := connect(t, b.URL(), "bad", true, c.user, c.pass); err == nil {
			t.Errorf("user %q password %q accepted", c.user, c.pass)
		}
	}
}

func TestAnonymousByDefault(t *testing.T) {
	b := start(t, Options{})
	if _, _, err := connect(t, b.URL(), "anon", true, "someone", "anything"); err != nil {
		t.Fatalf("anonymous broker refused a client: %v", err)
	}
}

func TestSlogToZerolog(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(quietHandler{zerolog.NewSlogHandler(zerolog.New(&buf))})
	l.Info("chatty", "client", "x")
	l.Warn("", "error", net.ErrClosed) // a client going away
	l.With("listener", "tcp").WithGroup("g").Warn("slow client", "client", "y")
	l.Error("boom", "error", errors.New("disk"))
	out := buf.String()
	if strings.Contains(out, "chatty") || strings.Contains(out, "closed network") {
		t.Errorf("info and routine disconnects should be dropped:\n%s", out)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("log lines:\n%s\nwant the warning and the error", out)
	}
	if w := lines[0]; w["level"] != "warn" || w["message"] != "slow client" || w["g.client"] != "y" || (w["listener"] != "tcp" && w["g.listener"] != "tcp") {
		t.Errorf("warning %v", w)
	}
	if e := lines[1]; e["level"] != "error" || e["message"] != "boom" || e["error"] != "disk" {
		t.Errorf("error %v", e)
	}
}
