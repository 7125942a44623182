package mqtt

// Why a connection attempt failed, from what the server sent back: a port
// that speaks another protocol than MQTT_URL's scheme says so only by what
// it answers, or by closing the connection without a word. hint
// (errors.go) covers the rest: refused, unknown host, not authorized,
// untrusted certificate, timeouts.

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/eclipse/paho.mqtt.golang/packets"
)

// headSize is how many of the server's first bytes a probe keeps.
const headSize = 8

// answer is what the server sent first, as far as can be known: the
// record header a TLS handshake failed on, or, when paho read something
// else than a CONNACK from a plain port, what the port answers a CONNECT
// with (paho keeps neither).
func (c *Client) answer(err error) []byte {
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) {
		return rh.RecordHeader[:]
	}
	var op *net.OpError
	if s := c.broker.Scheme; s != "tcp" && s != "mqtt" || !errors.Is(err, packets.ErrorNetworkError) ||
		errors.Is(err, io.EOF) || errors.As(err, &op) && (op.Op == "dial" || op.Timeout()) {
		return nil
	}
	return probe(c.broker.Host, c.cfg.ConnectTimeout)
}

// probe connects to a plain port once more, sends a CONNECT and returns
// the first bytes of the answer, up to headSize.
func probe(host string, timeout time.Duration) []byte {
	conn, err := net.DialTimeout("tcp", host, timeout)
	if err != nil {
		return nil
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	// MQTT 3.1.1's CONNECT: a clean session, no client id.
	if _, err := conn.Write([]byte{0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 4, 2, 0, 0, 0, 0}); err != nil {
		return nil
	}
	head := make([]byte, headSize)
	n, _ := conn.Read(head)
	return head[:n]
}

// diagnose explains err from the server's first bytes (head, see answer)
// and the scheme, naming the scheme to use; "" when they add nothing to
// hint's words.
func diagnose(scheme string, head []byte, err error) string {
	if err == nil {
		return ""
	}
	switch scheme {
	case "ssl", "tls", "mqtts", "mqtt+ssl", "tcps":
		return diagnoseTLS(head, err, "use tcp:// (or mqtt://) with this port, or ssl:// with the broker's TLS port (usually 8883)")
	case "wss":
		return diagnoseTLS(head, err, "use ws:// if it is the broker's plain WebSocket listener, tcp:// if it is its plain MQTT port")
	case "ws":
		return diagnoseWebsocket(err)
	}
	return diagnosePlain(head, err)
}

// diagnoseTLS: a TLS scheme's handshake failed.
func diagnoseTLS(head []byte, err error, plain string) string {
	var rh tls.RecordHeaderError
	switch {
	case isHTTP(head):
		return "an HTTP server answered the TLS handshake at the host and port of MQTT_URL (" + quoteHead(head) + "): this is no TLS port of an MQTT broker; " +
			"if it is the broker's plain WebSocket listener use ws://, else point MQTT_URL at the broker's TLS port (usually 8883)"
	case len(head) == 0 && closedByPeer(err):
		return "TLS handshake against a plain port: the port at MQTT_URL closed the connection instead of answering the TLS handshake, so it does not speak TLS: " + plain
	case len(head) > 0 && !isTLSRecord(head) && errors.As(err, &rh):
		return "the port at MQTT_URL answered the TLS handshake with something else than TLS (" + quoteHead(head) + "): " + plain
	}
	return ""
}

// diagnosePlain: a plain MQTT connection got no CONNACK.
func diagnosePlain(head []byte, err error) string {
	switch {
	case isHTTP(head):
		return "an HTTP answer on the MQTT port (" + quoteHead(head) + "): the host and port of MQTT_URL are a web server's; " +
			"if it is the broker's WebSocket listener use ws:// (or wss:// with TLS), else point MQTT_URL at the broker's MQTT port (usually 1883)"
	case isTLSRecord(head):
		return "the port at MQTT_URL answered plain MQTT with TLS: it is a TLS port: use ssl:// (or mqtts://)"
	case len(head) == 0 && closedByPeer(err):
		return "the port at MQTT_URL closed the connection without answering MQTT's CONNECT: most likely it expects TLS: use ssl:// (or mqtts://); " +
			"if it is a WebSocket listener, ws:// (or wss://); else see the broker's log"
	case len(head) > 0 && head[0]>>4 != 2: // not a CONNACK
		return "the port at MQTT_URL answered with something else than MQTT (" + quoteHead(head) + "): point MQTT_URL at an MQTT broker's port"
	}
	return ""
}

// diagnoseWebsocket: the WebSocket handshake (an HTTP request) failed.
// gorilla reads the answer itself, so its error says what came back.
func diagnoseWebsocket(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "websocket: bad handshake"): // gorilla's ErrBadHandshake: an HTTP status other than 101
		return "an HTTP server answers at MQTT_URL but refuses the WebSocket there: check the path in MQTT_URL (e.g. ws://host:9001/mqtt) and that the port is the broker's WebSocket listener"
	case strings.Contains(msg, `malformed HTTP response "\x15\x03`), strings.Contains(msg, `malformed HTTP response "\x16\x03`):
		return "the port at MQTT_URL answered the WebSocket request with TLS: use wss://"
	case strings.Contains(msg, "malformed HTTP response"):
		return "the port at MQTT_URL answered the WebSocket request with something else than HTTP: if it is the broker's MQTT port use tcp:// (or mqtt://)"
	case closedByPeer(err):
		return "the port at MQTT_URL closed the connection without answering the WebSocket request, so it is no plain WebSocket listener: " +
			"use tcp:// (or mqtt://) if it is the broker's MQTT port, ssl:// or wss:// if it expects TLS"
	}
	return ""
}

// closedByPeer says whether err is the other side closing the connection
// (not a timeout, nor the bridge closing it).
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func isHTTP(head []byte) bool { return bytes.HasPrefix(head, []byte("HTTP/")) }

// isTLSRecord: a TLS handshake (22) or alert (21) record of version 3.x.
func isTLSRecord(head []byte) bool {
	return len(head) >= 2 && (head[0] == 21 || head[0] == 22) && head[1] == 3
}

// quoteHead shows the server's first bytes.
func quoteHead(head []byte) string {
	q := strconv.Quote(string(head))
	return q[1:len(q)-1] + "…"
}
