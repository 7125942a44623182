package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

// FuzzActionRequest sends anything to the actions: the handler answers
// every request with JSON, never panics, and nothing reaches the bridge
// without the CSRF token and a well-formed body.
func FuzzActionRequest(f *testing.F) {
	f.Add("read", `{"device":"hall_light"}`, true, "application/json")
	f.Add("enabled", `{"device":"hall_light","enabled":true}`, true, "application/json")
	f.Add("poll-interval", `{"device":"hall_light","poll_interval":null}`, true, "application/json; charset=utf-8")
	f.Add("refresh-devices", ``, false, "application/json")
	f.Add("refresh", `{}`, true, "application/json")
	f.Add("republish", `{"device":"`+strings.Repeat("x", 5000)+`"}`, true, "application/json")
	f.Add("read", `{"device":"\u0000"}`, true, "text/plain")
	f.Add("..%2f", `{"device":1}`, true, "application/json")
	src := newFakeSource()
	act := &fakeActions{src: src}
	h, err := New(Options{Source: src, Actions: act, Addr: "127.0.0.1:8080", Now: func() time.Time { return t0 }})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, action, body string, withCSRF bool, contentType string) {
		r := httptest.NewRequest("POST", "/api/actions/"+url.PathEscape(action), strings.NewReader(body))
		r.Host = "127.0.0.1:8080"
		r.Header.Set("Content-Type", contentType)
		if withCSRF {
			r.Header.Set(csrfHeader, h.guard.csrf)
		}
		before := len(act.log())
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code == 307 || w.Code == 301 { // "." or "..": the mux redirects to the clean path
			if len(act.log()) > before || w.Header().Get("Location") == "" {
				t.Fatalf("%d redirect: %v %v", w.Code, w.Header(), act.log()[before:])
			}
			return
		}
		var answer struct {
			Status, Error string
		}
		if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil {
			t.Fatalf("%d, not JSON: %q", w.Code, w.Body)
		}
		called := len(act.log()) > before
		if w.Code == 200 {
			if answer.Status != "ok" || !called {
				t.Fatalf("200 without an action: %s, calls %v", w.Body, act.log()[before:])
			}
		} else if answer.Status != "error" || answer.Error == "" || called {
			t.Fatalf("%d: %s, called %v", w.Code, w.Body, called)
		}
		if called && !withCSRF {
			t.Fatal("an action without the CSRF token")
		}
	})
}

// FuzzHostHeader sends any Host: the rule never panics, admits only what
// it should (a loopback name or address, an IP address on a wildcard bind,
// the configured names), answers 421 otherwise, and /healthz answers
// every Host.
func FuzzHostHeader(f *testing.F) {
	for _, s := range []string{"127.0.0.1:8080", "localhost", "[::1]:80", "evil.example", "bridge.lan:8080", "x.home.arpa",
		"home.arpa", "bridgehost.local", "", "[", "::1", "192.168.1.5:8080", "LOCALHOST.", "%", "a.localhost:1"} {
		f.Add(s)
	}
	src := newFakeSource()
	h, err := New(Options{Source: src, Addr: ":8080", Hosts: []string{"bridge.lan", "*.home.arpa"}, HostName: "bridgehost",
		Health: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }),
		Now:    func() time.Time { return t0 }})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, host string) {
		for _, path := range []string{"/api/session", "/healthz"} {
			r := httptest.NewRequest("GET", path, nil)
			r.Host = host
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if path == "/healthz" {
				if w.Code != 200 {
					t.Fatalf("/healthz with Host %q: %d", host, w.Code)
				}
				continue
			}
			n := normHost(hostOnly(host))
			_, ipErr := netip.ParseAddr(n)
			want := isLoopbackHost(n) || ipErr == nil || n == "bridge.lan" || strings.HasSuffix(n, ".home.arpa") ||
				n == "bridgehost" || n == "bridgehost.local"
			if n == "" {
				want = false
			}
			if got := w.Code == 200; got != want || !got && w.Code != http.StatusMisdirectedRequest {
				t.Fatalf("Host %q: %d %s, want served %v", host, w.Code, w.Body, want)
			}
			if w.Code != 200 && strings.Contains(w.Body.String(), h.guard.csrf) {
				t.Fatal("a refused Host got the CSRF token")
			}
		}
	})
}
