package web

import (
	"bufio"
	"bytes"
	"cloud2mqtt/internal/testkit"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"
)

// Attacks on the page and its API, each tried as an attacker on the home
// network (or a web page a resident opens) would.

// attackHandler is a handler bound to addr over the fake source, with
// /healthz and /metrics, its log in a buffer and a clock the test moves.
type attackHandler struct {
	h   *Handler
	src *fakeSource
	act *fakeActions
	log *syncBuffer
	now time.Time
	mu  sync.Mutex
}

func newAttackHandler(t *testing.T, o Options) *attackHandler {
	t.Helper()
	a := &attackHandler{src: newFakeSource(), log: &syncBuffer{}, now: t0}
	a.act = &fakeActions{src: a.src}
	o.Source, o.Actions = a.src, a.act
	o.Log = zerolog.New(a.log).Level(zerolog.DebugLevel)
	o.Now = a.clock
	if o.HostName == "" {
		o.HostName = "bridgehost"
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	o.Health, o.Metrics = ok, ok
	h, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	a.h = h
	return a
}

func (a *attackHandler) clock() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.now
}

func (a *attackHandler) advance(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.now = a.now.Add(d)
}

// do serves a request from client (an IP address) to Host host.
func (a *attackHandler) do(method, path, host, client, body string, hdr map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Host, r.RemoteAddr = host, client+":40000"
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	a.h.ServeHTTP(w, r)
	return w
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines are the log's JSON lines.
func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// TestRebindingRefused: a page on another name whose DNS turned to the
// bridge's address sends its requests with its own name as Host: every
// path but /healthz is answered 421, and none gives away a byte of the
// page's data or its CSRF token.
func TestRebindingRefused(t *testing.T) {
	for _, c := range []struct {
		name, addr string
		hosts      []string
		served     []string // Host headers served
		refused    []string // Host headers answered 421
	}{
		{"loopback", "127.0.0.1:8080", nil,
			[]string{"127.0.0.1:8080", "localhost:8080", "LOCALHOST.:8080", "[::1]:8080", "app.localhost", "127.0.0.2", "bridgehost:8080", "bridgehost.local"},
			[]string{"evil.example:8080", "evil.example", "127.0.0.1.evil.example", "localhost.evil.example", "192.168.1.5:8080", "bridgehost.evil.example", ""}},
		{"a LAN address", "192.168.1.5:8080", nil,
			[]string{"192.168.1.5:8080", "192.168.1.5", "localhost:8080", "bridgehost:8080"},
			[]string{"evil.example:8080", "192.168.1.6:8080", "bridge.lan:8080"}},
		{"every interface", ":8080", []string{"bridge.lan", "*.home.arpa"},
			[]string{"192.168.1.5:8080", "10.0.0.7", "[fd00::5]:8080", "bridge.lan:8080", "BRIDGE.LAN.", "c2m.home.arpa:8080", "localhost:8080"},
			[]string{"evil.example:8080", "home.arpa", "bridge.lan.evil.example", "evilhome.arpa"}},
		{"a host name", "bridge.lan:8080", nil,
			[]string{"bridge.lan:8080", "127.0.0.1:8080"},
			[]string{"evil.example:8080", "192.168.1.5:8080"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newAttackHandler(t, Options{Addr: c.addr, Hosts: c.hosts})
			for _, host := range c.served {
				if w := a.do("GET", "/api/devices", host, "192.0.2.10", "", nil); w.Code != 200 {
					t.Errorf("Host %q: %d %s, want it served", host, w.Code, w.Body)
				}
			}
			for _, host := range c.refused {
				for _, path := range []string{"/", "/app.js", "/api/session", "/api/devices", "/api/devices/hall_light", "/api/budget",
					"/api/problems", "/api/events", "/metrics", "/nothing"} {
					w := a.do("GET", path, host, "192.0.2.10", "", nil)
					body := w.Body.String()
					if w.Code != http.StatusMisdirectedRequest || strings.Contains(body, a.h.guard.csrf) || strings.Contains(body, "Hall light") {
						t.Errorf("Host %q GET %s: %d %s, want 421 and nothing of the page", host, path, w.Code, body)
					}
					if w.Header().Get("Content-Security-Policy") != csp || w.Header().Get("X-Frame-Options") != "DENY" {
						t.Errorf("Host %q GET %s: the refusal lacks the security headers: %v", host, path, w.Header())
					}
				}
				if w := a.do("GET", "/healthz", host, "192.0.2.10", "", nil); w.Code != 200 || w.Header().Get("X-Content-Type-Options") != "nosniff" {
					t.Errorf("Host %q GET /healthz: %d %v: it answers every name, with the headers", host, w.Code, w.Header())
				}
			}
			if w := a.do("GET", "/api/session", "evil.example:8080", "192.0.2.10", "", nil); !strings.Contains(w.Body.String(), "HTTP_HOSTS") {
				t.Errorf("the refusal names the fix: %s", w.Body)
			}
		})
	}
}

// TestTokenGuessingSlowed: wrong bearer tokens, wrong logins and /api/session
// used as an oracle: after a few wrong tokens an address gets 429 with
// Retry-After whatever it sends, while another address is served; the wait ends.
func TestTokenGuessingSlowed(t *testing.T) {
	const token = "right-token-0123456789"
	for _, c := range []struct {
		name string
		try  func(a *attackHandler, client, guess string) *httptest.ResponseRecorder
	}{
		{"bearer", func(a *attackHandler, client, guess string) *httptest.ResponseRecorder {
			return a.do("POST", "/api/actions/read", "192.168.1.5:8080", client, `{"device":"hall_light"}`,
				map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + guess})
		}},
		{"login", func(a *attackHandler, client, guess string) *httptest.ResponseRecorder {
			return a.do("POST", "/api/login", "192.168.1.5:8080", client, `{"token":"`+guess+`"}`,
				map[string]string{"Content-Type": "application/json", csrfHeader: a.h.guard.csrf})
		}},
		{"session", func(a *attackHandler, client, guess string) *httptest.ResponseRecorder {
			return a.do("GET", "/api/session", "192.168.1.5:8080", client, "", map[string]string{"Authorization": "Bearer " + guess})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newAttackHandler(t, Options{Addr: ":8080", Token: token})
			codes := map[int]int{}
			for i := range 1000 {
				w := c.try(a, "192.168.1.66", "guess-number-"+string(rune('a'+i%26))+"-0000")
				codes[w.Code]++
				if w.Code == http.StatusTooManyRequests && w.Header().Get("Retry-After") == "" {
					t.Fatalf("429 without Retry-After: %v", w.Header())
				}
				if w.Code == 200 && c.name != "session" {
					t.Fatalf("a wrong token was accepted: %s", w.Body)
				}
			}
			answered := 1000 - codes[http.StatusTooManyRequests]
			if answered > tokenTries {
				t.Errorf("1000 wrong tokens from one address: %d compared (%v), want at most %d", answered, codes, tokenTries)
			}
			// The right token from the guessing address waits too.
			w := c.try(a, "192.168.1.66", token)
			if w.Code != http.StatusTooManyRequests {
				t.Errorf("the right token from the blocked address: %d, want 429 until the wait is over", w.Code)
			}
			ra := w.Header().Get("Retry-After")
			// Another address is served at once.
			if w := c.try(a, "192.168.1.20", token); w.Code != 200 {
				t.Errorf("the right token from another address: %d %s", w.Code, w.Body)
			}
			// After Retry-After, one more try.
			d, _ := time.ParseDuration(ra + "s")
			a.advance(d)
			if w := c.try(a, "192.168.1.66", token); w.Code != 200 {
				t.Errorf("the right token after Retry-After (%s s): %d %s", ra, w.Code, w.Body)
			}
		})
	}
}

// TestRefusalsLoggedOncePerSecond: a flood of refused requests from one
// address writes one log line a second with the count of the others, even
// at debug level; another address has its own line.
func TestRefusalsLoggedOncePerSecond(t *testing.T) {
	a := newAttackHandler(t, Options{Addr: "127.0.0.1:8080"})
	for range 1000 {
		a.do("GET", "/api/devices", "evil.example", "192.168.1.66", "", nil)
	}
	a.do("POST", "/api/actions/read", "127.0.0.1:8080", "192.168.1.67", `{}`, map[string]string{"Content-Type": "application/json"})
	lines := a.log.lines(t)
	if len(lines) != 2 {
		t.Fatalf("1000 refusals from one address and one from another: %d log lines, want 2:\n%v", len(lines), lines)
	}
	if l := lines[0]; l["client"] != "192.168.1.66" || l["status"] != 421.0 || l["level"] != "warn" || l["path"] != "/api/devices" {
		t.Errorf("the first line: %v", l)
	}
	if l := lines[1]; l["client"] != "192.168.1.67" || l["status"] != 403.0 || !strings.Contains(l["reason"].(string), csrfHeader) {
		t.Errorf("the other address's line: %v", l)
	}
	a.advance(time.Second)
	a.do("GET", "/", "evil.example", "192.168.1.66", "", nil)
	lines = a.log.lines(t)
	if len(lines) != 3 || lines[2]["not_logged"] != 999.0 {
		t.Errorf("a second later: %v, want one line with not_logged 999", lines[len(lines)-1])
	}
	// What the client sent is cut before it is logged.
	a.advance(time.Second)
	a.do("GET", "/"+strings.Repeat("x", 5000), "evil.example", "192.168.1.66", "", nil)
	if l := a.log.lines(t)[3]; len(l["path"].(string)) > 70 {
		t.Errorf("a long path logged whole: %d bytes", len(l["path"].(string)))
	}
}

// TestBodyTooLarge: a body over the limit is 413, logged, not read whole.
func TestBodyTooLarge(t *testing.T) {
	a := newAttackHandler(t, Options{Addr: "127.0.0.1:8080"})
	w := a.do("POST", "/api/actions/read", "127.0.0.1:8080", "127.0.0.1", `{"device":"`+strings.Repeat("x", 1<<20)+`"}`,
		map[string]string{"Content-Type": "application/json", csrfHeader: a.h.guard.csrf})
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "over 4096 bytes") {
		t.Errorf("a 1 MiB body: %d %s", w.Code, w.Body)
	}
	if len(a.act.log()) != 0 || len(a.log.lines(t)) != 1 {
		t.Errorf("calls %v, log %v", a.act.log(), a.log.lines(t))
	}
}

// TestStreamsPerClient: 16 unread event streams from one address get 4 slots
// and the rest 503 with Retry-After, and another address still gets its stream.
func TestStreamsPerClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newAttackHandler(t, Options{Addr: ":8080", Interval: time.Millisecond})
		refused, release := 0, make(chan struct{})
		defer close(release)
		for range 16 {
			w := newBlockedWriter(release)
			r := httptest.NewRequest("GET", "/api/events", nil)
			r.Host, r.RemoteAddr = "192.168.1.5:8080", "192.168.1.66:40000"
			done := make(chan struct{})
			go func() { defer close(done); a.h.ServeHTTP(w, r) }()
			synctest.Wait()
			select {
			case <-done:
				if w.status != http.StatusServiceUnavailable || w.header.Get("Retry-After") == "" {
					t.Fatalf("a refused stream: %d %v", w.status, w.header)
				}
				refused++
			default: // open, its writes blocked: it never reads
			}
		}
		if refused != 12 {
			t.Errorf("16 streams from one address: %d refused, want 12 (4 per address)", refused)
		}
		w, cancel, done := openStream(a.h)
		synctest.Wait()
		var snap snapshotJSON
		if err := json.Unmarshal([]byte(w.next(t, "snapshot")), &snap); err != nil || len(snap.Devices) != 4 {
			t.Errorf("a page from another address: %d devices, %v", len(snap.Devices), err)
		}
		cancel()
		<-done
	})
}

// blockedWriter is a client that never reads: every write of a stream
// waits until the test lets go (its connection is full).
type blockedWriter struct {
	header  http.Header
	status  int
	release chan struct{}
}

func newBlockedWriter(release chan struct{}) *blockedWriter {
	return &blockedWriter{header: http.Header{}, release: release}
}
func (w *blockedWriter) Header() http.Header { return w.header }
func (w *blockedWriter) WriteHeader(s int)   { w.status = s }
func (w *blockedWriter) Flush()              {}
func (w *blockedWriter) Write(p []byte) (int, error) {
	if w.status != http.StatusOK && w.status != 0 {
		return len(p), nil
	}
	<-w.release
	return 0, errors.New("connection reset")
}

// churnSource is an account of n devices that all change at every look:
// an event stream sends them all every tick.
type churnSource struct {
	*fakeSource
	n    int
	mu   sync.Mutex
	tick int
}

func (c *churnSource) Devices() []Device {
	c.mu.Lock()
	c.tick++
	tick, n := c.tick, c.n
	c.mu.Unlock()
	out := make([]Device, n)
	for i := range out {
		out[i] = Device{ID: fmt.Sprintf("device_%04d", i), Name: fmt.Sprintf("Light %d", i), Model: "H6008",
			Type: "devices.types.light", Status: StatusOnline, Path: "cloud", LastError: fmt.Sprint("look ", tick)}
	}
	return out
}

// TestSlowReaderLosesItsStream: a client that opens a stream and stops
// reading loses it (and its slot) once its connection has been full for
// the write timeout; a client that reads keeps its stream for longer than
// the write timeout and the server's ReadTimeout.
func TestSlowReaderLosesItsStream(t *testing.T) {
	src := &churnSource{fakeSource: newFakeSource(), n: 10}
	h, err := New(Options{Source: src, Addr: "127.0.0.1:0", Interval: time.Millisecond, WriteTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ReadTimeout = 50 * time.Millisecond
	srv.Config.RegisterOnShutdown(h.Close)
	srv.Start()
	t.Cleanup(func() { h.Close(); srv.Close() })

	// A reader: 300 looks at 1 ms, past both timeouts.
	resp, err := http.Get(srv.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	events := 0
	for events < 300 && sc.Scan() {
		if strings.HasPrefix(sc.Text(), "event: devices") {
			events++
		}
	}
	if events < 300 {
		t.Fatalf("a reading client lost its stream after %d events: %v", events, sc.Err())
	}
	resp.Body.Close()
	testkit.WaitFor(t, 20*time.Second, "the reader's stream closed", func() bool { return h.slots.count() == 0 })

	// A client that never reads, with a small receive window, and much
	// to send it.
	src.mu.Lock()
	src.n = 2000
	src.mu.Unlock()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return errors.Join(err, serr)
	}}
	conn, err := d.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "the silent client's stream open", func() bool { return h.slots.count() == 1 })
	testkit.WaitFor(t, 20*time.Second, "the silent client's stream closed by the write deadline", func() bool { return h.slots.count() == 0 })
}
