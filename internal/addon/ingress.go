package addon

import (
	"fmt"
	"net/netip"
	"strconv"
)

// Ingress: Home Assistant shows the status page in its sidebar through the
// Supervisor's proxy. With host_network, which the LAN's multicast needs,
// the port is on the host, so the listener answers the Supervisor's address
// alone; its watchdog asks the same port for /healthz.
const (
	// IngressPort is config.yaml's ingress_port (a test keeps them equal).
	IngressPort = 8099
	// IngressPeerVar moves the peer, for tests (like SUPERVISOR_API).
	IngressPeerVar = "ADDON_INGRESS_PEER"
	// IngressAddrVar moves the listener (host:port), for tests: the
	// Supervisor always proxies to IngressPort.
	IngressAddrVar = "ADDON_INGRESS_ADDR"
	// DefaultIngressPeer is the Supervisor's address on the hassio network.
	DefaultIngressPeer = "172.30.32.2"
)

// IngressPeer is the address the ingress listener takes connections from:
// ADDON_INGRESS_PEER when set, else DefaultIngressPeer. An override that is
// not an IP address is an error naming the variable.
func IngressPeer(environ map[string]string) (netip.Addr, error) {
	s := environ[IngressPeerVar]
	if s == "" {
		s = DefaultIngressPeer
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("addon: %s=%q is not an IP address: set the one address the ingress listener accepts, or unset it for the Supervisor's %s", IngressPeerVar, clip(s), DefaultIngressPeer)
	}
	return a.Unmap(), nil
}

// IngressAddr is the ingress listener's address: ADDON_INGRESS_ADDR when
// set, else IngressPort on every address of the host (the Supervisor
// reaches it from the hassio network).
func IngressAddr(environ map[string]string) string {
	if a := environ[IngressAddrVar]; a != "" {
		return a
	}
	return ":" + strconv.Itoa(IngressPort)
}
