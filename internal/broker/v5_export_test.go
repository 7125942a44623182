package broker

// Test seams of v5_test.go.

import (
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

// RetainSince stores a retained message as if the bridge (a 3.1.1
// client, QoS 1) had published it at the instant at: mochi dates what it
// retains by the second it arrived, and would delete it a day later by
// default.
func (b *Broker) RetainSince(topic, payload string, at time.Time) {
	b.srv.Topics.RetainMessage(packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1, Retain: true},
		TopicName:   topic, Payload: []byte(payload), Created: at.Unix(), ProtocolVersion: 4,
	})
}

// HasRetained reports whether a retained message is stored on topic.
func (b *Broker) HasRetained(topic string) bool {
	_, ok := b.srv.Topics.Retained.Get(topic)
	return ok
}

// HasClient reports whether the broker holds a client (connected, or a
// session it keeps) with the id.
func (b *Broker) HasClient(id string) bool {
	_, ok := b.srv.Clients.Get(id)
	return ok
}
