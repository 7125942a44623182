package mqtt

// The connection under paho: dialled as paho dials it, with reads through a
// buffer. paho reads each packet in three reads at least (the type byte,
// each byte of the length, the rest); on the bare socket that is three
// system calls a message, and during a flood of commands the broker's
// window of unacknowledged messages (mosquitto: 20) empties no faster than
// the bridge reads. Buffered, one read takes in every packet that arrived.
// Once the broker accepted the connection, the PUBLISH packets are read off
// it for the Client (intake.go) and paho reads the others.
//
// Writes, paho's and the acknowledgements of handled messages, go one at a
// time (gorilla's WebSocket allows no concurrent write and deadline).
//
// Each connection keeps a record (wire) of what the server sent first and
// how the connection ended: a failed attempt is explained from it (a TLS
// handshake that a plain port closed, a TLS alert answering plain MQTT, an
// HTTP answer; diagnose.go), and a connection the broker closes right after
// accepting it counts towards another client with the same id (takeover.go).

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/url"
	"os"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"golang.org/x/net/proxy"
)

// readBuffer is the size of the connection's read buffer.
const readBuffer = 32 << 10

// bufferReads is false only in the benchmark that measures what the buffer
// brings (without the intake, which reads through it).
var bufferReads = true

// headSize is how many of the server's first bytes a wire keeps.
const headSize = 8

// wire is the record of one connection attempt.
type wire struct {
	scheme string

	mu       sync.Mutex
	head     []byte    // the server's first bytes on the socket, up to headSize
	reply    []byte    // the first bytes of MQTT it sent (after TLS or WebSocket), up to 4
	accepted time.Time // when a CONNACK accepting the connection arrived
	closed   time.Time // when a read failed
	err      error     // that read's error
}

// saw records bytes the server sent on the socket.
func (w *wire) saw(p []byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.head = append(w.head, p[:min(len(p), headSize-len(w.head))]...)
	return len(w.head) == headSize
}

// answered records the server's first bytes of MQTT: those of a CONNACK
// that accepts the connection (0x20 0x02 flags 0x00) mark it accepted.
func (w *wire) answered(p []byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reply = append(w.reply, p[:min(len(p), 4-len(w.reply))]...)
	if len(w.reply) < 4 {
		return false
	}
	if w.reply[0] == 0x20 && w.reply[1] == 0x02 && w.reply[3] == 0x00 {
		w.accepted = time.Now()
	}
	return true
}

func (w *wire) isAccepted() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.accepted.IsZero()
}

// failed records the read error that ended the connection.
func (w *wire) failed(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed.IsZero() {
		w.closed, w.err = time.Now(), err
	}
}

// seen is a copy of the server's first bytes on the socket.
func (w *wire) seen() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]byte(nil), w.head...)
}

// open is paho's connection opener: it refuses once the Client is closing
// (paho's reconnect loop would otherwise dial once more during Close, and
// take the id back from another client) and records each attempt.
func (c *Client) open(uri *url.URL, o paho.ClientOptions) (net.Conn, error) {
	w := &wire{scheme: uri.Scheme}
	c.mu.Lock()
	closed := c.closed
	if !closed {
		c.wire = w
	}
	c.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	var take func(*bufConn, publish)
	if readPublishes {
		take = c.take
	}
	return openConn(uri, o, w, take)
}

// openConn dials the broker as paho's own openConnection does (tcp, ssl
// and its aliases, ws, wss; a proxy from the environment as paho honours
// it), buffers the reads and records them in w. With take, the PUBLISH
// packets that arrive once the broker accepted the connection go to take
// rather than to paho (intake.go).
func openConn(uri *url.URL, o paho.ClientOptions, w *wire, take func(*bufConn, publish)) (net.Conn, error) {
	var conn net.Conn
	var err error
	dialer := o.Dialer
	if dialer == nil {
		dialer = &net.Dialer{Timeout: o.ConnectTimeout}
	}
	switch uri.Scheme {
	case "ws", "wss":
		u := *uri
		u.User = nil // gorilla refuses URLs with user info (paho #623)
		var tlsc *tls.Config
		if uri.Scheme == "wss" {
			tlsc = o.TLSConfig
		}
		conn, err = paho.NewWebsocket(u.String(), tlsc, o.ConnectTimeout, o.HTTPHeaders, o.WebsocketOptions)
	case "mqtt", "tcp":
		conn, err = proxy.FromEnvironmentUsing(dialer).Dial("tcp", uri.Host)
		if err == nil {
			conn = &sniffer{Conn: conn, w: w}
		}
	case "ssl", "tls", "mqtts", "mqtt+ssl", "tcps":
		var raw net.Conn
		if os.Getenv("all_proxy") == "" {
			raw, err = dialer.Dial("tcp", uri.Host)
		} else {
			raw, err = proxy.FromEnvironment().Dial("tcp", uri.Host)
		}
		if err != nil {
			break
		}
		// The handshake reads through the sniffer: what a server that
		// does not speak TLS sends back is kept for the diagnosis.
		t := tls.Client(&sniffer{Conn: raw, w: w}, o.TLSConfig)
		ctx, cancel := context.WithTimeout(context.Background(), o.ConnectTimeout)
		err = t.HandshakeContext(ctx)
		cancel()
		if err != nil {
			_ = raw.Close()
			break
		}
		conn = t
	default:
		return nil, errors.New("unknown protocol " + uri.Scheme)
	}
	if err != nil {
		return nil, err
	}
	bc := &bufConn{Conn: conn, w: w, take: take, writeTimeout: o.WriteTimeout}
	if bufferReads || take != nil {
		bc.r = bufio.NewReaderSize(conn, readBuffer)
	}
	return bc, nil
}

// sniffer keeps what the server sends first on the socket (under TLS,
// its handshake).
type sniffer struct {
	net.Conn
	w    *wire
	done bool // headSize bytes kept: later reads are not looked at
}

func (r *sniffer) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	if n > 0 && !r.done {
		r.done = r.w.saw(p[:n])
	}
	return n, err
}

// bufConn is the connection paho reads MQTT from: through a buffer (unless
// a benchmark measures without), noting the CONNACK and the read error
// that ends it. Once the broker accepted the connection, the PUBLISH
// packets go to take (intake.go), when set.
type bufConn struct {
	net.Conn
	r      *bufio.Reader // nil: unbuffered
	w      *wire
	looked bool // the CONNACK is behind
	take   func(*bufConn, publish)
	intake bool   // reading whole packets: PUBLISH to take, the rest to paho
	rest   []byte // what paho has not read yet of the packet for it

	// Writes come from paho and from the handlers' acknowledgements
	// (intake.go): one at a time, each with a deadline. paho sets one for
	// its publishes (deadline; zero: none) and the acknowledgements take
	// writeTimeout at most.
	wmu          sync.Mutex
	deadline     time.Time
	writeTimeout time.Duration
}

func (c *bufConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.Conn.Write(p)
}

func (c *bufConn) SetWriteDeadline(t time.Time) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.deadline = t
	return c.Conn.SetWriteDeadline(t)
}

func (c *bufConn) SetDeadline(t time.Time) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.deadline = t
	return c.Conn.SetDeadline(t)
}

func (c *bufConn) Read(p []byte) (int, error) {
	if c.intake {
		return c.readPackets(p)
	}
	var n int
	var err error
	if c.r != nil {
		n, err = c.r.Read(p)
	} else {
		n, err = c.Conn.Read(p)
	}
	if n > 0 && !c.looked {
		c.looked = c.w.answered(p[:n])
		// The CONNACK is read to its end (paho reads exactly its four
		// bytes): what follows starts with a whole packet.
		c.intake = c.looked && c.take != nil && c.w.isAccepted()
	}
	if err != nil {
		c.w.failed(err)
	}
	return n, err
}
