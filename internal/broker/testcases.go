package broker

import "github.com/mochi-mqtt/server/v2/packets"

// mochi's packets package builds its own test cases at init (tpackets.go:
// about 370 kB of heap in every program that links mochi, the daemon
// included, whether or not it runs a broker); only mochi's own tests read
// them. Dropping them lets the collector have a sixth of the daemon's live
// heap at 100 lights.
func init() { packets.TPacketData = nil }
