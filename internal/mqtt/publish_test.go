package mqtt

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.mqtt.golang/packets"

	"cloud2mqtt/internal/mqtttest"
)

// ackHoldingBroker accepts MQTT connections (each on conn) and reads the
// client's PUBLISH packets, acknowledging them only when the test says so:
// how many publishes the client puts on the wire before an acknowledgement
// shows.
type ackHoldingBroker struct {
	t       *testing.T
	l       net.Listener
	conn    chan net.Conn
	present atomic.Bool // CONNACK's session present
}

func newAckHoldingBroker(t *testing.T) *ackHoldingBroker {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &ackHoldingBroker{t: t, l: l, conn: make(chan net.Conn, 4)}
	var mu sync.Mutex
	var conns []net.Conn
	closed := false
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		closed = true
		for _, c := range conns {
			_ = c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if closed {
				mu.Unlock()
				_ = c.Close()
				return
			}
			conns = append(conns, c)
			mu.Unlock()
			if _, err := packets.ReadPacket(c); err != nil { // CONNECT
				continue
			}
			ack := packets.NewControlPacket(packets.Connack).(*packets.ConnackPacket)
			ack.SessionPresent = b.present.Load()
			if ack.Write(c) == nil {
				select {
				case b.conn <- c:
				default:
					_ = c.Close()
				}
			}
		}
	}()
	return b
}

func (b *ackHoldingBroker) url() string { return "tcp://" + b.l.Addr().String() }

// next reads the next PUBLISH (skipping pings, answered).
func (b *ackHoldingBroker) next(c net.Conn) *packets.PublishPacket {
	b.t.Helper()
	for {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		p, err := packets.ReadPacket(c)
		if err != nil {
			b.t.Fatalf("reading the client's packets: %v", err)
		}
		switch p := p.(type) {
		case *packets.PublishPacket:
			return p
		case *packets.PingreqPacket:
			_ = packets.NewControlPacket(packets.Pingresp).Write(c)
		}
	}
}

func (b *ackHoldingBroker) ack(c net.Conn, p *packets.PublishPacket) {
	b.t.Helper()
	a := packets.NewControlPacket(packets.Puback).(*packets.PubackPacket)
	a.MessageID = p.MessageID
	if err := a.Write(c); err != nil {
		b.t.Fatal(err)
	}
}

// TestPublishesPipelined: the publisher puts publishWindow QoS 1
// publishes on the wire before the first acknowledgement comes (one at a
// time, a start's thousands of discovery configs cost a round trip each),
// and the broker gets them all in the order they were queued.
func TestPublishesPipelined(t *testing.T) {
	t.Parallel()
	b := newAckHoldingBroker(t)
	cfg, _ := testConfig(t, b.url())
	cfg.StateTopic = "" // no birth: the first publish is the test's
	c := connect(t, cfg, nil)
	conn := <-b.conn
	const n = 3 * publishWindow
	for i := range n {
		if err := c.Publish(fmt.Sprintf("c2m/d%03d/state", i), []byte("on"), true, 1); err != nil {
			t.Fatal(err)
		}
	}
	var got []*packets.PublishPacket
	for range publishWindow {
		got = append(got, b.next(conn)) // none acknowledged yet
	}
	for len(got) < n {
		b.ack(conn, got[len(got)-publishWindow])
		got = append(got, b.next(conn))
	}
	for _, p := range got[n-publishWindow:] {
		b.ack(conn, p)
	}
	for i, p := range got {
		if want := fmt.Sprintf("c2m/d%03d/state", i); p.TopicName != want || p.Qos != 1 || !p.Retain {
			t.Fatalf("publish %d: %s (QoS %d, retained %v), want %s, QoS 1, retained", i, p.TopicName, p.Qos, p.Retain, want)
		}
	}
	eventually(t, "every publish acknowledged", func() bool { s := c.Stats(); return s.Published == n && s.Queued == 0 })
}

// TestLastValueKeptAcrossADropMidBurst: the connection drops while a burst
// of retained values is on the wire, publishWindow unacknowledged at a
// time; after the reconnect the broker keeps each topic's last value (paho
// sends the unacknowledged ones again, in order, before anything newer).
func TestLastValueKeptAcrossADropMidBurst(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
		br := mqtttest.Start(t, mqtttest.WithKind(kind))
		p := mqtttest.NewProxy(t, br.Addr())
		cfg, _ := testConfig(t, p.URL())
		c := connect(t, cfg, nil)
		const topics, rounds = 10, 200
		topicOf := func(i int) string { return fmt.Sprintf("c2m/d%d/state", i) }
		for r := range rounds {
			for i := range topics {
				if err := c.Publish(topicOf(i), []byte(fmt.Sprint(r)), true, 1); err != nil {
					t.Fatal(err)
				}
			}
			if r == rounds/4 {
				p.Sever() // the reconnect comes through the proxy again
			}
		}
		eventually(t, "every message sent", func() bool { return c.Stats().Queued == 0 })
		late := mqtttest.NewClient(t, br.URL(), mqtttest.ClientOptions{})
		for i := range topics {
			late.Subscribe(topicOf(i), 1)
			if m := late.WaitFor(topicOf(i), fmt.Sprint(rounds-1), 10*time.Second); !m.Retained {
				t.Errorf("%s: the last value is not the retained one", topicOf(i))
			}
		}
	})
}

// TestBulkAfterTheRest: what PublishBulk queued waits for what Publish
// queued, even when queued later (the states of a start go before its
// thousands of discovery configs); each kind keeps its order.
func TestBulkAfterTheRest(t *testing.T) {
	t.Parallel()
	b := newAckHoldingBroker(t)
	cfg, _ := testConfig(t, b.url())
	cfg.StateTopic = ""
	c := connect(t, cfg, nil)
	conn := <-b.conn
	const bulk, first = 2 * publishWindow, 5
	for i := range bulk {
		if err := c.PublishBulk(fmt.Sprintf("homeassistant/light/d%03d/light/config", i), []byte("{}"), true, 1); err != nil {
			t.Fatal(err)
		}
	}
	var got []*packets.PublishPacket
	for range publishWindow {
		got = append(got, b.next(conn)) // the window is full of configs
	}
	for i := range first {
		if err := c.Publish(fmt.Sprintf("c2m/d%03d/state", i), []byte("on"), true, 1); err != nil {
			t.Fatal(err)
		}
	}
	for len(got) < bulk+first {
		b.ack(conn, got[len(got)-publishWindow])
		got = append(got, b.next(conn))
	}
	var order []string
	for _, p := range got {
		order = append(order, p.TopicName)
	}
	var want []string
	for i := range publishWindow {
		want = append(want, fmt.Sprintf("homeassistant/light/d%03d/light/config", i))
	}
	for i := range first {
		want = append(want, fmt.Sprintf("c2m/d%03d/state", i))
	}
	for i := publishWindow; i < bulk; i++ {
		want = append(want, fmt.Sprintf("homeassistant/light/d%03d/light/config", i))
	}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("the broker got\n%v\nwant\n%v", order, want)
	}
	for _, p := range got[len(got)-publishWindow:] {
		b.ack(conn, p)
	}
}
