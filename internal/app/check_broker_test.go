package app

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/mqtttest"
)

// TestCheckBrokerSaysWhatWasSeen: -check's broker line fails at its first
// attempt, without waiting the whole 10 s, and says what the port did and which
// scheme to use.
func TestCheckBrokerSaysWhatWasSeen(t *testing.T) {
	plain := mqtttest.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name, url string
		want      []string
	}{
		{"refused", "tcp://" + closed, []string{"FAIL broker: mqtt: connect to tcp://" + closed, "connection refused", "nothing answers at the host and port of MQTT_URL"}},
		{"mqtts:// against a plain port", "mqtts://" + plain.Addr(), []string{"FAIL broker: mqtt: connect to mqtts://" + plain.Addr(), "TLS handshake against a plain port", "use tcp:// (or mqtt://)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Load(map[string]string{"MQTT_URL": tc.url, "CLOUD_API_KEY": "k", "CLOUD_BASE_URL": "http://" + closed, "CLOUD_TIMEOUT": "2s"})
			if err == nil {
				err = cfg.Validate()
			}
			var out bytes.Buffer
			if Check(context.Background(), cfg, err, &out, zerolog.Nop()) {
				t.Fatalf("-check passed:\n%s", out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, out.String())
				}
			}
			if strings.Contains(out.String(), "no connection to") {
				t.Errorf("the broker check waited out its deadline instead of failing at the first attempt:\n%s", out.String())
			}
		})
	}
}
