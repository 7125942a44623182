package web

import (
	"net"
	"net/netip"
	"strings"
)

// DNS rebinding: a web page on another name (evil.example) whose DNS
// answer turns to the bridge's address may send requests to the bridge
// that its script can read, the browser holding them for same-origin. Such
// requests carry the attacker's name in Host. hostRule admits only names
// the bridge is known by:
//   - loopback names and addresses (localhost, *.localhost, 127.0.0.0/8,
//     ::1);
//   - HTTP_ADDR's own host: its name, or its IP address; when it binds
//     every interface (":8080", 0.0.0.0, [::]), any IP address: a browser
//     sends an IP address as Host only for a page whose own origin is that
//     address, which no other site's page is, and the machine's addresses
//     change (DHCP, containers' port mappings) while a check of the
//     interfaces would not;
//   - this machine's host name (its first label too, and with .local):
//     names the household's DNS or mDNS resolves, not an attacker's;
//   - HTTP_HOSTS: names given by the user (a reverse proxy's, a
//     container's), "*.example.org" for every name under example.org.
//
// The port is not compared: a rebinding page uses the bridge's port too.

// hostRule says which Host headers are served.
type hostRule struct {
	anyIP    bool // HTTP_ADDR binds every interface
	ips      map[netip.Addr]bool
	names    map[string]bool // lower case, no trailing dot
	suffixes []string        // ".example.org" of "*.example.org"
}

// newHostRule is the rule for HTTP_ADDR addr, the HTTP_HOSTS names extra
// and the machine's host name hostname ("" none).
func newHostRule(addr string, extra []string, hostname string) hostRule {
	h := hostRule{ips: map[netip.Addr]bool{}, names: map[string]bool{}}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	host = normHost(host)
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.IsUnspecified() {
			h.anyIP = true
		}
		h.ips[ip.Unmap()] = true
	} else if host == "" {
		h.anyIP = true
	} else {
		h.names[host] = true
	}
	if hostname = normHost(hostname); hostname != "" {
		first, _, _ := strings.Cut(hostname, ".")
		h.names[hostname], h.names[first], h.names[first+".local"] = true, true, true
	}
	for _, n := range extra {
		n = normHost(n)
		switch {
		case strings.HasPrefix(n, "*."):
			h.suffixes = append(h.suffixes, n[1:])
		case n != "":
			if ip, err := netip.ParseAddr(n); err == nil {
				h.ips[ip.Unmap()] = true
			} else {
				h.names[n] = true
			}
		}
	}
	return h
}

// normHost is a host name as compared: lower case, no brackets, no
// trailing dot.
func normHost(s string) string {
	s = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
	return strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
}

// allows reports whether a request's Host header (host or host:port) is
// served.
func (h hostRule) allows(hostHeader string) bool {
	host := normHost(hostOnly(hostHeader))
	if host == "" {
		return false
	}
	if isLoopbackHost(host) {
		return true
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return h.anyIP || h.ips[ip.Unmap()]
	}
	if h.names[host] {
		return true
	}
	for _, s := range h.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

// hostOnly is the host of a Host header, without its port.
func hostOnly(hostHeader string) string {
	if host, _, err := net.SplitHostPort(hostHeader); err == nil {
		return host
	}
	return hostHeader
}
