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

// hint says in words what a connection error means and what to check.
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
	case errors.Is(err, packets.ErrorRefusedNotAuthorised), errors.Is(err, packets.ErrorRefusedBadUsernameOrPassword):
		return "not authorized: the broker refused the username/password (check MQTT_USERNAME and MQTT_PASSWORD)"
	case errors.Is(err, packets.ErrorRefusedIDRejected):
		return "client id rejected by the broker (set MQTT_CLIENT_ID)"
	case errors.Is(err, packets.ErrorRefusedServerUnavailable):
		return "the broker says it is unavailable"
	case errors.Is(err, packets.ErrorRefusedBadProtocolVersion):
		return "the broker does not speak MQTT 3.1.1"
	case errors.As(err, &dns):
		return "DNS lookup failed: check the host name in MQTT_URL"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: is the broker running and listening on the port in MQTT_URL?"
	case errors.As(err, &unknown), errors.As(err, &verify), errors.As(err, &invalid), errors.As(err, &host):
		return "TLS: the broker's certificate is not trusted (check MQTT_CA_FILE and that the host name in MQTT_URL is in the certificate)"
	case errors.As(err, &alert), errors.As(err, &record):
		return "TLS handshake failed (does the port speak TLS? ssl:// needs a TLS listener, tcp:// a plain one)"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "the connection was reset"
	case errors.As(err, &nerr) && nerr.Timeout():
		return "timed out: is the host reachable and the port right? (a TLS port spoken to with tcp:// also times out)"
	case errors.Is(err, paho.ErrNotConnected):
		return "not connected"
	}
	return "network error"
}
