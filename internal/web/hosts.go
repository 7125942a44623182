package web

import (
	"net"
	"net/netip"
	"strings"
)

// DNS rebinding lets another site's page reach the bridge under the attacker's
// name, which shows in Host. hostRule admits only names the bridge is known by:
// loopback, HTTP_ADDR's host (any IP address when it binds every interface),
// this machine's host name (also its first label and .local), and HTTP_HOSTS
// ("*.example.org" for every name under it). The port is not compared, since a
// rebinding page uses the bridge's port too.

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
