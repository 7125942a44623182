package mqtt

// The connection under paho: dialled as paho dials it, with reads through a
// buffer. paho reads each packet in three reads at least (the type byte,
// each byte of the length, the rest); on the bare socket that is three
// system calls a message, and during a flood of commands the broker's
// window of unacknowledged messages (mosquitto: 20) empties no faster than
// the bridge reads. Buffered, one read takes in every packet that arrived.

import (
	"bufio"
	"crypto/tls"
	"errors"
	"net"
	"net/url"
	"os"

	paho "github.com/eclipse/paho.mqtt.golang"
	"golang.org/x/net/proxy"
)

// readBuffer is the size of the connection's read buffer.
const readBuffer = 32 << 10

// bufferReads is false only in the benchmark that measures what the buffer
// brings.
var bufferReads = true

// openConn dials the broker as paho's own openConnection does (tcp, ssl
// and its aliases, ws, wss; a proxy from the environment as paho honours
// it) and buffers the reads.
func openConn(uri *url.URL, o paho.ClientOptions) (net.Conn, error) {
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
	case "ssl", "tls", "mqtts", "mqtt+ssl", "tcps":
		if os.Getenv("all_proxy") == "" {
			conn, err = tls.DialWithDialer(dialer, "tcp", uri.Host, o.TLSConfig)
			break
		}
		conn, err = proxy.FromEnvironment().Dial("tcp", uri.Host)
		if err == nil {
			t := tls.Client(conn, o.TLSConfig)
			if err = t.Handshake(); err != nil {
				_ = conn.Close()
			}
			conn = t
		}
	default:
		return nil, errors.New("unknown protocol " + uri.Scheme)
	}
	if err != nil {
		return nil, err
	}
	if !bufferReads {
		return conn, nil
	}
	return &bufConn{Conn: conn, r: bufio.NewReaderSize(conn, readBuffer)}, nil
}

// bufConn is a connection whose reads go through a buffer.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }
