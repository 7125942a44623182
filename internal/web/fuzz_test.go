package web

import (
	"encoding/json"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"cloud2mqtt/internal/capability"
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
	f.Add("read", `{"device":"hall_light"}`, true, "application/jsonx")
	f.Add("read", `{"device":"hall_light"}`, true, "Application/JSON; charset=UTF-8")
	f.Add("read", `{"device":"hall_light"}`, true, "application/json; charset")
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
		if mt, _, err := mime.ParseMediaType(contentType); called && (err != nil || mt != "application/json") {
			t.Fatalf("an action with Content-Type %q", contentType)
		}
	})
}

// FuzzIngressOrigin sends an action through the ingress listener with any
// Origin and X-Forwarded-Host: it is carried out only when the Origin is
// an http(s) origin naming the host in X-Forwarded-Host (a port left out
// being the scheme's), never without either.
func FuzzIngressOrigin(f *testing.F) {
	for _, s := range [][2]string{
		{"http://homeassistant.local:8123", "homeassistant.local:8123"}, {"https://ha.example.org", "ha.example.org:443"},
		{"https://ha.example.org", "ha.example.org, proxy.lan"}, {"http://evil.example", ""}, {"", "homeassistant.local:8123"},
		{"null", "null"}, {"http://[::1]:8123", "[::1]:8123"}, {"HTTP://HA.LOCAL.", "ha.local"}, {"http://ha.local:80", "ha.local"},
		{"http://user@ha.local", "ha.local"}, {"http://ha.local/path", "ha.local"}, {"http://", ""},
	} {
		f.Add(s[0], s[1])
	}
	src := newFakeSource()
	act := &fakeActions{src: src}
	h, err := New(Options{Source: src, Actions: act, Addr: "127.0.0.1:8080", Now: func() time.Time { return t0 }})
	if err != nil {
		f.Fatal(err)
	}
	ingress := h.Ingress(netip.MustParseAddr("172.30.32.2"))
	f.Fuzz(func(t *testing.T, origin, fwd string) {
		r := httptest.NewRequest("POST", "/api/actions/read", strings.NewReader(`{"device":"hall_light"}`))
		r.RemoteAddr = "172.30.32.2:51000"
		r.Host = "local-cloud2mqtt:8099"
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(csrfHeader, h.guard.csrf)
		r.Header["Origin"] = []string{origin}
		r.Header["X-Forwarded-Host"] = []string{fwd}
		before := len(act.log())
		w := httptest.NewRecorder()
		ingress.ServeHTTP(w, r)
		called := len(act.log()) > before
		if called != (w.Code == 200) {
			t.Fatalf("%d, called %v", w.Code, called)
		}
		if !called {
			return
		}
		u, err := url.Parse(origin)
		first, _, _ := strings.Cut(fwd, ",")
		if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Hostname() == "" || strings.TrimSpace(first) == "" ||
			!strings.Contains(strings.ToLower(first), strings.Trim(strings.ToLower(u.Hostname()), ".")) {
			t.Fatalf("an action through ingress with Origin %q and X-Forwarded-Host %q", origin, fwd)
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

// FuzzReadings shows any value the cloud may send for any capability of
// the rich device (or one it does not list): exactly one reading, with a
// text, and a swatch's colour only as a hex code.
func FuzzReadings(f *testing.F) {
	rich := richDevice(t0)
	for i, v := range []string{`16746496`, `-1`, `"red"`, `21.5`, `{"workMode":1,"modeValue":3}`, `{"workMode":"x"}`,
		`{"temperature":72,"unit":"Fahrenheit","autoStop":1}`, `{"musicMode":5,"sensitivity":80,"rgb":255}`, `null`, `[1,{"a":[]}]`,
		`true`, `1e308`, `{"temperature":{"deep":[1]}}`, `""`} {
		f.Add(uint8(i), []byte(v))
	}
	f.Fuzz(func(t *testing.T, sel uint8, raw []byte) {
		v, err := capability.Normalize(raw)
		if err != nil {
			return
		}
		instance := "unlisted"
		if int(sel) < len(rich.Capabilities) {
			instance = rich.Capabilities[sel].Instance
		}
		rs := readings(rich.Capabilities, map[string]any{instance: v})
		if len(rs) != 1 || rs[0].Instance != instance || rs[0].Text == "" || !utf8.ValidString(rs[0].Text) {
			t.Fatalf("%s=%s: %+v", instance, raw, rs)
		}
		if c := rs[0].Color; c != "" && (len(c) != 7 || c[0] != '#' || strings.Trim(c[1:], "0123456789ABCDEF") != "") {
			t.Fatalf("%s=%s: swatch colour %q", instance, raw, c)
		}
	})
}

// FuzzSavedHistory restores whatever a state file holds: never a panic,
// never a negative count nor one beyond what a day of requests could be.
func FuzzSavedHistory(f *testing.F) {
	f.Add([]byte(`{"hours":[{"start":"2026-11-25T13:00:00Z","state":60,"control":6}]}`))
	f.Add([]byte(`{"hours":[{"start":"2026-11-25T13:30:00Z","state":-60,"other":9223372036854775807}]}`))
	f.Add([]byte(`{"hours":[{"start":"0001-01-01T00:00:00Z","state":1},{"start":"2999-01-01T00:00:00Z","list":1}]}`))
	f.Fuzz(func(t *testing.T, file []byte) {
		var s SavedHistory
		if json.Unmarshal(file, &s) != nil {
			return
		}
		h := NewHistory(t0)
		h.Restore(s)
		h.Observe("state", t0)
		for _, hr := range h.Hours(t0) {
			for _, n := range []int{hr.State, hr.Control, hr.List, hr.Scenes, hr.Other} {
				if n < 0 || n > 2*maxSavedCount+1 {
					t.Fatalf("restored %s: a count of %d in %+v", file, n, hr)
				}
			}
		}
	})
}
