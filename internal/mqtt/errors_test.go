package mqtt

import (
	"crypto/x509"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestHintsNameMQTTURL: each connection failure says which setting to check
// and what to do.
func TestHintsNameMQTTURL(t *testing.T) {
	t.Parallel()
	dial := func(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }
	for _, tc := range []struct {
		err  error
		want string
	}{
		{dial(os.NewSyscallError("connect", syscall.ECONNREFUSED)), "nothing answers at the host and port of MQTT_URL: start the broker, or correct MQTT_URL"},
		{dial(&net.DNSError{Err: "no such host", Name: "broker.lan", IsNotFound: true}), "the host name in MQTT_URL cannot be looked up"},
		{x509.UnknownAuthorityError{}, "TLS: the broker's certificate is not trusted: set MQTT_CA_FILE"},
		{dial(os.NewSyscallError("read", syscall.ECONNRESET)), "the broker closed the connection: see the broker's log"},
	} {
		got := hint(tc.err)
		if !strings.Contains(got, tc.want) {
			t.Errorf("hint(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
