//go:build mosquitto

package soak

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.mqtt.golang/packets"
)

// The flood's instruments on the wire: a tap that records what the broker
// delivered to one client, and a publisher as fast as a client can be.

// delivery is one PUBLISH the broker wrote to a client.
type delivery struct {
	topic, payload string
	mid            uint16 // its packet id, 0 at QoS 0 (not compared)
}

// tap forwards one client's connections to the broker and records every
// PUBLISH the broker writes to the client: what the broker delivered to it,
// which neither the broker nor the client reports one by one. The bytes
// pass through unchanged, each read forwarded before it is parsed.
type tap struct {
	t      testing.TB
	target string
	l      net.Listener
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
	got   []delivery
	// sentAt is when each QoS 1 PUBLISH waiting for its PUBACK went down
	// to the client, by packet id; acked the times from there to the
	// client's PUBACK.
	sentAt map[uint16]time.Time
	acked  []time.Duration
}

func newTap(t testing.TB, target string) *tap {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("soak: tap: %v", err)
	}
	p := &tap{t: t, target: target, l: l, sentAt: map[uint16]time.Time{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *tap) addr() string { return p.l.Addr().String() }

func (p *tap) close() {
	_ = p.l.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *tap) accept() {
	defer p.wg.Done()
	for {
		client, err := p.l.Accept()
		if err != nil {
			return
		}
		broker, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, broker)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			p.up(client, broker)
			_ = broker.Close()
		}()
		go func() {
			defer p.wg.Done()
			p.down(broker, client)
			_ = client.Close()
		}()
	}
}

// down forwards the broker's bytes to the client and parses them.
func (p *tap) down(broker, client net.Conn) {
	buf := make([]byte, 64<<10)
	var pending []byte
	for {
		n, err := broker.Read(buf)
		if n > 0 {
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
			pending = append(pending, buf[:n]...)
			pending = p.parse(pending)
		}
		if err != nil {
			return
		}
	}
}

// up forwards the client's bytes to the broker and times its PUBACKs.
func (p *tap) up(client, broker net.Conn) {
	buf := make([]byte, 64<<10)
	var pending []byte
	for {
		n, err := client.Read(buf)
		if n > 0 {
			if _, werr := broker.Write(buf[:n]); werr != nil {
				return
			}
			now := time.Now()
			pending = append(pending, buf[:n]...)
			for {
				kind, _, body, size, err := nextPacket(pending)
				if err != nil || size == 0 {
					break
				}
				if kind == packets.Puback && len(body) >= 2 {
					mid := uint16(body[0])<<8 | uint16(body[1])
					p.mu.Lock()
					if at, ok := p.sentAt[mid]; ok {
						p.acked = append(p.acked, now.Sub(at))
						delete(p.sentAt, mid)
					}
					p.mu.Unlock()
				}
				pending = pending[size:]
			}
			pending = append(pending[:0:0], pending...)
		}
		if err != nil {
			return
		}
	}
}

// ackTimes are the times from each delivery to its acknowledgement.
func (p *tap) ackTimes() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Duration(nil), p.acked...)
}

// parse records the complete packets at the start of b and returns what
// is left of it (the start of the next packet).
func (p *tap) parse(b []byte) []byte {
	for {
		kind, flags, body, n, err := nextPacket(b)
		if err != nil {
			p.t.Errorf("soak: tap: the broker sent %v", err)
			return nil
		}
		if n == 0 {
			return append(b[:0:0], b...)
		}
		switch kind {
		case packets.Publish:
			d, err := publishOf(flags, body)
			if err != nil {
				p.t.Errorf("soak: tap: %v", err)
				return nil
			}
			p.mu.Lock()
			p.got = append(p.got, d)
			if (flags>>1)&3 > 0 {
				p.sentAt[d.mid] = time.Now()
			}
			p.mu.Unlock()
		}
		b = b[n:]
	}
}

// nextPacket splits the first MQTT packet off b: its type, the flags of its
// fixed header, its body and its whole length (0 when b holds less than
// one packet).
func nextPacket(b []byte) (kind, flags byte, body []byte, n int, err error) {
	length, mult := 0, 1
	for i := 1; ; i++ {
		if i >= len(b) {
			return 0, 0, nil, 0, nil
		}
		if i > 4 {
			return 0, 0, nil, 0, errors.New("a remaining length of more than 4 bytes")
		}
		length += int(b[i]&0x7f) * mult
		mult *= 128
		if b[i]&0x80 == 0 {
			if len(b) < i+1+length {
				return 0, 0, nil, 0, nil
			}
			return b[0] >> 4, b[0] & 0x0f, b[i+1 : i+1+length], i + 1 + length, nil
		}
	}
}

// publishOf decodes a PUBLISH packet's body.
func publishOf(flags byte, body []byte) (delivery, error) {
	if len(body) < 2 {
		return delivery{}, errors.New("a PUBLISH too short for its topic length")
	}
	topicEnd := 2 + (int(body[0])<<8 | int(body[1]))
	end := topicEnd
	if (flags>>1)&3 > 0 {
		end += 2 // the packet id
	}
	if len(body) < end {
		return delivery{}, errors.New("a PUBLISH shorter than its topic")
	}
	d := delivery{topic: string(body[2:topicEnd]), payload: string(body[end:])}
	if end > topicEnd {
		d.mid = uint16(body[topicEnd])<<8 | uint16(body[topicEnd+1])
	}
	return d, nil
}

// delivered is what the broker has written to the client so far.
func (p *tap) delivered() []delivery {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]delivery(nil), p.got...)
}

// publisher is an MQTT client reduced to writing QoS 1 PUBLISH packets and
// counting the broker's PUBACKs: nothing between the test and the socket,
// so that "as fast as a client can publish" is the socket's pace.
type publisher struct {
	conn   net.Conn
	acks   atomic.Int64  // PUBACKs received
	ackled chan struct{} // a value after each PUBACK, coalesced
	done   chan struct{}
	mid    uint16
	write  sync.Mutex
}

func dialPublisher(t testing.TB, addr, clientID string) *publisher {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("soak: publisher: %v", err)
	}
	c := packets.NewControlPacket(packets.Connect).(*packets.ConnectPacket)
	c.ProtocolName, c.ProtocolVersion, c.CleanSession, c.ClientIdentifier, c.Keepalive = "MQTT", 4, true, clientID, 60
	if err := c.Write(conn); err != nil {
		t.Fatalf("soak: publisher: connect: %v", err)
	}
	ack, err := packets.ReadPacket(conn)
	if ca, ok := ack.(*packets.ConnackPacket); err != nil || !ok || ca.ReturnCode != 0 {
		t.Fatalf("soak: publisher: no CONNACK (%v, %v)", ack, err)
	}
	p := &publisher{conn: conn, ackled: make(chan struct{}, 1), done: make(chan struct{})}
	go p.read()
	t.Cleanup(p.close)
	return p
}

func (p *publisher) read() {
	defer close(p.done)
	for {
		pk, err := packets.ReadPacket(p.conn)
		if err != nil {
			return
		}
		if _, ok := pk.(*packets.PubackPacket); ok {
			p.acks.Add(1)
			select {
			case p.ackled <- struct{}{}:
			default:
			}
		}
	}
}

func (p *publisher) close() {
	p.write.Lock()
	_ = packets.NewControlPacket(packets.Disconnect).Write(p.conn)
	p.write.Unlock()
	_ = p.conn.Close()
	<-p.done
}

// encode appends one QoS 1 PUBLISH to buf.
func (p *publisher) encode(buf *bytes.Buffer, topic, payload string) {
	p.mid++
	if p.mid == 0 {
		p.mid = 1
	}
	pk := packets.NewControlPacket(packets.Publish).(*packets.PublishPacket)
	pk.TopicName, pk.Qos, pk.MessageID, pk.Payload = topic, 1, p.mid, []byte(payload)
	_ = pk.Write(buf)
}

// send writes msgs, perSecond of them a second in batches every 10 ms, or
// all in one write when perSecond is 0, and waits for every PUBACK. It
// returns how long the writing took.
func (p *publisher) send(t testing.TB, msgs []delivery, perSecond int) time.Duration {
	t.Helper()
	want := p.acks.Load() + int64(len(msgs))
	batch := len(msgs)
	if perSecond > 0 {
		batch = max(perSecond/100, 1)
	}
	start := time.Now()
	for i := 0; i < len(msgs); i += batch {
		var buf bytes.Buffer
		for _, m := range msgs[i:min(i+batch, len(msgs))] {
			p.encode(&buf, m.topic, m.payload)
		}
		if perSecond > 0 {
			// The flood's pace, on a fixed schedule: not a wait for an outcome.
			time.Sleep(time.Until(start.Add(time.Duration(i/batch) * 10 * time.Millisecond)))
		}
		p.write.Lock()
		_, err := p.conn.Write(buf.Bytes())
		p.write.Unlock()
		if err != nil {
			t.Fatalf("soak: publisher: %v", err)
		}
	}
	took := time.Since(start)
	timeout := time.After(60 * time.Second)
	for p.acks.Load() < want {
		select {
		case <-p.ackled:
		case <-p.done:
			t.Fatalf("soak: publisher: the broker closed the connection before acknowledging every message")
		case <-timeout:
			t.Fatalf("soak: publisher: not every message acknowledged within 60 s")
		}
	}
	return took
}

// publishOne writes one more message without waiting for its PUBACK (it
// is counted and drained by the next send, or never needed).
func (p *publisher) publishOne(t testing.TB, topic, payload string) {
	t.Helper()
	var buf bytes.Buffer
	p.encode(&buf, topic, payload)
	p.write.Lock()
	_, err := p.conn.Write(buf.Bytes())
	p.write.Unlock()
	if err != nil {
		t.Fatalf("soak: publisher: %v", err)
	}
}
