package mqtt

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"syscall"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
)

// ErrClosed is returned by Publish and Subscribe after Close.
var ErrClosed = errors.New("mqtt: client closed")

// ErrQueueFull is returned by Publish when the outbound queue is full (the
// broker has been unreachable or slow for a while); the message is dropped.
var ErrQueueFull = errors.New("mqtt: outbound queue full")

// hint says what a failed connection attempt means and what to do, from
// what the server sent (diagnose) when that says more than the error.
func (c *Client) hint(err error) string {
	if d := diagnose(c.broker.Scheme, c.answer(err), err); d != "" {
		return d
	}
	if c.cfg.Username == "" && refusedLogin(err) {
		// "refused the user name or password" would send the reader
		// looking for a wrong one where none was sent.
		return "not authorized: the broker wants a login, and MQTT_USERNAME is not set (no user name or password was sent): set MQTT_USERNAME and MQTT_PASSWORD (or MQTT_PASSWORD_FILE)"
	}
	return hint(err)
}

// refusedLogin reports whether the broker refused the connection for its
// user name or password.
func refusedLogin(err error) bool {
	return errors.Is(err, packets.ErrorRefusedNotAuthorised) || errors.Is(err, packets.ErrorRefusedBadUsernameOrPassword)
}

// hint says in words what a connection error means and what to do, naming
// the setting to check.
func hint(err error) string {
	var (
		dns     *net.DNSError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		verify  *tls.CertificateVerificationError
		alert   tls.AlertError
		record  tls.RecordHeaderError
		nerr    net.Error
	)
	switch {
	case err == nil:
		return ""
	case refusedLogin(err):
		return "not authorized: the broker refused the user name or password: check MQTT_USERNAME and MQTT_PASSWORD (or MQTT_PASSWORD_FILE)"
	case errors.Is(err, packets.ErrorRefusedIDRejected):
		return "the broker refused the client id: set MQTT_CLIENT_ID to one it accepts"
	case errors.Is(err, packets.ErrorRefusedServerUnavailable):
		return "the broker says it is unavailable: check its log; the bridge tries again"
	case errors.Is(err, packets.ErrorRefusedBadProtocolVersion):
		return "the broker does not speak MQTT 3.1.1: check that MQTT_URL points at an MQTT broker"
	case errors.As(err, &dns):
		return "the host name in MQTT_URL cannot be looked up: check its spelling and this machine's DNS"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "nothing answers at the host and port of MQTT_URL: start the broker, or correct MQTT_URL (MQTT_URL=embedded runs the built-in broker)"
	case errors.As(err, &unknown), errors.As(err, &verify), errors.As(err, &invalid), errors.As(err, &host):
		return "TLS: the broker's certificate is not trusted: set MQTT_CA_FILE to its CA, and check that the host name in MQTT_URL is the one in the certificate"
	case errors.As(err, &alert):
		return "TLS: the broker refused the handshake: if it asks for a client certificate, set MQTT_CERT_FILE and MQTT_KEY_FILE; else see the broker's log"
	case errors.As(err, &record):
		return "TLS: the port in MQTT_URL does not answer in TLS: use tcp:// (or mqtt://) for a plain port, ssl:// (or mqtts://) only for a TLS one"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "the broker closed the connection: see the broker's log"
	case errors.As(err, &nerr) && nerr.Timeout():
		return "no answer in time: check the host and port in MQTT_URL and the network (a port that is no MQTT broker's, a web server's for one, may say nothing)"
	case errors.Is(err, paho.ErrNotConnected):
		return "not connected"
	}
	return "check MQTT_URL and the network"
}
