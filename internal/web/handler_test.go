package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// env is a handler over the fake source, as the app would build it.
type env struct {
	t   *testing.T
	src *fakeSource
	act *fakeActions
	h   *Handler
	csr string
}

func newEnv(t *testing.T, addr, token string) *env {
	t.Helper()
	src := newFakeSource()
	act := &fakeActions{src: src}
	hist := NewHistory(t0.Add(-2 * time.Hour))
	for i := range 120 { // one state read a minute for two hours, a control every ten
		at := t0.Add(-time.Duration(i)*time.Minute - time.Second)
		hist.Observe("state", at)
		if i%10 == 0 {
			hist.Observe("control", at)
		}
	}
	h, err := New(Options{Source: src, Actions: act, History: hist, Addr: addr, Token: token, Interval: time.Millisecond,
		HostName: "bridgehost", Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	e := &env{t: t, src: src, act: act, h: h}
	var s sessionJSON
	e.getJSON("/api/session", &s)
	e.csr = s.CSRFToken
	return e
}

// do serves one request; host is the Host header (127.0.0.1:8080 when "").
func (e *env) do(method, path, body string, hdr map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Host = "127.0.0.1:8080"
	for k, v := range hdr {
		if k == "Host" {
			r.Host = v
			continue
		}
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	return w
}

func (e *env) getJSON(path string, v any) *httptest.ResponseRecorder {
	e.t.Helper()
	w := e.do("GET", path, "", nil)
	if w.Code != http.StatusOK {
		e.t.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		e.t.Fatalf("GET %s: Content-Type %q", path, ct)
	}
	if err := json.Unmarshal(w.Body.Bytes(), v); err != nil {
		e.t.Fatalf("GET %s: %v in %s", path, err, w.Body)
	}
	return w
}

// post sends an action as the page does: JSON, same origin, CSRF token.
func (e *env) post(path, body string, extra map[string]string) *httptest.ResponseRecorder {
	hdr := map[string]string{"Content-Type": "application/json", "Origin": "http://127.0.0.1:8080",
		"Sec-Fetch-Site": "same-origin", csrfHeader: e.csr}
	for k, v := range extra {
		if v == "" {
			delete(hdr, k)
		} else {
			hdr[k] = v
		}
	}
	return e.do("POST", path, body, hdr)
}

func TestPageAndAssets(t *testing.T) {
	e := newEnv(t, "127.0.0.1:8080", "")
	for _, c := range []struct{ path, typ, contains string }{
		{"/", "text/html; charset=utf-8", `<script src="app.js" defer></script>`},
		{"/app.js", "text/javascript; charset=utf-8", "new EventSource("},
		{"/budget.js", "text/javascript; charset=utf-8", "function renderBudget("},
		{"/app.css", "text/css; charset=utf-8", "prefers-color-scheme"},
		{"/favicon.svg", "image/svg+xml", "<svg"},
	} {
		w := e.do("GET", c.path, "", nil)
		if w.Code != 200 || w.Header().Get("Content-Type") != c.typ || !strings.Contains(w.Body.String(), c.contains) {
			t.Errorf("GET %s: %d %q, body has %q: %v", c.path, w.Code, w.Header().Get("Content-Type"), c.contains, strings.Contains(w.Body.String(), c.contains))
		}
	}
	page := e.do("GET", "/", "", nil).Body.String()
	// CSP forbids inline code: the page must not rely on any.
	for _, bad := range []string{"<script>", " style=", "<style", "onclick=", "onload=", "javascript:", "http://", "https://"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page contains %q, which the policy forbids or which leaves the origin", bad)
		}
	}
	if w := e.do("GET", "/nothing-here", "", nil); w.Code != 404 {
		t.Errorf("GET /nothing-here: %d", w.Code)
	}
}

func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	e := newEnv(t, "127.0.0.1:8080", "secret-token-1234")
	reqs := []*httptest.ResponseRecorder{
		e.do("GET", "/", "", nil),
		e.do("GET", "/app.js", "", nil),
		e.do("GET", "/api/devices", "", nil),
		e.do("GET", "/api/devices/nope", "", nil),
		e.do("GET", "/api/nope", "", nil),
		e.do("GET", "/nope", "", nil),
		e.do("PUT", "/api/devices", "", nil),
		e.post("/api/actions/read", `{"device":"hall_light"}`, nil),
	}
	for i, w := range reqs {
		if got := w.Header().Get("Content-Security-Policy"); got != csp {
			t.Errorf("response %d (%d): CSP %q", i, w.Code, got)
		}
		if got := w.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("response %d (%d): X-Content-Type-Options %q", i, w.Code, got)
		}
	}
	for _, part := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:",
		"connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, part) {
			t.Errorf("CSP lacks %q", part)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("CSP allows something unsafe: %s", csp)
	}
}

func TestDevicesAPI(t *testing.T) {
	e := newEnv(t, "127.0.0.1:8080", "")
	var list struct {
		Now     time.Time        `json:"now"`
		Devices []map[string]any `json:"devices"`
	}
	e.getJSON("/api/devices", &list)
	if len(list.Devices) != 4 || !list.Now.Equal(t0) {
		t.Fatalf("devices: %d, now %v", len(list.Devices), list.Now)
	}
	hall := list.Devices[0]
	for k, want := range map[string]any{"id": "hall_light", "name": "Hall light", "model": "H6008", "type": "devices.types.light",
		"status": "online", "path": "cloud", "poll_interval": 60.0, "own_interval": false, "disabled": false,
		"last_read": t0.Add(-12 * time.Second).Format(time.RFC3339), "last_error": ""} {
		if hall[k] != want {
			t.Errorf("hall_light %s = %#v, want %#v", k, hall[k], want)
		}
	}
	if list.Devices[3]["last_read"] != nil || list.Devices[3]["disabled"] != true {
		t.Errorf("garden_plug never read and disabled: %v", list.Devices[3])
	}

	var d struct {
		Name         string         `json:"name"`
		Values       map[string]any `json:"values"`
		Capabilities []struct {
			Type, Instance string
		} `json:"capabilities"`
	}
	e.getJSON("/api/devices/hall_light", &d)
	if d.Name != "Hall light" || d.Values["brightness"] != 80.0 || len(d.Capabilities) != 2 || d.Capabilities[1].Instance != "brightness" {
		t.Errorf("hall_light detail: %+v", d)
	}
	var plug map[string]any
	e.getJSON("/api/devices/garden_plug", &plug)
	if v, ok := plug["values"].(map[string]any); !ok || len(v) != 0 {
		t.Errorf("a device without values has values {}: %v", plug["values"])
	}
	w := e.do("GET", "/api/devices/cellar", "", nil)
	if w.Code != 404 || !strings.Contains(w.Body.String(), `"error":"no device has the id \"cellar\"`) {
		t.Errorf("unknown device: %d %s", w.Code, w.Body)
	}
}

func TestBudgetAPI(t *testing.T) {
	e := newEnv(t, "127.0.0.1:8080", "")
	var b struct {
		RequestsToday int        `json:"requests_today"`
		DailyLimit    int        `json:"daily_limit"`
		RateLimited   int        `json:"rate_limited"`
		Last429       time.Time  `json:"last_429"`
		QueueDepth    int        `json:"queue_depth"`
		InFlight      int        `json:"in_flight"`
		PollInterval  float64    `json:"poll_interval"`
		Midnight      time.Time  `json:"midnight"`
		Pace          float64    `json:"pace_per_hour"`
		Projected     int        `json:"projected_today"`
		OverLimit     bool       `json:"over_limit"`
		Buckets       []Bucket   `json:"buckets"`
		Hourly        []Hour     `json:"hourly"`
		Extra         *time.Time `json:"now"`
	}
	e.getJSON("/api/budget", &b)
	if b.RequestsToday != 6234 || b.DailyLimit != 10000 || b.RateLimited != 2 || !b.Last429.Equal(t0.Add(-90*time.Minute)) ||
		b.QueueDepth != 3 || b.InFlight != 1 || b.PollInterval != 60 || len(b.Buckets) != 4 {
		t.Errorf("scheduler's figures: %+v", b)
	}
	// 60 state reads and 6 controls in the last hour; 9.5 hours to
	// midnight: 6234 + 66 × 9.5 = 6861.
	if !b.Midnight.Equal(time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)) || b.Pace != 66 || b.Projected != 6861 || b.OverLimit {
		t.Errorf("projection: midnight %v, pace %v, projected %d, over %v", b.Midnight, b.Pace, b.Projected, b.OverLimit)
	}
	if len(b.Hourly) != 24 || !b.Hourly[23].Start.Equal(t0.Truncate(time.Hour)) {
		t.Fatalf("hourly: %d hours, last %v", len(b.Hourly), b.Hourly[len(b.Hourly)-1].Start)
	}
	// 14:00-14:30 has 30 reads and 3 controls, 13:00 60 and 6, 12:00 the
	// 30 of 12:30-12:59 and 3.
	for i, want := range map[int]Hour{23: {State: 30, Control: 3}, 22: {State: 60, Control: 6}, 21: {State: 30, Control: 3}, 20: {}} {
		got := b.Hourly[i]
		got.Start = time.Time{}
		if got != want {
			t.Errorf("hour %d (%v): %+v, want %+v", i, b.Hourly[i].Start, got, want)
		}
	}

	e.src.setBudget(func(b *Budget) { b.DailyLimit = 6500 })
	var over budgetJSON
	e.getJSON("/api/budget", &over)
	if !over.OverLimit {
		t.Errorf("a projection of %d passes a limit of 6500: over_limit false", *over.Projected)
	}
}

func TestBudgetWithoutHistoryOrLimit(t *testing.T) {
	src := newFakeSource()
	src.setBudget(func(b *Budget) { b.DailyLimit = 0; b.Last429 = nil; b.Buckets = nil })
	h, err := New(Options{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, localRequest("GET", "/api/budget"))
	body := w.Body.String()
	for _, want := range []string{`"daily_limit":0`, `"last_429":null`, `"pace_per_hour":null`, `"projected_today":null`, `"buckets":[]`, `"hourly":[]`} {
		if !strings.Contains(body, want) {
			t.Errorf("budget lacks %s: %s", want, body)
		}
	}
}

func TestProblemsAPI(t *testing.T) {
	e := newEnv(t, "127.0.0.1:8080", "")
	e.src.problems.AddJSON([]byte(`{"level":"warning","message":"list failed","time":"2026-11-25T14:29:00Z","error":"timeout"}`))
	var p problemsJSON
	e.getJSON("/api/problems", &p)
	if len(p.Problems) != 3 {
		t.Fatalf("problems: %+v", p)
	}
	if p.Problems[0].Message != "list failed" || p.Problems[1].Message != "rate limited" || p.Problems[2].Message != "read failed" {
		t.Errorf("not newest first: %+v", p.Problems)
	}
	if p.Problems[0].Fields["error"] != "timeout" || p.Problems[0].Level != "warning" {
		t.Errorf("fields: %+v", p.Problems[0])
	}
}

func TestSessionAPI(t *testing.T) {
	for _, c := range []struct {
		name, addr, token, host, actions string
	}{
		{"loopback", "127.0.0.1:8080", "", "", accessOpen},
		{"localhost", "localhost:8080", "", "localhost:8080", accessOpen},
		{"ipv6 loopback", "[::1]:8080", "", "[::1]:8080", accessOpen},
		{"all interfaces", ":8080", "", "", accessOff},
		{"lan address", "192.168.1.5:8080", "", "192.168.1.5:8080", accessOff},
		{"another name of the machine", "127.0.0.1:8080", "", "bridgehost:8080", accessOff},
		{"token on loopback", "127.0.0.1:8080", "tok-abcdef", "", accessToken},
		{"token on lan", "0.0.0.0:8080", "tok-abcdef", "", accessToken},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.addr, c.token)
			hdr := map[string]string{}
			if c.host != "" {
				hdr["Host"] = c.host
			}
			w := e.do("GET", "/api/session", "", hdr)
			var s sessionJSON
			if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
				t.Fatal(err)
			}
			if s.Actions != c.actions || len(s.CSRFToken) < 32 || !s.ActionsOffer {
				t.Errorf("session: %+v", s)
			}
			if c.actions == accessOff && !strings.Contains(s.Reason, "HTTP_TOKEN") {
				t.Errorf("the page must say why actions are off and what to do: %q", s.Reason)
			}
		})
	}
}

func TestLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.1.2.3:1": true, "localhost:80": true, "[::1]:8080": true, "LOCALHOST.:1": true,
		":8080": false, "0.0.0.0:8080": false, "[::]:8080": false, "192.168.1.2:80": false, "bridge.lan:80": false, "": false,
	} {
		if got := isLoopbackAddr(addr); got != want {
			t.Errorf("isLoopbackAddr(%q) = %v", addr, got)
		}
	}
}

func jsonOf(w *httptest.ResponseRecorder, v any) error { return json.Unmarshal(w.Body.Bytes(), v) }

// localRequest is a request from 192.0.2.1 to 127.0.0.1:8080.
func localRequest(method, path string) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	r.Host = "127.0.0.1:8080"
	return r
}
