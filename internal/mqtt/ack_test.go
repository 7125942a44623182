package mqtt

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"cloud2mqtt/internal/mqtttest"
)

// recorder is a handler that records payloads and holds the first one
// until released.
type recorder struct {
	mu      sync.Mutex
	got     []string
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func newRecorder() *recorder {
	return &recorder{started: make(chan struct{}, 100), release: make(chan struct{})}
}

func (r *recorder) handle(_ string, p []byte, _ bool) {
	r.mu.Lock()
	first := len(r.got) == 0
	r.got = append(r.got, string(p))
	r.mu.Unlock()
	r.started <- struct{}{}
	if first {
		<-r.release
	}
}

func (r *recorder) unblock() { r.once.Do(func() { close(r.release) }) }

func (r *recorder) payloads() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// A message is acknowledged once handled, not once received: messages the
// bridge had received but not handled when it died are delivered again to
// the next run (the same client id), none lost.
func TestUnhandledMessagesComeBackAfterACrash(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
		b := mqtttest.Start(t, mqtttest.WithKind(kind))
		p := mqtttest.NewProxy(t, b.Addr())
		cfg, _ := testConfig(t, p.URL())
		c1, err := Connect(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		r1 := newRecorder()
		if err := c1.Subscribe("cmd/#", 1, r1.handle); err != nil {
			t.Fatal(err)
		}
		w := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{})
		for _, v := range []string{"1", "2", "3"} {
			w.Publish("cmd/x", v, false, 1)
		}
		<-r1.started // "1" is being handled, "2" and "3" wait in the queue
		eventually(t, "3 messages received", func() bool { return c1.Stats().Received == 3 })
		// The crash: the connection is gone before anything was handled
		// but "1"'s start, and the Client never runs again.
		p.SetDown(true)
		p.Sever()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_ = c1.Close(ctx) // its handler is stuck: Close gives up waiting
		cancel()
		defer r1.unblock()

		cfg.URL = b.URL()
		c2 := connect(t, cfg, nil)
		r2 := newRecorder()
		r2.unblock()
		if err := c2.Subscribe("cmd/#", 1, r2.handle); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the three messages delivered again", func() bool { return len(r2.payloads()) >= 3 })
		got := r2.payloads()
		if kind == mqtttest.Embedded {
			// mochi resends a session's unacknowledged messages in no
			// particular order (mosquitto keeps it); it runs inside the
			// bridge's process anyway, so it never outlives a crash.
			slices.Sort(got)
		}
		if !slices.Equal(got, []string{"1", "2", "3"}) {
			t.Errorf("after the crash the next run got %v, want [1 2 3]", got)
		}
	})
}

// Messages received but not handled when the connection drops are handled
// once, in order: the broker's redelivery of them on the next connection
// (DUP, the same packet ids) is acknowledged without handling them again,
// so an older command never follows a newer one.
func TestRedeliveryAfterReconnectIsNotHandledTwice(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
		b := mqtttest.Start(t, mqtttest.WithKind(kind))
		p := mqtttest.NewProxy(t, b.Addr())
		cfg, _ := testConfig(t, p.URL())
		c := connect(t, cfg, nil)
		r := newRecorder()
		defer r.unblock()
		if err := c.Subscribe("cmd/#", 1, r.handle); err != nil {
			t.Fatal(err)
		}
		w := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{})
		for _, v := range []string{"1", "2", "3"} {
			w.Publish("cmd/x", v, false, 1)
		}
		<-r.started
		eventually(t, "3 messages received", func() bool { return c.Stats().Received == 3 })
		p.Sever() // the client reconnects; the broker sends 1, 2 and 3 again
		eventually(t, "the messages sent again", func() bool { return c.Stats().Received >= 6 })
		r.unblock()
		w.Publish("cmd/x", "4", false, 1)
		eventually(t, "4 handled", func() bool { return slices.Contains(r.payloads(), "4") })
		if got := r.payloads(); !slices.Equal(got, []string{"1", "2", "3", "4"}) {
			t.Errorf("handled %v, want [1 2 3 4]", got)
		}
	})
}

// QoS 2 messages are handled and acknowledged too (PUBREC, then paho
// answers the broker's PUBREL), in order with QoS 1 ones on the same
// subscription. No subscription of the bridge asks for QoS 2; a user of
// the package may.
func TestQoS2MessagesStillArrive(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
		b := mqtttest.Start(t, mqtttest.WithKind(kind))
		cfg, _ := testConfig(t, b.URL())
		c := connect(t, cfg, nil)
		got := make(sink, 10)
		if err := c.Subscribe("q/#", 2, got.handler); err != nil {
			t.Fatal(err)
		}
		w := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{})
		w.Publish("q/two", "2", false, 2)
		w.Publish("q/one", "1", false, 1)
		w.Publish("q/two", "3", false, 2)
		for _, want := range [][2]string{{"q/two", "2"}, {"q/one", "1"}, {"q/two", "3"}} {
			if m := got.next(t); m != want {
				t.Errorf("handled %v, want %v", m, want)
			}
		}
	})
}
