package mqtttest

// An MQTT 5 client for tests: Home Assistant moves its broker connection to
// MQTT 5 (2026.6), and the brokers the bridge runs beside must serve it.
// paho.mqtt.golang speaks 3.1.1 only; mochi's packets package, which the
// embedded broker is built on, encodes and decodes MQTT 5 packets, so this
// client is only the conversation: connect, subscribe, publish, acknowledge.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

// V5Options configures a V5Client. The zero value is what Home Assistant's
// client (paho-mqtt for Python, protocol MQTTv5, no connect properties)
// sends: Clean Start, no Session Expiry Interval (the session ends with the
// connection), no Receive Maximum (65535).
type V5Options struct {
	ClientID string // default: a unique id
	// Resume asks to go on with the session (Clean Start 0), as paho-mqtt
	// does on every connection after its first.
	Resume bool
	// SessionExpiry is the Session Expiry Interval in seconds (0: the
	// session ends with the network connection).
	SessionExpiry uint32
	// ReceiveMaximum, when not 0, is sent: the most QoS 1 and 2 messages
	// the broker may have unacknowledged towards this client
	// (libmosquitto's clients, mosquitto_sub among them, send 20).
	ReceiveMaximum uint16
	// HoldAcks leaves the QoS 1 messages received unacknowledged (a client
	// slow to acknowledge): the broker keeps them in flight.
	HoldAcks           bool
	Will               *Message
	Username, Password string
}

// V5Message is a message a V5Client received.
type V5Message struct {
	Topic, Payload string
	QoS            byte
	Retain         bool
	// Expiry is the Message Expiry Interval in seconds, 0 when the
	// message carries none.
	Expiry uint32
}

// SubOptions are an MQTT 5 subscription's options; the zero value is
// Home Assistant's (paho-mqtt's defaults): No Local off, Retain As
// Published off (a message that matches an established subscription
// arrives with the retain flag clear), Retain Handling 0 (the retained
// messages are sent at every subscribe).
type SubOptions struct {
	NoLocal           bool
	RetainAsPublished bool
	RetainHandling    byte
}

// V5Client is an MQTT 5 client for a test's side of the conversation. It
// keeps every message it receives, acknowledging each QoS 1 message as it
// arrives (unless V5Options.HoldAcks).
type V5Client struct {
	t        testing.TB
	id       string
	conn     net.Conn
	holdAcks bool
	// SessionPresent is the CONNACK's flag: the broker went on with a
	// session it kept.
	SessionPresent bool

	wmu sync.Mutex // one packet written at a time

	mu       sync.Mutex
	msgs     []V5Message
	next     int // Next's position in msgs
	acks     map[uint16]chan packets.Packet
	lastID   uint16
	err      error // why the connection ended; nil while it is open
	arrived  chan struct{}
	done     chan struct{} // the reader returned
	stopPing chan struct{}
	pinged   sync.WaitGroup
	closed   bool
}

// NewV5 connects an MQTT 5 client to url (tcp://host:port) or fails the
// test; t.Cleanup disconnects it.
func NewV5(t testing.TB, url string, o V5Options) *V5Client {
	t.Helper()
	c, err := DialV5(t, url, o)
	if err != nil {
		t.Fatalf("mqtttest: connect MQTT 5 client to %s: %v", url, err)
	}
	return c
}

// v5KeepAlive is the keep-alive a V5Client announces (Home Assistant's
// default); it pings at half of it.
const v5KeepAlive = 60 * time.Second

// DialV5 is NewV5 returning the connection's error: a refused CONNECT is
// an error naming the broker's reason code.
func DialV5(t testing.TB, url string, o V5Options) (*V5Client, error) {
	t.Helper()
	addr, ok := strings.CutPrefix(url, "tcp://")
	if !ok {
		return nil, fmt.Errorf("mqtttest: the MQTT 5 client speaks tcp:// only, not %q", url)
	}
	if o.ClientID == "" {
		o.ClientID = fmt.Sprintf("mqtttest-v5-%d", clientSeq.Add(1))
	}
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	c := &V5Client{t: t, id: o.ClientID, conn: conn, holdAcks: o.HoldAcks, acks: map[uint16]chan packets.Packet{},
		arrived: make(chan struct{}, 1), done: make(chan struct{}), stopPing: make(chan struct{})}
	connect := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Connect},
		ProtocolVersion: 5,
		Connect: packets.ConnectParams{
			ProtocolName:     []byte("MQTT"),
			Clean:            !o.Resume,
			Keepalive:        uint16(v5KeepAlive / time.Second),
			ClientIdentifier: o.ClientID,
			UsernameFlag:     o.Username != "",
			Username:         []byte(o.Username),
			PasswordFlag:     o.Password != "",
			Password:         []byte(o.Password),
		},
		Properties: packets.Properties{
			SessionExpiryInterval:     o.SessionExpiry,
			SessionExpiryIntervalFlag: o.SessionExpiry > 0,
			ReceiveMaximum:            o.ReceiveMaximum,
		},
	}
	if w := o.Will; w != nil {
		connect.Connect.WillFlag = true
		connect.Connect.WillTopic = w.Topic
		connect.Connect.WillPayload = []byte(w.Payload)
		connect.Connect.WillQos = w.QoS
		connect.Connect.WillRetain = w.Retained
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(conn)
	if err := c.write(connect); err != nil {
		_ = conn.Close()
		return nil, err
	}
	ack, err := readV5(r)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("no CONNACK: %w", err)
	}
	if ack.FixedHeader.Type != packets.Connack {
		_ = conn.Close()
		return nil, fmt.Errorf("got packet type %d, want a CONNACK", ack.FixedHeader.Type)
	}
	if ack.ReasonCode >= packets.ErrUnspecifiedError.Code {
		_ = conn.Close()
		return nil, fmt.Errorf("CONNACK refused: reason code 0x%02x %s", ack.ReasonCode, ack.Properties.ReasonString)
	}
	_ = conn.SetDeadline(time.Time{})
	c.SessionPresent = ack.SessionPresent
	go c.read(r)
	c.pinged.Add(1)
	go c.ping()
	t.Cleanup(c.Close)
	return c, nil
}

// Subscribe subscribes to the filters in one SUBSCRIBE (as Home Assistant
// sends its subscriptions) and waits for the SUBACK, failing the test
// unless every filter is granted qos.
func (c *V5Client) Subscribe(qos byte, o SubOptions, filters ...string) {
	c.t.Helper()
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1}, ProtocolVersion: 5}
	for _, f := range filters {
		pk.Filters = append(pk.Filters, packets.Subscription{Filter: f, Qos: qos, NoLocal: o.NoLocal,
			RetainAsPublished: o.RetainAsPublished, RetainHandling: o.RetainHandling})
	}
	ack := c.request(pk)
	if len(ack.ReasonCodes) != len(filters) {
		c.t.Fatalf("mqtttest: SUBACK for %v has %d reason codes", filters, len(ack.ReasonCodes))
	}
	for i, code := range ack.ReasonCodes {
		if code != qos {
			c.t.Fatalf("mqtttest: subscribe %s at QoS %d: reason code 0x%02x", filters[i], qos, code)
		}
	}
}

// Publish publishes m (its Expiry as the Message Expiry Interval) and, at
// QoS 1, waits for the PUBACK, failing the test unless it says success.
func (c *V5Client) Publish(m V5Message) {
	c.t.Helper()
	pk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Publish, Qos: m.QoS, Retain: m.Retain},
		ProtocolVersion: 5,
		TopicName:       m.Topic,
		Payload:         []byte(m.Payload),
		Properties:      packets.Properties{MessageExpiryInterval: m.Expiry},
	}
	switch m.QoS {
	case 0:
		if err := c.write(pk); err != nil {
			c.t.Fatalf("mqtttest: publish %s: %v", m.Topic, err)
		}
	case 1:
		if ack := c.request(pk); ack.ReasonCode >= packets.ErrUnspecifiedError.Code {
			c.t.Fatalf("mqtttest: publish %s: PUBACK reason code 0x%02x %s", m.Topic, ack.ReasonCode, ack.Properties.ReasonString)
		}
	default:
		c.t.Fatalf("mqtttest: the MQTT 5 client publishes at QoS 0 or 1, not %d", m.QoS)
	}
}

// Sync returns once the broker has handled every packet c sent before: it
// publishes a QoS 1 message to a topic of its own (no one's subscription)
// and waits for the PUBACK, which the broker sends after it handled the
// packets before it (a SUBSCRIBE's retained messages included).
func (c *V5Client) Sync() {
	c.t.Helper()
	c.Publish(V5Message{Topic: "mqtttest/sync/" + c.id, Payload: "sync", QoS: 1})
}

// request writes pk with a fresh packet id and returns its acknowledgement.
func (c *V5Client) request(pk packets.Packet) packets.Packet {
	c.t.Helper()
	ch := make(chan packets.Packet, 1)
	c.mu.Lock()
	for {
		c.lastID++
		if _, used := c.acks[c.lastID]; c.lastID != 0 && !used {
			break
		}
	}
	pk.PacketID = c.lastID
	c.acks[pk.PacketID] = ch
	c.mu.Unlock()
	if err := c.write(pk); err != nil {
		c.t.Fatalf("mqtttest: send packet type %d: %v", pk.FixedHeader.Type, err)
	}
	select {
	case ack := <-ch:
		return ack
	case <-c.done:
		c.t.Fatalf("mqtttest: connection ended before packet %d was acknowledged: %v", pk.PacketID, c.Err())
	case <-time.After(10 * time.Second):
		c.t.Fatalf("mqtttest: packet %d (type %d) not acknowledged within 10s", pk.PacketID, pk.FixedHeader.Type)
	}
	return packets.Packet{}
}

// Received returns every message received so far, in order.
func (c *V5Client) Received() []V5Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]V5Message(nil), c.msgs...)
}

// Arrived is signalled (without blocking, so at least once) after each
// message received and when the connection ends.
func (c *V5Client) Arrived() <-chan struct{} { return c.arrived }

// Next returns the next message Next has not returned yet, or false after
// timeout.
func (c *V5Client) Next(timeout time.Duration) (V5Message, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		if c.next < len(c.msgs) {
			m := c.msgs[c.next]
			c.next++
			c.mu.Unlock()
			return m, true
		}
		c.mu.Unlock()
		select {
		case <-c.arrived:
		case <-deadline.C:
			return V5Message{}, false
		}
	}
}

// Err is why the connection ended (a DISCONNECT's reason code, a read
// error), nil while it is open.
func (c *V5Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close sends a DISCONNECT (normal disconnection: the broker drops the
// will) and closes the connection; it is safe to call more than once.
func (c *V5Client) Close() {
	if c.stop() {
		_ = c.write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect}, ProtocolVersion: 5})
	}
	c.end()
}

// Drop closes the connection without a DISCONNECT, resetting it, as a
// crashed client or a lost network would: the broker publishes the will.
func (c *V5Client) Drop() {
	if c.stop() {
		if tc, ok := c.conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
	}
	c.end()
}

// stop marks c closed and stops its pings; false if it already was.
func (c *V5Client) stop() bool {
	c.mu.Lock()
	was := c.closed
	c.closed = true
	c.mu.Unlock()
	if was {
		return false
	}
	close(c.stopPing)
	c.pinged.Wait()
	return true
}

func (c *V5Client) end() {
	_ = c.conn.Close()
	<-c.done
}

func (c *V5Client) ping() {
	defer c.pinged.Done()
	t := time.NewTicker(v5KeepAlive / 2)
	defer t.Stop()
	for {
		select {
		case <-c.stopPing:
			return
		case <-t.C:
			_ = c.write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingreq}, ProtocolVersion: 5})
		}
	}
}

// read receives until the connection ends: messages are kept (and QoS 1
// acknowledged at once), acknowledgements handed to their requests.
func (c *V5Client) read(r *bufio.Reader) {
	defer close(c.done)
	err := c.receive(r)
	c.mu.Lock()
	if c.closed && (errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF)) {
		err = errors.New("closed by the test")
	}
	c.err = err
	c.mu.Unlock()
	c.signal()
}

func (c *V5Client) receive(r *bufio.Reader) error {
	for {
		pk, err := readV5(r)
		if err != nil {
			return err
		}
		switch pk.FixedHeader.Type {
		case packets.Publish:
			if pk.FixedHeader.Qos > 1 {
				return fmt.Errorf("the broker sent a QoS %d message on %s; the client subscribes at QoS 1 at most", pk.FixedHeader.Qos, pk.TopicName)
			}
			c.mu.Lock()
			c.msgs = append(c.msgs, V5Message{Topic: pk.TopicName, Payload: string(pk.Payload), QoS: pk.FixedHeader.Qos,
				Retain: pk.FixedHeader.Retain, Expiry: pk.Properties.MessageExpiryInterval})
			c.mu.Unlock()
			c.signal()
			if pk.FixedHeader.Qos == 1 && !c.holdAcks {
				ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, ProtocolVersion: 5, PacketID: pk.PacketID}
				if err := c.write(ack); err != nil {
					return err
				}
			}
		case packets.Puback, packets.Suback:
			c.mu.Lock()
			ch, ok := c.acks[pk.PacketID]
			delete(c.acks, pk.PacketID)
			c.mu.Unlock()
			if !ok {
				return fmt.Errorf("the broker acknowledged packet %d, which is not in flight", pk.PacketID)
			}
			ch <- pk
		case packets.Disconnect:
			return fmt.Errorf("the broker disconnected: reason code 0x%02x %s", pk.ReasonCode, pk.Properties.ReasonString)
		case packets.Pingresp:
		default:
			return fmt.Errorf("unexpected packet type %d from the broker", pk.FixedHeader.Type)
		}
	}
}

func (c *V5Client) signal() {
	select {
	case c.arrived <- struct{}{}:
	default:
	}
}

// write encodes and sends one packet.
func (c *V5Client) write(pk packets.Packet) error {
	var buf bytes.Buffer
	var err error
	switch pk.FixedHeader.Type {
	case packets.Connect:
		err = pk.ConnectEncode(&buf)
	case packets.Publish:
		err = pk.PublishEncode(&buf)
	case packets.Puback:
		err = pk.PubackEncode(&buf)
	case packets.Subscribe:
		err = pk.SubscribeEncode(&buf)
	case packets.Pingreq:
		err = pk.PingreqEncode(&buf)
	case packets.Disconnect:
		err = pk.DisconnectEncode(&buf)
	default:
		err = fmt.Errorf("mqtttest: the MQTT 5 client does not send packet type %d", pk.FixedHeader.Type)
	}
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.conn.Write(buf.Bytes())
	return err
}

// readV5 reads one MQTT 5 packet from the broker.
func readV5(r *bufio.Reader) (packets.Packet, error) {
	var pk packets.Packet
	b, err := r.ReadByte()
	if err != nil {
		return pk, err
	}
	if err := pk.FixedHeader.Decode(b); err != nil {
		return pk, err
	}
	n, _, err := packets.DecodeLength(r)
	if err != nil {
		return pk, err
	}
	pk.FixedHeader.Remaining = n
	pk.ProtocolVersion = 5
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return pk, err
	}
	switch pk.FixedHeader.Type {
	case packets.Connack:
		err = pk.ConnackDecode(body)
	case packets.Publish:
		err = pk.PublishDecode(body)
	case packets.Puback:
		err = pk.PubackDecode(body)
	case packets.Suback:
		err = pk.SubackDecode(body)
	case packets.Disconnect:
		err = pk.DisconnectDecode(body)
	case packets.Pingresp:
	default:
		err = fmt.Errorf("unexpected packet type %d", pk.FixedHeader.Type)
	}
	return pk, err
}
