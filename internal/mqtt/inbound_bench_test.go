package mqtt

import (
	"context"
	"strconv"
	"testing"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/mqtttest"
)

// BenchmarkInbound is the client's intake of QoS 1 messages from a broker
// that keeps at most 20 unacknowledged (mosquitto's default window), with
// a handler that does nothing: the reading and acknowledging, the
// dispatcher and the subscription's queue. "bare" has paho read the socket
// as it does by itself, "buffered" through the Client's read buffer;
// "ack-queued" acknowledges each message once queued (as before
// 2026-11-25), "ack-handled" once its handler returned; "intake" reads the
// PUBLISH packets under paho and writes each PUBACK from the handler's
// goroutine (intake.go, since issue 32). msgs/s is what the window lets
// through in wall time (the server's side runs in the same process);
// cpu-ns/op counts both sides.
func BenchmarkInbound(b *testing.B) {
	for _, bc := range []struct {
		name                     string
		buffered, onDone, intake bool
	}{{"bare-ack-queued", false, false, false}, {"buffered-ack-queued", true, false, false}, {"buffered-ack-handled", true, true, false},
		{"intake-ack-handled", true, true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			bufferReads, ackWhenHandled, readPublishes = bc.buffered, bc.onDone, bc.intake
			defer func() { bufferReads, ackWhenHandled, readPublishes = true, true, true }()
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
			start := cpuTime(b)
			wb.Send(b.N, func(i int) string { return topics[i%len(topics)] }, func(i int) []byte { return payloads[i%len(payloads)] })
			reportCPU(b, start)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
