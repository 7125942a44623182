package broker

// The packet-size guard: an MQTT 3.1.1 broker (mochi) reads every packet
// whole, so a client publishing 50 MB makes the embedded broker, which runs
// inside the bridge's process, hold 50 MB and relay it to every subscriber.
// The guard watches the bytes a client sends and closes its connection at
// the fixed header of any packet larger than the limit, before the broker
// reads the packet. The bridge's own client may send larger packets (its
// device list and discovery configs can exceed the limit): the broker
// trusts a connection once it has logged in with the owner's login
// (acl.go), never by the client id it claims, which anyone can.

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"

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
	max      int
	onRefuse func(remote string, size int)
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
	trusted atomic.Bool
	err     error
}

// trust exempts the connection from the limit: it logged in as the owner.
func (c *guard) trust() { c.trusted.Store(true) }

func (c *guard) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(p)
	for i := 0; i < n; {
		if c.left > 0 {
			k := min(c.left, n-i)
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
		if size > c.g.max && !c.trusted.Load() {
			if c.g.onRefuse != nil {
				c.g.onRefuse(remoteOf(c.Conn), size)
			}
			c.err = fmt.Errorf("%w (%d bytes, the limit is %d)", errTooLarge, size, c.g.max)
			break
		}
		c.left = size
	}
	if c.err != nil {
		_ = c.Conn.Close()
		return 0, c.err
	}
	return n, err
}

// remoteOf is the address a connection comes from, for the log.
func remoteOf(c net.Conn) string {
	if a := c.RemoteAddr(); a != nil {
		return a.String()
	}
	return ""
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
