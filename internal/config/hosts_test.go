package config

import (
	"strings"
	"testing"
)

// FuzzHTTPHosts: any HTTP_HOSTS is parsed without a panic; a name that
// passes the check has no scheme, port, path, space or comma, and a
// refused one is quoted in the message cut to 64 characters.
func FuzzHTTPHosts(f *testing.F) {
	for _, s := range []string{"bridge.example.com", "*.home.arpa, bridge.lan.", "https://x", "a:80", "[fd00::1]", "", ",,", "ä.example", strings.Repeat("a.", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, hosts string) {
		v := validator{}
		c := Config{HTTP: HTTP{Hosts: hosts}}
		v.http(c)
		bad := map[string]bool{}
		for _, p := range v.problems {
			msg := p.Error()
			if !strings.Contains(msg, "HTTP_HOSTS") || len(msg) > 400 {
				t.Fatalf("problem %q", msg)
			}
		}
		for _, h := range c.HTTP.HostNames() {
			if !hostName(strings.TrimPrefix(h, "*.")) {
				bad[h] = true
				continue
			}
			if strings.ContainsAny(strings.Trim(h, "[]"), "/, \t") || strings.Contains(h, "://") {
				t.Fatalf("%q passed the check", h)
			}
		}
		if len(bad) > 0 && len(v.problems) != len(c.HTTP.HostNames())-countGood(c.HTTP.HostNames()) {
			t.Fatalf("%d refused names, %d problems", len(bad), len(v.problems))
		}
	})
}

func countGood(hs []string) int {
	n := 0
	for _, h := range hs {
		if hostName(strings.TrimPrefix(h, "*.")) {
			n++
		}
	}
	return n
}
