package mqtt

// The intake: QoS 0 and 1 PUBLISH packets are read off the connection under
// paho and handed to the Client's dispatcher on the reading goroutine, and
// acknowledged by writing the PUBACK on the connection they came in on once
// handled. paho sees every other packet (CONNACK, SUBACK, PUBACK of the
// bridge's own publishes, PINGRESP, and QoS 2 PUBLISHes, which no
// subscription of the bridge asks for).
//
// Why: mosquitto sends a client at most 20 QoS 1 messages it has not
// acknowledged and drops what does not fit in its queue of 1000, so during
// a flood of commands what the broker drops for the bridge depends on how
// soon after a message arrives its PUBACK leaves. Through paho a message
// passes five goroutines before its handler and its PUBACK two more (each
// a channel hand-over, and a timer for each acknowledgement); here it
// passes one (the subscription's), and the PUBACK is written by the
// goroutine that handled it.

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
// first byte, and the rest (the remaining length's bytes and the body)
// as raw bytes after it.
func (c *bufConn) nextPacket() (first byte, raw []byte, body []byte, err error) {
	first, err = c.r.ReadByte()
	if err != nil {
		return 0, nil, nil, err
	}
	var lenBytes [4]byte
	length, mult := 0, 1
	for i := 0; ; i++ {
		if i == 4 {
			return 0, nil, nil, errMalformed
		}
		b, err := c.r.ReadByte()
		if err != nil {
			return 0, nil, nil, err
		}
		lenBytes[i] = b
		length += int(b&0x7f) * mult
		mult *= 128
		if b&0x80 == 0 {
			raw = make([]byte, 1+i+1+length)
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

// publishOf decodes a QoS 0 or 1 PUBLISH packet; false for any other
// packet, which paho reads.
func publishOf(first byte, body []byte) (publish, bool, error) {
	qos := (first >> 1) & 3
	if first>>4 != 3 || qos > 1 {
		return publish{}, false, nil
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
		if err != nil {
			c.w.failed(err)
			return 0, err
		}
		pub, ok, err := publishOf(first, body)
		if err != nil {
			c.w.failed(err)
			return 0, err
		}
		if ok {
			c.take(c, pub)
			continue
		}
		c.rest = raw
	}
	n := copy(p, c.rest)
	c.rest = c.rest[n:]
	return n, nil
}

// puback acknowledges a QoS 1 message on this connection, waiting
// writeTimeout at most (a broker that stopped reading); a failure (the
// connection is gone) is left to the broker, which sends the message again
// on the next one.
func (c *bufConn) puback(mid uint16) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	limit := time.Now().Add(c.writeTimeout)
	if !c.deadline.IsZero() && c.deadline.Before(limit) {
		limit = c.deadline
	}
	if c.writeTimeout > 0 {
		_ = c.Conn.SetWriteDeadline(limit)
	}
	_, _ = c.Conn.Write([]byte{0x40, 0x02, byte(mid >> 8), byte(mid)})
	if c.writeTimeout > 0 {
		_ = c.Conn.SetWriteDeadline(c.deadline)
	}
}
