package mqtt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/mqtttest"
)

const stateTopic = "c2m/bridge/state"

func testConfig(t *testing.T, url string) (Config, *mqtttest.SyncBuffer) {
	logs := &mqtttest.SyncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("client log:\n%s", logs.String())
		}
	})
	return Config{
		URL:                  url,
		ClientID:             "bridge-" + strings.NewReplacer("/", "-", " ", "").Replace(t.Name()),
		StateTopic:           stateTopic,
		Logger:               zerolog.New(logs).With().Timestamp().Logger(), // a failure's log shows when
		ConnectTimeout:       2 * time.Second,
		ConnectRetryInterval: 100 * time.Millisecond,
		MaxReconnectInterval: 300 * time.Millisecond,
		PublishTimeout:       3 * time.Second,
	}, logs
}

// connect connects and closes the client at the end of the test.
func connect(t *testing.T, cfg Config, onConnect func(*Client)) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Connect(ctx, cfg, onConnect)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { closeClient(t, c) })
	return c
}

func closeClient(t *testing.T, c *Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// sink collects handler calls.
type sink chan [2]string

func (s sink) handler(topic string, payload []byte, _ bool) { s <- [2]string{topic, string(payload)} }

func (s sink) next(t *testing.T) [2]string {
	t.Helper()
	select {
	case m := <-s:
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("handler not called within 10s")
		return [2]string{}
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func forEachKind(t *testing.T, f func(t *testing.T, kind mqtttest.Kind)) {
	for _, k := range mqtttest.Kinds() {
		t.Run(string(k), func(t *testing.T) { f(t, k) })
	}
}

// Birth on connect, "offline" on Close, both retained.
func TestBirthAndClose(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
		b := mqtttest.Start(t, mqtttest.WithKind(kind))
		cfg, _ := testConfig(t, b.URL())
		c := connect(t, cfg, nil)

		w := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{})
		w.Subscribe(stateTopic, 1)
		if m := w.WaitFor(stateTopic, Online, 5*time.Second); !m.Retained {
			t.Errorf("online state is not retained")
		}
		closeClient(t, c)
		w.WaitFor(stateTopic, Offline, 5*time.Second)

		late := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{})
		late.Subscribe(stateTopic, 1)
		if m := late.WaitFor(stateTopic, Offline, 5*time.Second); !m.Retained {
			t.Errorf("offline state is not retained")
		}
		if err := c.Publish("c2m/x", nil, false, 0); !errors.Is(err, ErrClosed) {
			t.Errorf("Publish after Close = %v, want ErrClosed", err)
		}
		if err := c.Subscribe("c2m/x", 1, func(string, []byte, bool) {}); !errors.Is(err, ErrClosed) {
			t.Errorf("Subscribe after Close = %v, want ErrClosed", err)
		}
	})
}

// When the bridge's connection dies, the broker publishes the will; when it
// comes back, the bridge says "online" again (not only on its first connect).
func TestWillAndBirthAfterReconnect(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
		b := mqtttest.Start(t, mqtttest.WithKind(kind))
		p := mqtttest.NewProxy(t, b.Addr())
		cfg, _ := testConfig(t, p.URL())
		var connects atomic.Int32
		c := connect(t, cfg, func(*Client) { connects.Add(1) })

		w := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{})
		w.Subscribe(stateTopic, 1)
		w.WaitFor(stateTopic, Online, 5*time.Second)

		p.SetDown(true)
		p.Sever()
		w.WaitFor(stateTopic, Offline, 10*time.Second)
		late := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{})
		late.Subscribe(stateTopic, 1)
		if m := late.WaitFor(stateTopic, Offline, 5*time.Second); !m.Retained {
			t.Errorf("will is not retained")
		}
		eventually(t, "Connected() false", func() bool { return !c.Connected() })
		p.SetDown(false)
		w.WaitFor(stateTopic, Online, 10*time.Second)
		eventually(t, "onConnect called again", func() bool { return connects.Load() == 2 })
		if s := c.Stats(); s.Reconnects != 1 || !s.Connected {
			t.Errorf("Stats() = %+v, want 1 reconnect and connected", s)
		}
	})
}

// After a broker restart (all broker state lost) the bridge publishes
// "online" again and its subscriptions work again.
func TestBrokerRestart(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
		b := mqtttest.Start(t, mqtttest.WithKind(kind))
		cfg, _ := testConfig(t, b.URL())
		c := connect(t, cfg, nil)
		got := make(sink, 10)
		if err := c.Subscribe("c2m/+/set", 1, got.handler); err != nil {
			t.Fatalf("Subscribe: %v", err)
		}

		b.Restart()
		w := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{})
		w.Subscribe(stateTopic, 1)
		w.WaitFor(stateTopic, Online, 10*time.Second) // retained again, though the broker forgot it
		eventually(t, "the resubscription", func() bool {
			// The subscription is made right after "online"; publish until it is.
			w.Publish("c2m/lamp/set", "ON", false, 1)
			select {
			case m := <-got:
				return m == [2]string{"c2m/lamp/set", "ON"}
			case <-time.After(100 * time.Millisecond):
				return false
			}
		})
	})
}

// QoS 1 commands sent while the bridge was away reach it when it is back:
// the session is persistent (same client id, clean session off).
func TestMessagesQueuedWhileDisconnected(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
		b := mqtttest.Start(t, mqtttest.WithKind(kind))
		p := mqtttest.NewProxy(t, b.Addr())
		cfg, _ := testConfig(t, p.URL())
		c := connect(t, cfg, nil)
		got := make(sink, 10)
		if err := c.Subscribe("c2m/+/set", 1, got.handler); err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
		w := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{})
		w.Subscribe(stateTopic, 1)
		w.WaitFor(stateTopic, Online, 5*time.Second)

		p.SetDown(true)
		p.Sever()
		w.WaitFor(stateTopic, Offline, 10*time.Second) // the broker knows the bridge is gone
		for i := range 3 {
			w.Publish("c2m/lamp/set", fmt.Sprint(i), false, 1)
		}
		p.SetDown(false)
		var cmds []string
		for range 3 {
			m := got.next(t)
			if m[0] != "c2m/lamp/set" {
				t.Fatalf("got %v", m)
			}
			cmds = append(cmds, m[1])
		}
		if kind == mqtttest.Embedded {
			// mochi resends a session's queued messages sorted by the
			// second they arrived in, so their order within a second is
			// not kept; mosquitto keeps it.
			slices.Sort(cmds)
		}
		if strings.Join(cmds, ",") != "0,1,2" {
			t.Errorf("commands after reconnect: %v, want 0,1,2", cmds)
		}
		// The broker hands the queued commands over as the connection
		// opens, before the session has counted the reconnection.
		eventually(t, "one reconnection counted", func() bool { return c.Stats().Reconnects >= 1 })
		if n := c.Stats().Reconnects; n != 1 {
			t.Errorf("Reconnects = %d, want 1", n)
		}
	})
}

// A new process with the same client id gets what was queued for the
// previous one, even though it subscribes only after connecting.
func TestMessagesQueuedForNextProcess(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
		b := mqtttest.Start(t, mqtttest.WithKind(kind))
		cfg, _ := testConfig(t, b.URL())
		first := connect(t, cfg, nil)
		if err := first.Subscribe("c2m/+/set", 1, func(string, []byte, bool) {}); err != nil {
			t.Fatal(err)
		}
		closeClient(t, first)

		w := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{})
		w.Publish("c2m/lamp/set", "while-away", false, 1)
		w.Publish("c2m/other/state", "not-subscribed", false, 1)

		second := connect(t, cfg, nil)
		eventually(t, "the queued message to arrive", func() bool { return second.Stats().Received >= 1 })
		got := make(sink, 10)
		if err := second.Subscribe("c2m/+/set", 1, got.handler); err != nil {
			t.Fatal(err)
		}
		if m := got.next(t); m != [2]string{"c2m/lamp/set", "while-away"} {
			t.Fatalf("got %v, want the command queued while away", m)
		}
	})
}

// A slow handler holds up neither the connection nor other subscriptions;
// when its queue is full, messages for it are dropped and counted.
func TestSlowHandler(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
		b := mqtttest.Start(t, mqtttest.WithKind(kind))
		cfg, _ := testConfig(t, b.URL())
		cfg.QueueSize = 2
		c := connect(t, cfg, nil)

		started := make(chan struct{}, 10)
		release := make(chan struct{})
		var once sync.Once
		unblock := func() { once.Do(func() { close(release) }) }
		defer unblock() // before Close, which waits for handlers
		var slow []string
		var mu sync.Mutex
		if err := c.Subscribe("slow/#", 1, func(_ string, p []byte, _ bool) {
			started <- struct{}{}
			<-release
			mu.Lock()
			slow = append(slow, string(p))
			mu.Unlock()
		}); err != nil {
			t.Fatal(err)
		}
		fast := make(sink, 10)
		if err := c.Subscribe("fast/#", 1, fast.handler); err != nil {
			t.Fatal(err)
		}

		w := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{})
		w.Publish("slow/x", "0", false, 1)
		<-started // the handler holds message 0; the queue (2) is empty
		for i := 1; i <= 4; i++ {
			w.Publish("slow/x", fmt.Sprint(i), false, 1)
		}
		w.Publish("fast/x", "quick", false, 1)
		if m := fast.next(t); m[1] != "quick" {
			t.Fatalf("fast handler got %v", m)
		}
		eventually(t, "6 messages received", func() bool { return c.Stats().Received == 6 })
		if d := c.Stats().Dropped; d != 2 {
			t.Errorf("Dropped = %d, want 2 (messages 3 and 4: one in the handler, two queued)", d)
		}
		if err := c.Publish("c2m/alive", []byte("yes"), false, 1); err != nil {
			t.Fatal(err)
		}
		eventually(t, "a publish while the handler blocks", func() bool { return c.Stats().Published == 1 })
		unblock()
		eventually(t, "the slow handler to finish", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(slow) == 3
		})
		mu.Lock()
		defer mu.Unlock()
		if strings.Join(slow, ",") != "0,1,2" {
			t.Errorf("slow handler saw %v, want 0,1,2 in order", slow)
		}
	})
}

// What the bridge publishes while disconnected is sent, in order, once it
// is back, and the birth message too. The birth goes last of the session's
// setup (session.go) while the publisher sends from the moment the session
// is up: the queued messages may reach the broker before it.
func TestPublishWhileDisconnected(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
		b := mqtttest.Start(t, mqtttest.WithKind(kind))
		p := mqtttest.NewProxy(t, b.Addr())
		cfg, _ := testConfig(t, p.URL())
		c := connect(t, cfg, nil)
		w := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{})
		w.Subscribe("c2m/#", 1)
		w.WaitFor(stateTopic, Online, 5*time.Second)

		p.SetDown(true)
		p.Sever()
		w.WaitFor(stateTopic, Offline, 10*time.Second)
		eventually(t, "Connected() false", func() bool { return !c.Connected() })
		for _, v := range []string{"1", "2", "3"} {
			if err := c.Publish("c2m/lamp/state", []byte(v), true, 1); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Publish("c2m/lamp/event", []byte("qos0"), false, 0); err != nil {
			t.Fatal(err)
		}
		if q := c.Stats().Queued; q != 4 {
			t.Errorf("Queued = %d while disconnected, want 4", q)
		}
		p.SetDown(false)
		seen := w.Until("c2m/lamp/event", "qos0", 10*time.Second)
		var order []string
		online := false
		for _, m := range seen {
			if m.Topic == stateTopic {
				online = online || m.Payload == Online
				continue
			}
			order = append(order, m.Topic+"="+m.Payload)
		}
		want := "c2m/lamp/state=1,c2m/lamp/state=2,c2m/lamp/state=3,c2m/lamp/event=qos0"
		if strings.Join(order, ",") != want {
			t.Errorf("after reconnect the broker got %+v\nwant, in order, %s", seen, want)
		}
		if !online {
			w.WaitFor(stateTopic, Online, 10*time.Second) // after them
		}
		late := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{})
		late.Subscribe("c2m/lamp/state", 1)
		if m := late.WaitFor("c2m/lamp/state", "3", 5*time.Second); !m.Retained {
			t.Errorf("state is not retained")
		}
	})
}
