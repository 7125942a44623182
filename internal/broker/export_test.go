package broker

// Test seams: what only the tests of this package read.

// Addr is the actual host:port of the MQTT listener.
func (b *Broker) Addr() string { return b.addr }

// WSURL is the websocket address ("ws://host:port/" or "wss://"), or "" when
// Options.WSAddr was not set.
func (b *Broker) WSURL() string {
	if b.wsAddr == "" {
		return ""
	}
	if b.tls {
		return "wss://" + b.wsAddr + "/"
	}
	return "ws://" + b.wsAddr + "/"
}
