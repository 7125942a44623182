package broker

// The packet-size guard: an MQTT 3.1.1 broker (mochi) reads every packet
// whole, so a client publishing 50 MB makes the embedded broker, which runs
// inside the bridge's process, hold 50 MB and relay it to every subscriber.
// The guard watches the bytes a client sends and closes its connection at
// the fixed header of any packet larger than the limit, before the broker
// reads the packet. The bridge's own client (Options.Unlimited) may send
// larger packets: its device list and discovery configs can exceed it.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"

	"github.com/mochi-mqtt/server/v2/listeners"
)

// DefaultMaxPacketSize is Options.MaxPacketSize's value for a command: 64
// KiB of payload and room for its topic.
const DefaultMaxPacketSize = 64<<10 + 1<<10

// errTooLarge closes a connection that sent a packet over the limit.
var errTooLarge = errors.New("broker: packet over the size limit; connection closed")

// guarded is a listener whose connections go through a guard.
type guarded struct {
	listeners.Listener
	max       int
	unlimited []string
	onRefuse  func(client string, size int)
}

func (g *guarded) Serve(establish listeners.EstablishFn) {
	g.Listener.Serve(func(id string, c net.Conn) error {
		return establish(id, &guard{Conn: c, g: g})
	})
}

// guard is one client's connection, parsed as packets go by.
type guard struct {
	net.Conn
	g *guarded

	head    []byte // the fixed header being read
	left    int    // bytes of the current packet's body still to pass
	connect []byte // the first packet's body, kept to learn the client id
	first   bool   // the first packet's header was read
	client  string
	trusted bool
	err     error
}

func (c *guard) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(p)
	for i := 0; i < n; {
		if c.left > 0 {
			k := min(c.left, n-i)
			if c.connect != nil && len(c.connect) < cap(c.connect) {
				c.connect = append(c.connect, p[i:i+k]...)
				if len(c.connect) == cap(c.connect) {
					c.learnClient()
				}
			}
			c.left -= k
			i += k
			continue
		}
		c.head = append(c.head, p[i])
		i++
		size, done, bad := remaining(c.head)
		if bad {
			c.err = errTooLarge
			break
		}
		if !done {
			continue
		}
		c.head = c.head[:0]
		if !c.trusted && size > c.g.max {
			if c.g.onRefuse != nil {
				c.g.onRefuse(c.client, size)
			}
			c.err = fmt.Errorf("%w (%d bytes, the limit is %d)", errTooLarge, size, c.g.max)
			break
		}
		if !c.first {
			c.first = true
			c.connect = make([]byte, 0, size)
			if size == 0 {
				c.learnClient()
			}
		}
		c.left = size
	}
	if c.err != nil {
		_ = c.Conn.Close()
		return 0, c.err
	}
	return n, err
}

// remaining decodes the remaining length of a fixed header (type byte and
// 1 to 4 length bytes); done is false while more bytes are needed, bad
// when the length is malformed.
func remaining(h []byte) (size int, done, bad bool) {
	if len(h) < 2 {
		return 0, false, false
	}
	mult := 1
	for i := 1; i < len(h); i++ {
		size += int(h[i]&0x7f) * mult
		if h[i]&0x80 == 0 {
			return size, true, false
		}
		mult *= 128
		if i == 4 {
			return 0, false, true
		}
	}
	return 0, false, false
}

// learnClient reads the client id from the CONNECT body: protocol name,
// level, flags, keep-alive, (MQTT 5: properties), client id.
func (c *guard) learnClient() {
	b := c.connect
	if len(b) < 2 {
		return
	}
	off := 2 + int(binary.BigEndian.Uint16(b))
	if len(b) < off+4 {
		return
	}
	level := b[off]
	off += 4 // level, flags, keep-alive
	if level == 5 {
		n, used := 0, 0
		for mult := 1; off+used < len(b) && used < 4; mult *= 128 {
			x := b[off+used]
			n += int(x&0x7f) * mult
			used++
			if x&0x80 == 0 {
				break
			}
		}
		off += used + n
	}
	if len(b) < off+2 {
		return
	}
	l := int(binary.BigEndian.Uint16(b[off:]))
	if len(b) < off+2+l {
		return
	}
	c.client = string(b[off+2 : off+2+l])
	c.trusted = c.client != "" && slices.Contains(c.g.unlimited, c.client)
	c.connect = nil
}
