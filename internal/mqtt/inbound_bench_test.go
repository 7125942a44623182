package mqtt

import (
	"context"
	"strconv"
	"testing"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/mqtttest"
	"cloud2mqtt/internal/testkit"
)

// BenchmarkInbound is the client's intake of QoS 1 messages from a broker
// that keeps at most 20 unacknowledged (mosquitto's default window), with
// a handler that does nothing: paho's reading, the dispatcher, the
// subscription's queue and the acknowledgement once handled. msgs/s is
// what the window lets through in wall time (the server's side runs in the
// same process); cpu-ns/op counts both sides.
func BenchmarkInbound(b *testing.B) {
	wb := mqtttest.NewWindowBroker(b, 20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := Connect(ctx, Config{URL: wb.URL(), ClientID: "bench", Logger: zerolog.Nop()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(context.Background())
	if err := c.Subscribe("c2m/+/set/#", 1, func(string, []byte, bool) {}); err != nil {
		b.Fatal(err)
	}
	topics := make([]string, 13)
	for i := range topics {
		topics[i] = "c2m/light" + strconv.Itoa(i) + "/set/brightness"
	}
	payloads := make([][]byte, 100)
	for i := range payloads {
		payloads[i] = []byte(strconv.Itoa(i + 1))
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := testkit.CPUTime(b)
	wb.Send(b.N, func(i int) string { return topics[i%len(topics)] }, func(i int) []byte { return payloads[i%len(payloads)] })
	testkit.ReportCPU(b, start)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
