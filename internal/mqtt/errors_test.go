package mqtt

import (
	"crypto/x509"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"cloud2mqtt/internal/mqtttest"
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

// TestRefusedWithoutUserName: a broker that wants a login refuses a bridge
// that sent none; the hint says no user name was set, not that one was
// wrong, and names MQTT_USERNAME.
func TestRefusedWithoutUserName(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
		b := mqtttest.Start(t, mqtttest.WithKind(kind), mqtttest.WithPassword("bridge", "hunter2"))
		cfg, logs := testConfig(t, b.URL())
		c, err := connectUntilRefused(t, cfg, logs)
		if err == nil {
			closeClient(t, c)
			t.Fatal("Connect without a user name succeeded")
		}
		want := "MQTT_USERNAME is not set (no user name or password was sent): set MQTT_USERNAME and MQTT_PASSWORD"
		for _, out := range []string{err.Error(), logs.String()} {
			if !strings.Contains(out, want) || strings.Contains(out, "refused the user name or password") {
				t.Errorf("%q does not say %q (or blames a user name never sent)", out, want)
			}
		}
	})
}
