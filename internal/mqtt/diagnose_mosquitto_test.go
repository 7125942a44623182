//go:build mosquitto

package mqtt

import (
	"testing"

	"cloud2mqtt/internal/mqtttest"
)

// TestHTTPAnswerOnTheMQTTPort: tcp:// pointed at mosquitto's WebSocket
// listener, an HTTP server that answers a request it cannot read at once
// (Go's HTTP servers wait for a request line, which MQTT's CONNECT never
// ends: that case is a timeout).
func TestHTTPAnswerOnTheMQTTPort(t *testing.T) {
	t.Parallel()
	ws := mqtttest.Start(t, mqtttest.WithKind(mqtttest.Mosquitto), mqtttest.WithWebsocket())
	schemeCase{"an HTTP answer on the MQTT port", "tcp://" + hostOf(ws.WSURL()),
		[]string{"an HTTP answer on the MQTT port", "HTTP/", "use ws://"}}.run(t)
}
