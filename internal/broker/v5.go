package broker

// Where the embedded broker departs from mochi (v2.7.9), so that it serves
// an MQTT 5 client (Home Assistant's from 2026.6 on, which drops 3.1.1 in
// 2027.1) as it serves a 3.1.1 one, keeps what is retained for as long as
// mosquitto does, reads its retained messages safely (retained.go) and
// keeps the client's packet ids apart from its own (packetid.go).

import (
	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// adjust sets srv (not yet serving) up as described above.
func adjust(srv *mochi.Server) error {
	// mochi stamps every message without a Message Expiry Interval with
	// one of a day, which MQTT 5 clients then see, and deletes a retained
	// message a day after it was published: the bridge's "online" on
	// bridge/state, which every entity's availability needs, is published
	// once per connection, so a day later a Home Assistant that starts
	// found every entity unavailable. 0: a message expires only when its
	// publisher gave it an interval (an MQTT 5 publisher), as in mosquitto.
	srv.Options.Capabilities.MaximumMessageExpiryInterval = 0
	for _, h := range []mochi.Hook{new(receiveMaximumHook), new(retainedHook), new(packetIDHook)} {
		if err := srv.AddHook(h, nil); err != nil {
			return err
		}
	}
	return nil
}

// receiveMaximumHook makes the broker send QoS 1 and 2 messages to an MQTT
// 5 client without holding any back for its Receive Maximum, as it does to
// an MQTT 3.1.1 client. mochi v2.7.9 holds the messages beyond a client's
// Receive Maximum and sends one each time the client acknowledges another,
// but it forgets a message once it sent it that way: its acknowledgement
// is not counted, the window shrinks by one with each, and after about
// twice the Receive Maximum messages the client receives nothing more
// (nor is the message sent again after a reconnect). libmosquitto's
// clients (mosquitto_sub among them) send a Receive Maximum of 20, less
// than the discovery configs of a few devices. Home Assistant's client
// sends none and is never held.
type receiveMaximumHook struct{ mochi.HookBase }

func (h *receiveMaximumHook) ID() string { return "cloud2mqtt-receive-maximum" }

func (h *receiveMaximumHook) Provides(b byte) bool { return b == mochi.OnPacketRead }

// OnPacketRead drops the Receive Maximum of a CONNECT before mochi reads
// it (0: the property is absent, no limit).
func (h *receiveMaximumHook) OnPacketRead(_ *mochi.Client, pk packets.Packet) (packets.Packet, error) {
	if pk.FixedHeader.Type == packets.Connect {
		pk.Properties.ReceiveMaximum = 0
	}
	return pk, nil
}
