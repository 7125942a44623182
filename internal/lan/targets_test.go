package lan

import (
	"context"
	"net/netip"
	"strings"
	"testing"
)

func TestParseTargets(t *testing.T) {
	got, err := ParseTargets(" 239.255.255.250, 192.168.20.31:4001 ,lamp.lan,[fd00::1]:4001,fd00::2")
	if err != nil {
		t.Fatal(err)
	}
	want := []Target{{Host: Group}, {Host: "192.168.20.31", Port: 4001}, {Host: "lamp.lan"},
		{Host: "fd00::1", Port: 4001}, {Host: "fd00::2"}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("target %d: got %v, want %v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"", "a,,b", "host:99999", "host:x", ":4001", "a b"} {
		_, err := ParseTargets(bad)
		if err == nil || !strings.Contains(err.Error(), "LAN_SCAN_TARGETS") {
			t.Errorf("ParseTargets(%q) = %v, want an error naming LAN_SCAN_TARGETS", bad, err)
		}
	}
}

// TestParseTargetsRefusesAtStart: what would pass and then fail as a
// look-up on every scan is refused with a message that says the fix.
func TestParseTargetsRefusesAtStart(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"192.168.1.300", `LAN_SCAN_TARGETS: "192.168.1.300" is not an IP address: use four numbers 0 to 255`},
		{"10.0.0", `"10.0.0" is not an IP address`},
		{"a;b", `LAN_SCAN_TARGETS: "a;b" contains ";": separate targets with a comma, like a,b`},
		{"192.168.1.2; 192.168.1.3", `contains ";": separate targets with a comma, like 192.168.1.2,192.168.1.3`},
		{"a b", `contains " ": separate targets with a comma, like a,b`},
		{"192.168.1.0/24", `LAN_SCAN_TARGETS: "192.168.1.0/24" is a network, not an address: list the lights' addresses separated by commas, or use its broadcast address 192.168.1.255`},
		{"10.1.2.3/22", "broadcast address 10.1.3.255"},
		{"fd00::/64", `"fd00::/64" is a network, not an address: list the lights' addresses`},
		{"lamp_1.lan,-x", `"-x" is not an IP address or a host name`},
		{"lamp!", `"lamp!" is not an IP address or a host name (letters, digits, hyphens and dots)`},
		{"a..b", "is not an IP address or a host name"},
		{":4001", `":4001" has no host`},
	} {
		_, err := ParseTargets(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseTargets(%q) = %v, want %q", tt.in, err, tt.want)
		}
	}
	for _, good := range []string{"Lamp-1.LAN", "lamp_1", "lamp.lan.", "192.168.1.255", "fe80::1%eth0", "[fe80::1%eth0]:4001", "lamp:4001"} {
		if _, err := ParseTargets(good); err != nil {
			t.Errorf("ParseTargets(%q) = %v, want it accepted", good, err)
		}
	}
}

func TestParseListen(t *testing.T) {
	for in, want := range map[string]string{
		"0.0.0.0:4002": "0.0.0.0:4002", ":4002": "0.0.0.0:4002", "127.0.0.1:0": "127.0.0.1:0",
	} {
		got, err := ParseListen(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseListen(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"4002", "host:4002", "0.0.0.0:70000"} {
		if _, err := ParseListen(bad); err == nil || !strings.Contains(err.Error(), "LAN_LISTEN") {
			t.Errorf("ParseListen(%q) = %v, want an error naming LAN_LISTEN", bad, err)
		}
	}
}

func TestResolveAllowsAnySourceOnlyForGroupsAndBroadcasts(t *testing.T) {
	bcast := func() map[netip.Addr]bool { return map[netip.Addr]bool{netip.MustParseAddr("192.168.20.255"): true} }
	tests := []struct {
		targets []Target
		any     bool
	}{
		{[]Target{{Host: "127.0.0.2"}, {Host: "127.0.0.3", Port: 9}}, false},
		{[]Target{{Host: "127.0.0.2"}, {Host: Group}}, true},
		{[]Target{{Host: "192.168.20.255"}}, true},
		{[]Target{{Host: "255.255.255.255"}}, true},
	}
	for _, tt := range tests {
		r, errs := resolve(context.Background(), tt.targets, 4001, bcast)
		if len(errs) > 0 || r.anySource != tt.any || len(r.dests) != len(tt.targets) {
			t.Errorf("resolve(%v) = %+v, %v; want anySource %v", tt.targets, r, errs, tt.any)
		}
	}
	r, _ := resolve(context.Background(), []Target{{Host: "127.0.0.3", Port: 9}, {Host: "127.0.0.2"}}, 4001, bcast)
	if r.dests[0] != netip.MustParseAddrPort("127.0.0.3:9") || r.dests[1] != netip.MustParseAddrPort("127.0.0.2:4001") {
		t.Errorf("ports: %v", r.dests)
	}
}

// FuzzParseTargets: no value crashes the parser, each refusal names
// LAN_SCAN_TARGETS, and each accepted host is an address or a name (what
// resolve may look up).
func FuzzParseTargets(f *testing.F) {
	for _, s := range []string{DefaultScanTargets, "192.168.1.300", "a;b", "192.168.1.0/24", "[fd00::1]:4001,lamp.lan", "fe80::1%eth0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		targets, err := ParseTargets(s)
		if err != nil {
			if !strings.Contains(err.Error(), "LAN_SCAN_TARGETS") {
				t.Fatalf("ParseTargets(%q) = %v, not naming LAN_SCAN_TARGETS", s, err)
			}
			return
		}
		for _, tg := range targets {
			if _, err := netip.ParseAddr(tg.Host); err != nil && !isHostName(tg.Host) {
				t.Fatalf("ParseTargets(%q) accepted host %q", s, tg.Host)
			}
		}
	})
}
