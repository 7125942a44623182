package mqtttest

import (
	"bufio"
	"net"
	"sync"
	"testing"

	"github.com/eclipse/paho.mqtt.golang/packets"
)

// WindowBroker is a minimal MQTT 3.1.1 server for benchmarks of a client's
// intake, without a broker process competing for the CPU: it takes one
// client at a time, acknowledges its CONNECT, SUBSCRIBEs and PUBLISHes, and
// sends it messages as QoS 1 PUBLISHes with at most Window of them
// unacknowledged, as mosquitto does (max_inflight_messages 20). How fast
// the window empties is how fast the client takes messages in.
type WindowBroker struct {
	tb     testing.TB
	l      net.Listener
	window int

	mu         sync.Mutex
	conn       net.Conn
	w          *bufio.Writer
	subscribed chan struct{} // closed at the first SUBSCRIBE
	slots      chan struct{} // one per unacknowledged message
	mid        uint16
}

// NewWindowBroker listens on a free loopback port; the test's cleanup
// closes it.
func NewWindowBroker(tb testing.TB, window int) *WindowBroker {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("mqtttest: window broker: %v", err)
	}
	b := &WindowBroker{tb: tb, l: l, window: window, subscribed: make(chan struct{}), slots: make(chan struct{}, window)}
	go b.accept()
	tb.Cleanup(func() {
		l.Close()
		b.mu.Lock()
		if b.conn != nil {
			b.conn.Close()
		}
		b.mu.Unlock()
	})
	return b
}

// URL is the address for clients.
func (b *WindowBroker) URL() string { return "tcp://" + b.l.Addr().String() }

func (b *WindowBroker) accept() {
	for {
		c, err := b.l.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		if b.conn != nil {
			b.conn.Close()
		}
		b.conn, b.w = c, bufio.NewWriter(c)
		b.mu.Unlock()
		go b.serve(c)
	}
}

func (b *WindowBroker) write(p packets.ControlPacket) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p.Write(b.w) == nil {
		_ = b.w.Flush()
	}
}

func (b *WindowBroker) serve(c net.Conn) {
	r := bufio.NewReader(c)
	for {
		p, err := packets.ReadPacket(r)
		if err != nil {
			return
		}
		switch p := p.(type) {
		case *packets.ConnectPacket:
			ack := packets.NewControlPacket(packets.Connack).(*packets.ConnackPacket)
			b.write(ack)
		case *packets.SubscribePacket:
			ack := packets.NewControlPacket(packets.Suback).(*packets.SubackPacket)
			ack.MessageID = p.MessageID
			ack.ReturnCodes = append([]byte(nil), p.Qoss...)
			b.write(ack)
			select {
			case <-b.subscribed:
			default:
				close(b.subscribed)
			}
		case *packets.PublishPacket:
			if p.Qos == 1 {
				ack := packets.NewControlPacket(packets.Puback).(*packets.PubackPacket)
				ack.MessageID = p.MessageID
				b.write(ack)
			}
		case *packets.PubackPacket:
			<-b.slots
		case *packets.PingreqPacket:
			b.write(packets.NewControlPacket(packets.Pingresp))
		case *packets.DisconnectPacket:
			return
		}
	}
}

// Send sends n messages, the i-th to topic(i) with payload(i), each when
// the window has room, and returns once the client has acknowledged them
// all. It waits for the client's first SUBSCRIBE.
func (b *WindowBroker) Send(n int, topic func(i int) string, payload func(i int) []byte) {
	<-b.subscribed
	for i := range n {
		b.slots <- struct{}{}
		p := packets.NewControlPacket(packets.Publish).(*packets.PublishPacket)
		p.Qos = 1
		b.mid++
		if b.mid == 0 {
			b.mid = 1
		}
		p.MessageID = b.mid
		p.TopicName = topic(i)
		p.Payload = payload(i)
		b.write(p)
	}
	for range b.window {
		b.slots <- struct{}{}
	}
	for range b.window {
		<-b.slots
	}
}
