package mqtt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.mqtt.golang/packets"

	"cloud2mqtt/internal/clock/clocktest"
)

// connectCounted is a Client on a clocktest clock, connected to a broker
// that acknowledges only when told (no birth: the publishes are the
// test's), and the broker's side of the connection.
func connectCounted(t *testing.T) (*ackHoldingBroker, *clocktest.Clock, *Client, net.Conn) {
	t.Helper()
	b := newAckHoldingBroker(t)
	cfg, _ := testConfig(t, b.url())
	cfg.StateTopic = ""
	clk := clocktest.New()
	cfg.Clock = clk
	return b, clk, connect(t, cfg, nil), <-b.conn
}

// stillBusy fails the test when clk becomes idle within a moment: work is
// in hand that nothing has let go of.
func stillBusy(t *testing.T, clk *clocktest.Clock, when string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := clk.WaitIdle(ctx); err == nil {
		t.Fatalf("%s: the clock is idle", when)
	}
}

// TestPublishesAreWorkInHand: a message queued by Publish is work in hand
// on Config.Clock from Publish on, on the wire until the broker
// acknowledges it; once every one is, none is.
func TestPublishesAreWorkInHand(t *testing.T) {
	t.Parallel()
	b, clk, c, conn := connectCounted(t)
	clk.IdleWithin(t, 10*time.Second, "connected")

	const n = 5
	for i := range n {
		if err := c.Publish(fmt.Sprintf("c2m/d%d/state", i), []byte("on"), true, 1); err != nil {
			t.Fatal(err)
		}
	}
	if clk.Idle() {
		t.Fatalf("idle with %d publishes queued", n)
	}
	var got []*packets.PublishPacket
	for range n {
		got = append(got, b.next(conn))
	}
	stillBusy(t, clk, "none acknowledged")
	for _, p := range got[:n-1] {
		b.ack(conn, p)
	}
	stillBusy(t, clk, "the last one not acknowledged")
	if h := strings.Join(clk.Holders(), "; "); !strings.Contains(h, fmt.Sprintf("c2m/d%d/state", n-1)) {
		t.Errorf("work in hand: %s; want the last publish among it", h)
	}
	b.ack(conn, got[n-1])
	clk.IdleWithin(t, 10*time.Second, "every publish acknowledged")
	if s := c.Stats(); s.Published != n || s.Queued != 0 {
		t.Errorf("Stats() = %+v once idle, want %d published, none queued", s, n)
	}
}

// TestPublishesLostWithTheConnectionAreWorkInHand: a publish on the wire
// when the connection drops stays work in hand while paho keeps it to send
// again, until the broker acknowledges it on the next connection.
func TestPublishesLostWithTheConnectionAreWorkInHand(t *testing.T) {
	t.Parallel()
	b, clk, c, first := connectCounted(t)

	const n = 3
	for i := range n {
		if err := c.Publish(fmt.Sprintf("c2m/d%d/state", i), []byte("on"), true, 1); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		b.next(first)
	}
	_ = first.Close() // none acknowledged
	second := <-b.conn
	var again []*packets.PublishPacket
	for range n {
		again = append(again, b.next(second))
	}
	stillBusy(t, clk, "sent again, not acknowledged")
	for i, p := range again {
		if !p.Dup || p.TopicName != fmt.Sprintf("c2m/d%d/state", i) {
			t.Errorf("publish %d on the second connection: %s, dup %v", i, p.TopicName, p.Dup)
		}
		b.ack(second, p)
	}
	clk.IdleWithin(t, 10*time.Second, "every publish acknowledged on the second connection")
}

// TestCloseGivesUpPublishes: what Close does not publish (the broker is
// gone) is no longer work in hand once Close returns.
func TestCloseGivesUpPublishes(t *testing.T) {
	t.Parallel()
	b, clk, c, conn := connectCounted(t)
	for i := range 3 {
		if err := c.Publish(fmt.Sprintf("c2m/d%d/state", i), []byte("on"), true, 1); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		b.next(conn)
	}
	_ = b.l.Close() // no reconnection
	_ = conn.Close()
	for i := range publishWindow + 10 { // some wait in the queue
		if err := c.Publish(fmt.Sprintf("c2m/e%d/state", i), []byte("on"), true, 1); err != nil {
			t.Fatal(err)
		}
	}
	stillBusy(t, clk, "disconnected")
	closeClient(t, c)
	clk.IdleWithin(t, 10*time.Second, "closed")
}

// TestInboundMessagesAreWorkInHand: a message is work in hand from when
// paho hands it over until it is handled and acknowledged, and its
// acknowledgement goes only once its handler returned.
func TestInboundMessagesAreWorkInHand(t *testing.T) {
	t.Parallel()
	b, clk, c, conn := connectCounted(t)
	r := newRecorder()
	defer r.unblock() // before Close, which waits for handlers
	subscribed := make(chan error, 1)
	go func() { subscribed <- c.Subscribe("cmd/#", 1, r.handle) }()
	sub, ok := expect[*packets.SubscribePacket](b, conn, 10*time.Second)
	if !ok {
		t.Fatal("no SUBSCRIBE")
	}
	ack := packets.NewControlPacket(packets.Suback).(*packets.SubackPacket)
	ack.MessageID, ack.ReturnCodes = sub.MessageID, []byte{1}
	if err := ack.Write(conn); err != nil {
		t.Fatal(err)
	}
	if err := <-subscribed; err != nil {
		t.Fatal(err)
	}
	clk.IdleWithin(t, 10*time.Second, "subscribed")

	for i, v := range []string{"1", "2"} {
		p := packets.NewControlPacket(packets.Publish).(*packets.PublishPacket)
		p.TopicName, p.Payload, p.Qos, p.MessageID = "cmd/a", []byte(v), 1, uint16(i+1)
		if err := p.Write(conn); err != nil {
			t.Fatal(err)
		}
	}
	<-r.started // the first message's handler blocks
	stillBusy(t, clk, "a handler running")
	if p, ok := expect[*packets.PubackPacket](b, conn, 100*time.Millisecond); ok {
		t.Fatalf("message %d acknowledged while a handler runs", p.MessageID)
	}
	r.unblock()
	<-r.started
	clk.IdleWithin(t, 10*time.Second, "both handled")
	for _, want := range []uint16{1, 2} {
		if p, ok := expect[*packets.PubackPacket](b, conn, 10*time.Second); !ok || p.MessageID != want {
			t.Fatalf("acknowledgement %v (%v), want of message %d", p, ok, want)
		}
	}
	if got := r.payloads(); strings.Join(got, ",") != "1,2" {
		t.Errorf("handled %v, want 1,2", got)
	}
}

// expect reads the client's packets until one of type P (answering
// pings); false when none comes within wait.
func expect[P packets.ControlPacket](b *ackHoldingBroker, c net.Conn, wait time.Duration) (P, bool) {
	b.t.Helper()
	for {
		_ = c.SetReadDeadline(time.Now().Add(wait))
		p, err := packets.ReadPacket(c)
		var nerr net.Error
		if errors.As(err, &nerr) && nerr.Timeout() {
			var none P
			return none, false
		}
		if err != nil {
			b.t.Fatalf("reading the client's packets: %v", err)
		}
		if _, ok := p.(*packets.PingreqPacket); ok {
			_ = packets.NewControlPacket(packets.Pingresp).Write(c)
		}
		if q, ok := p.(P); ok {
			return q, true
		}
	}
}
