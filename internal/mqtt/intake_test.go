package mqtt

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"testing/iotest"
	"time"

	"github.com/eclipse/paho.mqtt.golang/packets"

	"cloud2mqtt/internal/mqtttest"
)

// encode writes packets as the broker would send them.
func encode(t testing.TB, pks ...packets.ControlPacket) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, p := range pks {
		if err := p.Write(&b); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func publishPacket(topic string, payload []byte, qos byte, mid uint16, retain, dup bool) *packets.PublishPacket {
	p := packets.NewControlPacket(packets.Publish).(*packets.PublishPacket)
	p.TopicName, p.Payload, p.Qos, p.MessageID, p.Retain, p.Dup = topic, payload, qos, mid, retain, dup
	return p
}

// intakeOf reads stream as a connection the broker accepted: the
// publishes the intake takes, and the bytes it leaves to paho, read in
// paho's small reads.
func intakeOf(stream io.Reader) (taken []publish, forPaho []byte, err error) {
	c := &bufConn{r: bufio.NewReaderSize(stream, readBuffer), w: &wire{scheme: "tcp"}, intake: true,
		take: func(_ *bufConn, p publish) { taken = append(taken, p) }}
	buf := make([]byte, 3)
	for {
		n, err := c.Read(buf)
		forPaho = append(forPaho, buf[:n]...)
		if err != nil {
			return taken, forPaho, err
		}
	}
}

// The intake takes the PUBLISH packets whole, whatever reads they arrive
// in (one byte at a time, or a payload larger than the read buffer), and
// leaves every other packet to paho unchanged and in order: the
// acknowledgements of the bridge's own messages, PUBREL, the pings.
func TestIntakeSplitsTheStreamIntoPackets(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("x"), 3*readBuffer+5)
	suback := packets.NewControlPacket(packets.Suback).(*packets.SubackPacket)
	suback.MessageID, suback.ReturnCodes = 7, []byte{1}
	puback := packets.NewControlPacket(packets.Puback).(*packets.PubackPacket)
	puback.MessageID = 9
	pubrel := packets.NewControlPacket(packets.Pubrel).(*packets.PubrelPacket)
	pubrel.MessageID = 12
	forPaho := []packets.ControlPacket{suback, pubrel, packets.NewControlPacket(packets.Pingresp), puback}
	want := []publish{
		{topic: "c2m/a/set/brightness", payload: []byte("57"), qos: 1, mid: 1},
		{topic: "c2m/b/set", payload: []byte(`{"brightness":40}`), qos: 0},
		{topic: "c2m/a/set/brightness", payload: []byte("58"), qos: 1, mid: 65535, retained: true, dup: true},
		{topic: "c2m/big/set", payload: big, qos: 1, mid: 2},
		{topic: "c2m/a/set", payload: []byte("2"), qos: 2, mid: 12},
		{topic: "c2m/empty/set", payload: []byte{}, qos: 1, mid: 3},
	}
	var stream []packets.ControlPacket
	for i, p := range want {
		stream = append(stream, publishPacket(p.topic, p.payload, p.qos, p.mid, p.retained, p.dup))
		if i < len(forPaho) {
			stream = append(stream, forPaho[i])
		}
	}
	raw := encode(t, stream...)
	for name, r := range map[string]io.Reader{
		"whole":       bytes.NewReader(raw),
		"byte a read": iotest.OneByteReader(bytes.NewReader(raw)),
		"half reads":  iotest.HalfReader(bytes.NewReader(raw)),
	} {
		t.Run(name, func(t *testing.T) {
			taken, paho, err := intakeOf(r)
			if err != io.EOF {
				t.Fatalf("read ended with %v, want EOF", err)
			}
			if len(taken) != len(want) {
				t.Fatalf("took %d publishes, want %d", len(taken), len(want))
			}
			for i, p := range taken {
				w := want[i]
				if p.topic != w.topic || !bytes.Equal(p.payload, w.payload) || p.qos != w.qos || p.mid != w.mid || p.retained != w.retained || p.dup != w.dup {
					t.Errorf("publish %d: got %+v (%d bytes), want %+v (%d bytes)", i, p.topic, len(p.payload), w.topic, len(w.payload))
				}
			}
			if wantPaho := encode(t, forPaho...); !bytes.Equal(paho, wantPaho) {
				t.Errorf("paho read % x, want % x", paho, wantPaho)
			}
		})
	}
}

// A stream that ends inside a packet, or whose remaining length runs over
// four bytes, ends the connection with an error (paho then reconnects);
// nothing half read is taken.
func TestIntakeRefusesBrokenPackets(t *testing.T) {
	t.Parallel()
	whole := encode(t, publishPacket("c2m/a/set", []byte("1"), 1, 1, false, false))
	for name, tc := range map[string]struct {
		stream []byte
		want   error
	}{
		"cut in the body":           {whole[:len(whole)-1], io.ErrUnexpectedEOF},
		"cut in the length":         {[]byte{0x32, 0x80}, io.ErrUnexpectedEOF},
		"QoS 3":                     {[]byte{0x36, 0x03, 0x00, 0x01, 'c'}, errMalformed},
		"length of five bytes":      {[]byte{0x32, 0x80, 0x80, 0x80, 0x80, 0x01}, errMalformed},
		"topic longer than body":    {[]byte{0x32, 0x04, 0x00, 0x09, 'c', 'c'}, errMalformed},
		"no room for the packet id": {[]byte{0x32, 0x03, 0x00, 0x01, 'c'}, errMalformed},
		"no topic length":           {[]byte{0x30, 0x01, 0x00}, errMalformed},
	} {
		t.Run(name, func(t *testing.T) {
			taken, _, err := intakeOf(bytes.NewReader(tc.stream))
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if len(taken) != 0 {
				t.Errorf("took %d publishes from a broken stream", len(taken))
			}
		})
	}
}

// QoS 2 messages are taken and acknowledged too (PUBREC, then paho answers
// the broker's PUBREL), in order with QoS 1 ones on the same subscription.
// No subscription of the bridge asks for QoS 2; a user of the package may.
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

// An acknowledgement waits for the connection's writes at most
// PublishTimeout: a broker that stopped reading fails it (the broker sends
// the message again on the next connection), it does not hold the
// subscription's goroutine for good.
func TestAcknowledgementGivesUpOnAStuckConnection(t *testing.T) {
	t.Parallel()
	client, server := net.Pipe() // unbuffered: a write blocks until the other side reads
	defer server.Close()
	c := &bufConn{Conn: client, w: &wire{}, writeTimeout: 50 * time.Millisecond}
	done := make(chan struct{})
	go func() {
		c.acknowledge(1, 1)
		close(done)
	}()
	<-done // the test's own timeout is the bound; the deadline makes it return
	// paho's deadline (none) is back once the acknowledgement is done.
	go func() { _, _ = io.Copy(io.Discard, server) }()
	if _, err := c.Write([]byte{0xc0, 0}); err != nil {
		t.Errorf("paho's write after a timed-out acknowledgement: %v", err)
	}
}

// FuzzIntake: whatever the broker sends after accepting the connection,
// the intake neither panics nor hands paho a PUBLISH, and what it leaves to
// paho comes in whole packets.
func FuzzIntake(f *testing.F) {
	f.Add(encode(f, publishPacket("c2m/a/set", []byte("1"), 1, 1, false, false), packets.NewControlPacket(packets.Pingresp)))
	f.Add(encode(f, publishPacket("c2m/a/set", []byte(`{"x":1}`), 0, 0, true, false), publishPacket("q", []byte("2"), 2, 3, false, true)))
	f.Add([]byte{0x32, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Add([]byte{0x40, 0x02, 0x00, 0x01, 0x32, 0x03, 0x00, 0x01, 'c'})
	f.Add([]byte{0x90, 0x03, 0x00, 0x07, 0x01, 0xd0, 0x00})
	f.Fuzz(func(t *testing.T, stream []byte) {
		taken, paho, _ := intakeOf(bytes.NewReader(stream))
		for _, p := range taken {
			if p.qos > 2 || len(p.topic)+len(p.payload) > len(stream) {
				t.Fatalf("took %+v from %d bytes", p, len(stream))
			}
		}
		for len(paho) > 0 {
			length, i := 0, 1
			for mult := 1; ; mult *= 128 {
				if i >= len(paho) || i > 4 {
					t.Fatalf("paho was left a broken fixed header: % x", paho)
				}
				b := paho[i]
				i++
				length += int(b&0x7f) * mult
				if b&0x80 == 0 {
					break
				}
			}
			if len(paho) < i+length {
				t.Fatalf("paho was left part of a packet: % x", paho)
			}
			if paho[0]>>4 == packets.Publish {
				t.Fatalf("paho was left a PUBLISH: % x", paho)
			}
			paho = paho[i+length:]
		}
	})
}
