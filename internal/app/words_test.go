package app

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/config"
)

// TestEmbeddedBrokerPortTaken: the error names MQTT_LISTEN and one fix, once.
func TestEmbeddedBrokerPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	m := &Main{Config: config.Config{MQTT: config.MQTT{URL: config.EmbeddedBroker, Listen: ln.Addr().String()}}, Log: zerolog.Nop()}
	env, err := m.environment(context.Background())
	if err == nil {
		env.close()
		t.Fatal("the embedded broker listened on a port in use")
	}
	msg := err.Error()
	if strings.Count(msg, "MQTT_LISTEN=") != 1 || strings.Count(msg, "another program uses that port (another broker or web server? cloud2mqtt already running?)") != 1 ||
		strings.Contains(msg, "is another broker") {
		t.Errorf("got %q", msg)
	}
}
