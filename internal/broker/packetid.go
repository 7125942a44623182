package broker

// mochi v2.7.9 keeps a client's packet ids and its own in one map, so a
// SUBSCRIBE reusing the id of an unacknowledged message to the client is
// refused (0x91), and Home Assistant subscribes while retained configs
// arrive. packetIDHook hands mochi such packets with id 0, which mochi never
// uses, and puts the client's id back on the acknowledgement.

import (
	"sync"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

type packetIDHook struct {
	mochi.HookBase
	// ids has each client's SUBSCRIBE or UNSUBSCRIBE being handled: a
	// client's packets are handled one at a time, and the
	// acknowledgement written before the next is read.
	ids sync.Map // *mochi.Client → uint16
}

func (h *packetIDHook) ID() string { return "cloud2mqtt-packet-ids" }

func (h *packetIDHook) Provides(b byte) bool {
	return b == mochi.OnPacketRead || b == mochi.OnPacketEncode || b == mochi.OnDisconnect
}

// OnPacketRead takes a SUBSCRIBE's or UNSUBSCRIBE's id off it (and the
// header's QoS bit, without which mochi would refuse id 0).
func (h *packetIDHook) OnPacketRead(cl *mochi.Client, pk packets.Packet) (packets.Packet, error) {
	if t := pk.FixedHeader.Type; (t == packets.Subscribe || t == packets.Unsubscribe) && pk.PacketID != 0 {
		h.ids.Store(cl, pk.PacketID)
		pk.PacketID = 0
		pk.FixedHeader.Qos = 0
	}
	return pk, nil
}

// OnPacketEncode puts the client's id on the SUBACK or UNSUBACK.
func (h *packetIDHook) OnPacketEncode(cl *mochi.Client, pk packets.Packet) packets.Packet {
	if t := pk.FixedHeader.Type; (t == packets.Suback || t == packets.Unsuback) && pk.PacketID == 0 {
		if id, ok := h.ids.LoadAndDelete(cl); ok {
			pk.PacketID = id.(uint16)
		}
	}
	return pk
}

// OnDisconnect forgets the id of a SUBSCRIBE the connection ended in.
func (h *packetIDHook) OnDisconnect(cl *mochi.Client, _ error, _ bool) { h.ids.Delete(cl) }
