package mqtt

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"cloud2mqtt/internal/mqtttest"
)

// TestWrongSchemeSaysWhatWasSeen: a scheme that does not match the port
// fails at the first attempt with FailFast, saying what the port did and
// which scheme to use. Real listeners on loopback: mosquitto's plain, TLS
// and WebSocket ports, and an HTTP server.
func TestWrongSchemeSaysWhatWasSeen(t *testing.T) {
	t.Parallel()
	plain := mqtttest.Start(t)
	secure := mqtttest.Start(t, mqtttest.WithTLS())
	web := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(web.Close)
	for _, tc := range []schemeCase{
		{"TLS handshake against a plain MQTT port", "mqtts://" + plain.Addr(),
			[]string{"TLS handshake against a plain port", "closed the connection", "use tcp:// (or mqtt://)"}},
		{"ssl:// against a plain MQTT port", "ssl://" + plain.Addr(), []string{"TLS handshake against a plain port", "use tcp://"}},
		{"plain MQTT against a TLS port", "tcp://" + hostOf(secure.URL()), []string{"without answering MQTT's CONNECT", "expects TLS", "use ssl:// (or mqtts://)"}},
		{"mqtt:// against a TLS port", "mqtt://" + hostOf(secure.URL()), []string{"expects TLS", "use ssl://"}},
		{"ws:// against a plain MQTT port", "ws://" + plain.Addr(), []string{"without answering the WebSocket request", "use tcp:// (or mqtt://)"}},
		{"wss:// against a plain MQTT port", "wss://" + plain.Addr(), []string{"TLS handshake against a plain port", "use ws://", "tcp://"}},
		{"mqtts:// against an HTTP server", "mqtts://" + hostOf(web.URL), []string{"an HTTP server answered the TLS handshake", "HTTP/", "TLS port"}},
		{"ws:// against an HTTP server that is no WebSocket listener", "ws://" + hostOf(web.URL) + "/mqtt", []string{"refuses the WebSocket", "check the path"}},
	} {
		t.Run(tc.name, tc.run)
	}
}

type schemeCase struct {
	name, url string
	want      []string // in the error
}

// run connects once (FailFast) and checks the error's words.
func (tc schemeCase) run(t *testing.T) {
	cfg, _ := testConfig(t, tc.url)
	cfg.FailFast = true
	c, err := Connect(context.Background(), cfg, nil) // no deadline: FailFast must end it
	if err == nil {
		closeClient(t, c)
		t.Fatal("Connect succeeded")
	}
	for _, w := range tc.want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\nlacks %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "if the port in MQTT_URL speaks TLS") {
		t.Errorf("error %q gives the old, reversed advice", err)
	}
}

func hostOf(u string) string { return strings.TrimSuffix(u[strings.Index(u, "://")+3:], "/") }

// TestRefusedFailsAtOnceWithFailFast: -check's connect (FailFast) returns
// the refusal of its first attempt at once instead of retrying until its
// deadline; the daemon's (without) waits for the broker
// (TestConnectWaitsForBroker).
func TestRefusedFailsAtOnceWithFailFast(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	cfg, _ := testConfig(t, "tcp://"+addr)
	cfg.FailFast = true
	c, err := Connect(context.Background(), cfg, nil) // no deadline: FailFast must end it
	if err == nil {
		closeClient(t, c)
		t.Fatal("Connect to a closed port succeeded")
	}
	if !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "nothing answers at the host and port of MQTT_URL") ||
		errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %q: want the refusal and what to do, at once", err)
	}
}

// FuzzDiagnose: whatever a server sends first, on whatever scheme, the
// diagnosis neither panics nor grows with what was sent.
func FuzzDiagnose(f *testing.F) {
	for _, s := range []string{"", "HTTP/1.1 400 Bad Request\r\n", "\x15\x03\x01\x00\x02\x02\x46", "\x20\x02\x00\x00", "\x20\x02\x00\x05", "\xff\xfe\x00"} {
		for _, scheme := range []string{"tcp", "ssl", "ws", "wss"} {
			f.Add([]byte(s), scheme, true)
		}
	}
	f.Fuzz(func(t *testing.T, sent []byte, scheme string, reset bool) {
		head := sent[:min(len(sent), headSize)]
		err := errors.New("websocket: bad handshake")
		if reset {
			err = &net.OpError{Op: "read", Err: syscall.ECONNRESET}
		}
		if d := diagnose(scheme, head, err); len(d) > 600 {
			t.Fatalf("diagnosis of %d bytes: %q", len(d), d)
		}
	})
}
