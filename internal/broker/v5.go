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
	// 0: a message expires only when its publisher gave it an interval, as
	// in mosquitto. mochi's default of a day would delete the bridge's
	// retained "online", published once per connection, and with it every
	// entity's availability.
	srv.Options.Capabilities.MaximumMessageExpiryInterval = 0
	for _, h := range []mochi.Hook{new(receiveMaximumHook), new(retainedHook), new(packetIDHook)} {
		if err := srv.AddHook(h, nil); err != nil {
			return err
		}
	}
	return nil
}

// receiveMaximumHook makes the broker ignore an MQTT 5 client's Receive
// Maximum, as for a 3.1.1 client: mochi v2.7.9's window shrinks by one with
// each message it held back, and a client stalls after about twice it.
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
