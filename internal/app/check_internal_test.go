package app

import (
	"net"
	"testing"
)

// TestPageURL: HTTP_ADDR=0.0.0.0:8080, which Go reports as [::]:8080, is shown
// as a URL a browser on this machine opens, not as http://[::]:8080/.
func TestPageURL(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "http://127.0.0.1:8080"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, "http://127.0.0.1:8080"},
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9102}, "http://127.0.0.1:9102"},
		{&net.TCPAddr{IP: net.IPv4(192, 168, 1, 5), Port: 80}, "http://192.168.1.5:80"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 8080}, "http://[::1]:8080"},
	} {
		if got := pageURL(tc.addr); got != tc.want {
			t.Errorf("pageURL(%s) = %s, want %s", tc.addr, got, tc.want)
		}
	}
}

// TestLoopbackListen: -check's judgement of HTTP_ADDR is the status
// page's: only a loopback address or localhost keeps the page to this
// machine.
func TestLoopbackListen(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "[::1]:8080": true, "localhost:8080": true, "127.0.0.53:1": true,
		":8080": false, "0.0.0.0:8080": false, "[::]:8080": false, "192.168.1.2:80": false, "bridge.lan:80": false, "nonsense": false,
	} {
		if got := loopbackListen(addr); got != want {
			t.Errorf("loopbackListen(%s) = %v, want %v", addr, got, want)
		}
	}
}
