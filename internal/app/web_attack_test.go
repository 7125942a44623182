package app_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/cloudsim"
)

// Attacks on the HTTP endpoint over the whole daemon, as a host on the home
// network would try them (internal/web tries each on the handler alone).

// rawGet sends a GET on a fresh connection from the local address from
// and returns the connection, not reading the answer.
func rawGet(t *testing.T, from, addr, path string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSilentStreamsBlindNoPage: 20 event streams from one address that
// never read (16 once blanked the page for everyone), then a page from
// another address still gets its stream with every device, and the API.
func TestSilentStreamsBlindNoPage(t *testing.T) {
	t.Parallel()
	h := startPage(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(3)}})
	h.devices()
	addr := strings.TrimPrefix(h.main.HTTPURL(), "http://")
	opened := 0
	for range 20 {
		// The status line only (byte by byte: nothing more is read).
		c := rawGet(t, "127.0.0.1", addr, "/api/events")
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var line []byte
		for b := make([]byte, 1); len(line) == 0 || line[len(line)-1] != '\n'; line = append(line, b[0]) {
			if _, err := c.Read(b); err != nil {
				t.Fatalf("the status line: %v", err)
			}
		}
		switch {
		case strings.Contains(string(line), " 200 "):
			opened++
		case !strings.Contains(string(line), " 503 "):
			t.Errorf("a silent stream: %q, want 200 or 503", line)
		}
	}
	if opened != 4 {
		t.Errorf("20 streams from one address: %d opened, want 4", opened)
	}

	page := rawGet(t, "127.0.0.2", addr, "/api/events")
	_ = page.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(page)
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a page from another address: %v %v", resp, err)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var snap struct{ Devices []pageDevice }
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if err := json.Unmarshal([]byte(d), &snap); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if len(snap.Devices) != 3 {
		t.Errorf("the page's snapshot: %d devices, want 3", len(snap.Devices))
	}
	if code, _ := getFrom(t, "127.0.0.2", h.main.HTTPURL()+"/api/devices"); code != 200 {
		t.Errorf("GET /api/devices beside the silent streams: %d", code)
	}
}

// TestTokenGuessingOverTheDaemon: wrong bearer tokens from one address
// are answered 429 with Retry-After after a few, and the log has one line
// a second about them, not one per request. The daemon's clock stands
// still: however long the 300 requests take here, no second passes on it.
func TestTokenGuessingOverTheDaemon(t *testing.T) {
	t.Parallel()
	const token = "daemon-token-7f3e9a1c"
	h := startPage(t, harnessOptions{env: map[string]string{"HTTP_TOKEN": token},
		sim: cloudsim.Options{Catalogue: firstDevices(1)}, frozen: true})
	h.devices()
	codes := map[int]int{}
	var retry string
	for i := range 300 {
		req, _ := http.NewRequest(http.MethodPost, h.main.HTTPURL()+"/api/actions/refresh", strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", fmt.Sprintf("Bearer guess-%06d-abcdefgh", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests {
			retry = resp.Header.Get("Retry-After")
		}
	}
	if codes[http.StatusTooManyRequests] < 290 || retry == "" {
		t.Errorf("300 wrong tokens: %v (Retry-After %q), want all but a few 429 with Retry-After", codes, retry)
	}
	if code, _ := action(t, h, "refresh", map[string]any{}, token); code != http.StatusTooManyRequests {
		t.Errorf("the right token from the guessing address: %d, want 429 until Retry-After", code)
	}
	refused := strings.Count(h.logs.String(), `"message":"http request refused"`)
	if refused < 1 || refused > 10 {
		t.Errorf("%d log lines for 301 refused requests, want about one a second", refused)
	}
	if strings.Contains(h.logs.String(), token) {
		t.Error("the log shows the token")
	}
}

// TestHostRuleOverTheDaemon: a rebinding Host is refused on every path but
// /healthz, and /healthz and /metrics carry the security headers.
func TestHostRuleOverTheDaemon(t *testing.T) {
	t.Parallel()
	h := startPage(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(1)},
		env: map[string]string{"HTTP_HOSTS": "bridge.example.org"}})
	h.devices()
	get := func(path, host string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, h.main.HTTPURL()+path, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for _, path := range []string{"/", "/api/session", "/api/devices", "/metrics"} {
		if resp := get(path, "evil.example:8080"); resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("GET %s as evil.example: %s", path, resp.Status)
		}
		if resp := get(path, "bridge.example.org"); resp.StatusCode != 200 {
			t.Errorf("GET %s as a name of HTTP_HOSTS: %s", path, resp.Status)
		}
	}
	for _, path := range []string{"/healthz", "/metrics"} {
		host := "127.0.0.1"
		if path == "/healthz" {
			host = "evil.example"
		}
		resp := get(path, host)
		for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"} {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("GET %s: %s %q, want %q", path, k, got, want)
			}
		}
		if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("GET %s: no Content-Security-Policy", path)
		}
	}
}
