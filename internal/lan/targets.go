package lan

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Production ports and the scan's multicast group.
const (
	ScanPort    = 4001 // devices hear scans here
	ListenPort  = 4002 // devices answer here
	CommandPort = 4003 // devices hear commands and status requests here
	Group       = "239.255.255.250"
)

// DefaultListen and DefaultScanTargets are the defaults of LAN_LISTEN and
// LAN_SCAN_TARGETS.
const (
	DefaultListen      = "0.0.0.0:4002"
	DefaultScanTargets = Group
)

// Target is one scan target: a host name or address, and a port (0: the
// client's scan port).
type Target struct {
	Host string
	Port int
}

func (t Target) String() string {
	if t.Port == 0 {
		return t.Host
	}
	return net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
}

// ParseTargets reads LAN_SCAN_TARGETS: comma-separated hosts or host:port
// (an IPv6 address with a port in brackets). Empty entries are errors, so
// a stray comma does not silently scan nothing.
func ParseTargets(s string) ([]Target, error) {
	var out []Target
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("LAN_SCAN_TARGETS=%q has an empty entry: list hosts or host:port separated by commas, e.g. %s,192.168.20.31", s, Group)
		}
		t, err := parseTarget(part)
		if err != nil {
			return nil, fmt.Errorf("LAN_SCAN_TARGETS: %w", err)
		}
		out = append(out, t)
	}
	return out, nil
}

func parseTarget(s string) (Target, error) {
	if ip, err := netip.ParseAddr(s); err == nil { // a bare address, IPv6 too
		return Target{Host: ip.String()}, nil
	}
	if p, err := netip.ParsePrefix(s); err == nil {
		return Target{}, fmt.Errorf("%q %w", s, cidrError(p))
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		if strings.Count(s, ":") > 0 {
			return Target{}, fmt.Errorf("%q is neither a host nor host:port (write an IPv6 address with a port as [addr]:port)", s)
		}
		host, port = s, ""
	}
	if err := checkHost(host); err != nil {
		return Target{}, fmt.Errorf("%q %w", s, err)
	}
	t := Target{Host: host}
	if port != "" {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return Target{}, fmt.Errorf("%q: port %q must be a number 1–65535", s, port)
		}
		t.Port = p
	}
	return t, nil
}

// checkHost refuses a host that is neither an IP address nor a host name,
// so a mistake is reported at start rather than as a failed look-up on
// every scan.
func checkHost(host string) error {
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if host == "" {
		return errors.New("has no host: write host or host:port, like 192.168.20.31:4001")
	}
	if p, err := netip.ParsePrefix(host); err == nil {
		return cidrError(p)
	}
	if i := strings.IndexAny(host, ";| "); i >= 0 {
		fixed := strings.Join(strings.FieldsFunc(host, func(r rune) bool { return strings.ContainsRune(";| ", r) }), ",")
		return fmt.Errorf("contains %q: separate targets with a comma, like %s", host[i:i+1], fixed)
	}
	if strings.Trim(host, "0123456789.") == "" {
		return errors.New("is not an IP address: use four numbers 0 to 255, like 192.168.20.31")
	}
	if !isHostName(host) {
		return errors.New("is not an IP address or a host name (letters, digits, hyphens and dots)")
	}
	return nil
}

// cidrError refuses a network: a scan goes to addresses, and the
// network's broadcast address reaches every light in it with one datagram.
func cidrError(p netip.Prefix) error {
	if !p.Addr().Is4() {
		return errors.New("is a network, not an address: list the lights' addresses separated by commas")
	}
	b := p.Masked().Addr().As4()
	for i := p.Bits(); i < 32; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	return fmt.Errorf("is a network, not an address: list the lights' addresses separated by commas, or use its broadcast address %s", netip.AddrFrom4(b))
}

// isHostName reports whether s is a DNS name. Underscores are allowed
// because some DHCP servers hand them out.
func isHostName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// ParseListen reads LAN_LISTEN: host:port, the host an address of this
// machine (empty or 0.0.0.0 for every interface).
func ParseListen(s string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("LAN_LISTEN=%q is not host:port: use e.g. %s", s, DefaultListen)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return netip.AddrPort{}, fmt.Errorf("LAN_LISTEN=%q: port %q must be a number 0–65535 (the devices answer to %d)", s, port, ListenPort)
	}
	ip := netip.IPv4Unspecified()
	if host != "" {
		if ip, err = netip.ParseAddr(host); err != nil {
			return netip.AddrPort{}, fmt.Errorf("LAN_LISTEN=%q: %q is not an IP address of this machine (use 0.0.0.0 for all)", s, host)
		}
	}
	return netip.AddrPortFrom(ip.Unmap(), uint16(p)), nil
}

// resolved is one scan's destinations and the answers it allows.
type resolved struct {
	dests []netip.AddrPort
	// anySource: a group or broadcast address was among the targets, so
	// answers may come from any address; else only from dests' addresses.
	anySource bool
}

// resolve looks the targets up (names each time, as a light's DHCP name
// may move). Failures are returned joined; what resolved is still used.
func resolve(ctx context.Context, targets []Target, defaultPort int, broadcasts func() map[netip.Addr]bool) (resolved, []error) {
	var r resolved
	var errs []error
	var bcast map[netip.Addr]bool
	for _, t := range targets {
		port := t.Port
		if port == 0 {
			port = defaultPort
		}
		ips, err := lookup(ctx, t.Host)
		if err != nil {
			errs = append(errs, fmt.Errorf("lan: scan target %s: %w", t, err))
			continue
		}
		for _, ip := range ips {
			if ip.IsMulticast() || ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
				r.anySource = true
			} else if ip.Is4() {
				if bcast == nil {
					bcast = broadcasts()
				}
				if bcast[ip] {
					r.anySource = true
				}
			}
			r.dests = append(r.dests, netip.AddrPortFrom(ip, uint16(port)))
		}
	}
	return r, errs
}

func lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip.Unmap()}, nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", host)
	for i := range ips {
		ips[i] = ips[i].Unmap()
	}
	return ips, err
}

// localBroadcasts are the broadcast addresses of this machine's IPv4
// networks: a scan sent to one is answered from any address in it.
func localBroadcasts() map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return out
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip4, mask := n.IP.To4(), n.Mask
		if ip4 == nil || len(mask) != net.IPv4len {
			continue
		}
		var b [4]byte
		for i := range b {
			b[i] = ip4[i] | ^mask[i]
		}
		out[netip.AddrFrom4(b)] = true
	}
	return out
}
