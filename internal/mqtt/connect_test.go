package mqtt

// Connecting: credentials, TLS, websockets, refusals and waits.

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cloud2mqtt/internal/mqtttest"
)

// connectUntilRefused runs Connect until its first failed attempt is
// logged, then ends its context: a connect that is refused is waited for as
// the event, not for a fixed time. A Connect that succeeds returns at once.
func connectUntilRefused(t *testing.T, cfg Config, logs *mqtttest.SyncBuffer) (*Client, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		c   *Client
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := Connect(ctx, cfg, nil)
		done <- result{c, err}
	}()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(10 * time.Second)
	for !strings.Contains(logs.String(), "cannot connect to MQTT broker; retrying") {
		select {
		case r := <-done:
			return r.c, r.err
		case <-timeout:
			t.Fatalf("no failed connect attempt logged within 10 s:\n%s", logs)
		case <-tick.C:
		}
	}
	cancel()
	r := <-done
	return r.c, r.err
}

func TestPassword(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
		b := mqtttest.Start(t, mqtttest.WithKind(kind), mqtttest.WithPassword("bridge", "hunter2"))
		cfg, logs := testConfig(t, b.URL())
		cfg.Username, cfg.Password = "bridge", "hunter2"
		connect(t, cfg, nil)

		bad, badLogs := testConfig(t, b.URL())
		bad.Username, bad.Password = "bridge", "wrong-pw"
		c, err := connectUntilRefused(t, bad, badLogs)
		if err == nil {
			closeClient(t, c)
			t.Fatal("Connect with a wrong password succeeded")
		}
		for _, want := range []string{"not authorized", "MQTT_PASSWORD", "no connection to tcp://" + b.Addr() + " after"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
		if !strings.Contains(badLogs.String(), "cannot connect to MQTT broker; retrying") {
			t.Errorf("failed attempts are not logged as warnings:\n%s", badLogs)
		}
		for _, out := range []string{err.Error(), logs.String(), badLogs.String()} {
			if strings.Contains(out, "hunter2") || strings.Contains(out, "wrong-pw") {
				t.Errorf("password in output: %s", out)
			}
		}
	})
}

func TestTLS(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
		b := mqtttest.Start(t, mqtttest.WithKind(kind), mqtttest.WithTLS())
		cfg, _ := testConfig(t, b.URL())
		cfg.CAFile = b.CAFile()
		c := connect(t, cfg, nil)
		got := make(sink, 1)
		if err := c.Subscribe("c2m/echo", 1, got.handler); err != nil {
			t.Fatal(err)
		}
		if err := c.Publish("c2m/echo", []byte("over tls"), false, 1); err != nil {
			t.Fatal(err)
		}
		if m := got.next(t); m[1] != "over tls" {
			t.Errorf("got %v", m)
		}

		untrusted, untrustedLogs := testConfig(t, b.URL())
		if c, err := connectUntilRefused(t, untrusted, untrustedLogs); err == nil {
			closeClient(t, c)
			t.Error("Connect without the CA trusted a self-made certificate")
		} else if !strings.Contains(err.Error(), "TLS") {
			t.Errorf("error %q does not say it is about TLS", err)
		}
	})
}

func TestWebsocket(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
		b := mqtttest.Start(t, mqtttest.WithKind(kind), mqtttest.WithWebsocket())
		cfg, _ := testConfig(t, b.WSURL())
		c := connect(t, cfg, nil)
		got := make(sink, 1)
		if err := c.Subscribe("c2m/echo", 1, got.handler); err != nil {
			t.Fatal(err)
		}
		if err := c.Publish("c2m/echo", []byte("over ws"), false, 1); err != nil {
			t.Fatal(err)
		}
		if m := got.next(t); m[1] != "over ws" {
			t.Errorf("got %v", m)
		}
	})
}

func TestConnectRefused(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	cfg, _ := testConfig(t, "tcp://"+addr)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	c, err := Connect(ctx, cfg, nil)
	if err == nil {
		closeClient(t, c)
		t.Fatal("Connect to a closed port succeeded")
	}
	if !strings.Contains(err.Error(), "connection refused") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %q: want it to say the connection was refused and wrap the context's error", err)
	}
}

// A broker that is down when the bridge starts is waited for, not fatal.
func TestConnectWaitsForBroker(t *testing.T) {
	t.Parallel()
	b := mqtttest.Start(t)
	b.Kill()
	cfg, logs := testConfig(t, b.URL())
	type result struct {
		c   *Client
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := Connect(ctx, cfg, nil)
		done <- result{c, err}
	}()
	eventually(t, "a logged failed attempt", func() bool { return strings.Contains(logs.String(), "connection refused") })
	b.Restart()
	r := <-done
	if r.err != nil {
		t.Fatalf("Connect: %v", r.err)
	}
	closeClient(t, r.c)
}

func TestArguments(t *testing.T) {
	t.Parallel()
	b := mqtttest.Start(t)
	cfg, _ := testConfig(t, b.URL())
	c := connect(t, cfg, nil)
	for _, err := range []error{
		c.Publish("a/+/b", nil, false, 0),
		c.Publish("", nil, false, 0),
		c.Publish("a", nil, false, 3),
		c.Subscribe("a/#/b", 1, func(string, []byte, bool) {}),
		c.Subscribe("a", 1, nil),
	} {
		if err == nil || !strings.HasPrefix(err.Error(), "mqtt: ") {
			t.Errorf("bad argument: err = %v, want an mqtt: error", err)
		}
	}
	if _, err := Connect(context.Background(), Config{URL: "http://x"}, nil); err == nil {
		t.Errorf("Connect accepted an invalid config")
	}
}

// A panicking handler or onConnect is logged, not fatal.
func TestPanicsContained(t *testing.T) {
	t.Parallel()
	b := mqtttest.Start(t)
	cfg, logs := testConfig(t, b.URL())
	c := connect(t, cfg, func(*Client) { panic("on connect") })
	got := make(sink, 1)
	if err := c.Subscribe("c2m/p", 1, func(topic string, p []byte, _ bool) {
		if string(p) == "bad" {
			panic("bad payload")
		}
		got.handler(topic, p, false)
	}); err != nil {
		t.Fatal(err)
	}
	w := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{})
	w.Publish("c2m/p", "bad", false, 1)
	w.Publish("c2m/p", "good", false, 1)
	if m := got.next(t); m[1] != "good" {
		t.Fatalf("got %v", m)
	}
	for _, want := range []string{"on-connect callback panicked", "message handler panicked"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q", want)
		}
	}
}

// The first onConnect has run when Connect returns, and may use the Client
// it is given to subscribe and publish.
func TestFirstOnConnectBeforeConnectReturns(t *testing.T) {
	t.Parallel()
	b := mqtttest.Start(t)
	cfg, _ := testConfig(t, b.URL())
	got := make(sink, 1)
	var calls atomic.Int32
	connect(t, cfg, func(c *Client) {
		calls.Add(1)
		if err := c.Subscribe("c2m/echo", 1, got.handler); err != nil {
			t.Errorf("Subscribe in onConnect: %v", err)
		}
		if err := c.Publish("c2m/echo", []byte("from onConnect"), false, 1); err != nil {
			t.Errorf("Publish in onConnect: %v", err)
		}
	})
	if n := calls.Load(); n != 1 {
		t.Fatalf("onConnect called %d times before Connect returned, want 1", n)
	}
	if m := got.next(t); m[1] != "from onConnect" {
		t.Errorf("got %v", m)
	}
}
