package mqtt

// The intake: PUBLISH packets are read off the connection under paho and
// handed to the Client's dispatcher on the reading goroutine; once a
// message is handled, the goroutine that handled it writes its
// acknowledgement (PUBACK, or PUBREC at QoS 2) on the connection the
// message came in on. paho sees every other packet: CONNACK, SUBACK, the
// acknowledgements of the bridge's own publishes, PUBREL (it answers
// PUBCOMP), PINGRESP.
//
// Why: mosquitto sends a client at most 20 QoS 1 messages it has not
// acknowledged and drops what does not fit in its queue of 1000, so during
// a flood of commands what the broker drops for the bridge depends on how
// soon after a message arrives its acknowledgement leaves. Through paho a
// message passes five goroutines before its handler and its PUBACK two
// more (each a channel hand-over, and a timer for each acknowledgement):
// the bridge took fewer messages than mosquitto_sub beside it and, in long
// floods, missed last commands that mosquitto_sub received. Here a message
// passes one goroutine (its subscription's).

import (
	"errors"
	"io"
	"time"
)

// readPublishes is false only in the benchmark that measures the intake
// against paho's own reading of PUBLISH packets.
var readPublishes = true

// publish is an inbound PUBLISH read off the connection.
type publish struct {
	topic    string
	payload  []byte
	qos      byte
	retained bool
	dup      bool
	mid      uint16
}

// errMalformed ends a connection whose packets cannot be read.
var errMalformed = errors.New("mqtt: malformed packet from the broker")

// nextPacket reads one whole packet from the buffered connection: its
// first byte, the packet as it came (raw) and its body, the part of raw
// after the remaining length.
func (c *bufConn) nextPacket() (first byte, raw, body []byte, err error) {
	first, err = c.r.ReadByte()
	if err != nil {
		return 0, nil, nil, err
	}
	var lenBytes [4]byte
	length, mult := 0, 1
	for i := 0; ; i++ {
		if i == len(lenBytes) {
			return 0, nil, nil, errMalformed
		}
		b, err := c.r.ReadByte()
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return 0, nil, nil, err
		}
		lenBytes[i] = b
		length += int(b&0x7f) * mult
		mult *= 128
		if b&0x80 == 0 {
			raw = make([]byte, 2+i+length)
			raw[0] = first
			copy(raw[1:], lenBytes[:i+1])
			body = raw[2+i:]
			break
		}
	}
	if _, err := io.ReadFull(c.r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, nil, err
	}
	return first, raw, body, nil
}

// publishOf decodes a PUBLISH packet; false for any other packet.
func publishOf(first byte, body []byte) (publish, bool, error) {
	if first>>4 != 3 {
		return publish{}, false, nil
	}
	qos := (first >> 1) & 3
	if qos == 3 {
		return publish{}, false, errMalformed
	}
	if len(body) < 2 {
		return publish{}, false, errMalformed
	}
	topicEnd := 2 + (int(body[0])<<8 | int(body[1]))
	end := topicEnd
	if qos > 0 {
		end += 2 // the packet id
	}
	if len(body) < end {
		return publish{}, false, errMalformed
	}
	p := publish{topic: string(body[2:topicEnd]), payload: body[end:], qos: qos, retained: first&1 == 1, dup: first&8 == 8}
	if qos > 0 {
		p.mid = uint16(body[topicEnd])<<8 | uint16(body[topicEnd+1])
	}
	return p, true, nil
}

// readPackets is bufConn.Read once the broker accepted the connection:
// PUBLISH packets go to take, the others to paho, in whole packets.
func (c *bufConn) readPackets(p []byte) (int, error) {
	for len(c.rest) == 0 {
		first, raw, body, err := c.nextPacket()
		if err == nil {
			var pub publish
			var ok bool
			if pub, ok, err = publishOf(first, body); ok {
				c.take(c, pub)
				continue
			}
		}
		if err != nil {
			c.w.failed(err)
			return 0, err
		}
		c.rest = raw
	}
	n := copy(p, c.rest)
	c.rest = c.rest[n:]
	return n, nil
}

// acknowledge answers a handled message on this connection: PUBACK at QoS
// 1, PUBREC at QoS 2. It waits writeTimeout at most (a broker that stopped
// reading); a failure (the connection is gone) is left to the broker,
// which sends the message again on the next connection.
func (c *bufConn) acknowledge(qos byte, mid uint16) {
	kind := byte(0x40) // PUBACK
	if qos == 2 {
		kind = 0x50 // PUBREC
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.writeTimeout > 0 {
		limit := time.Now().Add(c.writeTimeout)
		if !c.deadline.IsZero() && c.deadline.Before(limit) {
			limit = c.deadline
		}
		_ = c.Conn.SetWriteDeadline(limit)
		defer func() { _ = c.Conn.SetWriteDeadline(c.deadline) }()
	}
	_, _ = c.Conn.Write([]byte{kind, 0x02, byte(mid >> 8), byte(mid)})
}
