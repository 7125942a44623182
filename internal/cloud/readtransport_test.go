package cloud

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// stateAnswer is a state answer of tSKU/tDevice.
const stateAnswer = `{"code":200,"msg":"success","payload":{"sku":"H6072","device":"AA:BB:CC:DD:EE:FF:00:11","capabilities":[
	{"type":"devices.capabilities.online","instance":"online","state":{"value":true}},
	{"type":"devices.capabilities.range","instance":"brightness","state":{"value":42}}]}}`

// seenRequest is what a test server kept of a request.
type seenRequest struct {
	method, path, key, contentType, accept, body string
}

// A state read over the daemon's ReadTransport is the same request as over
// net/http (method, path, key, content type, body) and gives the same
// state and the same rate-limit figures.
func TestReadTransportSendsWhatNetHTTPSends(t *testing.T) {
	var last atomic.Pointer[seenRequest]
	handler := func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		// The request id differs each time: compare the rest.
		body := string(b)
		if i := strings.Index(body, `"requestId":"`); i >= 0 {
			body = body[:i+13] + body[i+13+36:]
		}
		last.Store(&seenRequest{r.Method, r.URL.Path, r.Header.Get(DefaultKeyHeader), r.Header.Get("Content-Type"), r.Header.Get("Accept"), body})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-RateLimit-Limit", "10000")
		w.Header().Set("X-RateLimit-Remaining", "9876")
		_, _ = io.WriteString(w, stateAnswer)
	}
	read := func(mods ...func(*Config)) (DeviceState, seenRequest, RateLimits) {
		t.Helper()
		var limits RateLimits
		mods = append(mods, func(cfg *Config) { cfg.OnLimits = func(l RateLimits) { limits = l } })
		c, _ := newTestClient(t, handler, mods...)
		st, err := c.State(t.Context(), tSKU, tDevice)
		if err != nil {
			t.Fatal(err)
		}
		return st, *last.Load(), limits
	}
	fastState, fastReq, fastLimits := read()
	netState, netReq, netLimits := read(netReads)
	if fastReq != netReq {
		t.Errorf("the request over ReadTransport\n%+v\nover net/http\n%+v", fastReq, netReq)
	}
	if fastReq.key != testKey || fastReq.method != http.MethodPost || fastReq.path != PathState {
		t.Errorf("the request: %+v", fastReq)
	}
	if len(fastState.Capabilities) != 2 || fastState.Capabilities[1].Instance != "brightness" {
		t.Errorf("the state read: %#v", fastState)
	}
	if !equalStates(fastState, netState) {
		t.Errorf("the states differ:\n%#v\n%#v", fastState, netState)
	}
	fastLimits.At, netLimits.At = time.Time{}, time.Time{}
	if fastLimits.Short.Limit != 10000 || fastLimits.Short.Remaining != 9876 || fastLimits != netLimits {
		t.Errorf("rate limits over ReadTransport %+v, over net/http %+v", fastLimits, netLimits)
	}
}

func equalStates(a, b DeviceState) bool { return fmt.Sprintf("%#v", a) == fmt.Sprintf("%#v", b) }

// Every way a state read can fail ends in the same error over the
// daemon's ReadTransport as over net/http: its kind, status, code, wait
// and message (the underlying transport's words may differ).
func TestStateReadsFailAlikeOverBothTransports(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		mod     func(*Config)
		kind    ErrorKind
	}{
		{"401", answerWith(401, `{"code":401,"message":"Unauthorized"}`), nil, ErrAuth},
		{"429 retry-after", answerWith(429, "", "Retry-After", "30"), nil, ErrRateLimited},
		{"502 html", answerWith(502, "<html>Bad Gateway</html>"), nil, ErrTransient},
		{"200 not JSON", answerWith(200, "<html>maintenance</html>"), nil, ErrTransient},
		{"200 empty", answerWith(200, ""), nil, ErrTransient},
		{"another device", answerWith(200, `{"code":200,"payload":{"sku":"H6072","device":"11:22","capabilities":[]}}`), nil, ErrTransient},
		{"redirect", answerWith(307, "", "Location", "http://127.0.0.1:9/elsewhere"), nil, ErrRequest},
		{"too large", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write(bytes.Repeat([]byte(" "), MaxResponseBytes+1))
		}, nil, ErrTransient},
		{"chunked", func(w http.ResponseWriter, r *http.Request) {
			for part := range strings.SplitSeq(stateAnswer, "capabilities") {
				_, _ = io.WriteString(w, part)
				w.(http.Flusher).Flush()
				_, _ = io.WriteString(w, "capabilities")
			}
		}, nil, ErrTransient}, // the split leaves a trailing word: not JSON
		{"reset", reset, nil, ErrTransient},
		{"client timeout", hang, func(cfg *Config) { cfg.HTTPClient.Timeout = 100 * time.Millisecond }, ErrTransient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errs [2]*APIError
			for i, reads := range []func(*Config){func(*Config) {}, netReads} {
				mods := []func(*Config){reads}
				if tt.mod != nil {
					mods = append(mods, tt.mod)
				}
				c, _ := newTestClient(t, tt.handler, mods...)
				_, err := c.State(t.Context(), tSKU, tDevice)
				if !errors.As(err, &errs[i]) {
					t.Fatalf("transport %d: error %v (%T), want an *APIError", i, err, err)
				}
			}
			f, n := errs[0], errs[1]
			if f.Kind != tt.kind || f.Kind != n.Kind || f.HTTPStatus != n.HTTPStatus || f.Code != n.Code || f.RetryAfter != n.RetryAfter || f.Msg != n.Msg {
				t.Errorf("over ReadTransport: %v (kind %v, HTTP %d, %q)\nover net/http:     %v (kind %v, HTTP %d, %q)\nwant kind %v",
					f, f.Kind, f.HTTPStatus, f.Msg, n, n.Kind, n.HTTPStatus, n.Msg, tt.kind)
			}
		})
	}
}

// A kept connection the cloud closed between two reads costs nothing: the
// next read goes out on a new one.
func TestReadTransportOutlivesAClosedConnection(t *testing.T) {
	srv := httptest.NewUnstartedServer(answerWith(200, stateAnswer))
	var opened atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL, APIKey: testKey, ReadTransport: newReads(t, srv.URL)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := c.State(t.Context(), tSKU, tDevice); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		srv.CloseClientConnections() // the cloud's keep-alive ran out
	}
	if n := opened.Load(); n != 3 {
		t.Errorf("%d connections for 3 reads with the connection closed after each, want 3", n)
	}
	// Without closing, reads share one connection.
	before := opened.Load()
	for range 5 {
		if _, err := c.State(t.Context(), tSKU, tDevice); err != nil {
			t.Fatal(err)
		}
	}
	if n := opened.Load() - before; n != 1 {
		t.Errorf("5 reads in a row opened %d connections, want 1", n)
	}
}

// A read's context ended while the cloud does not answer ends the read at
// once (a shutdown does not wait for the cloud's timeout), and the
// transport reads again afterwards.
func TestReadTransportStopsWithItsContext(t *testing.T) {
	var hanging atomic.Bool
	started := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hanging.Load() {
			started <- struct{}{}
			hang(w, r)
			return
		}
		_, _ = io.WriteString(w, stateAnswer)
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL, APIKey: testKey, ReadTransport: newReads(t, srv.URL),
		HTTPClient: &http.Client{Timeout: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	hanging.Store(true)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	// Were the read not cut short, it would wait out the client's hour
	// (and the test binary's timeout fail it).
	if _, err := c.State(ctx, tSKU, tDevice); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want the context's cancellation", err)
	}
	hanging.Store(false)
	if _, err := c.State(t.Context(), tSKU, tDevice); err != nil {
		t.Errorf("a read after the cancelled one: %v", err)
	}
}

// The cloud is https: the read transport checks its certificate like
// net/http does, and refuses one it does not trust.
func TestReadTransportOverTLS(t *testing.T) {
	srv := httptest.NewTLSServer(answerWith(200, stateAnswer))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL, APIKey: testKey, ReadTransport: newReads(t, srv.URL)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.State(t.Context(), tSKU, tDevice); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a read from a server of an unknown authority: %v, want a certificate error", err)
	}
	// The same with the server's authority trusted (set before the first
	// read: fasthttp keeps the configuration it first used).
	rt := newReads(t, srv.URL)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	rt.tls.RootCAs = pool
	if c, err = New(Config{BaseURL: srv.URL, APIKey: testKey, ReadTransport: rt}); err != nil {
		t.Fatal(err)
	}
	if st, err := c.State(t.Context(), tSKU, tDevice); err != nil || len(st.Capabilities) != 2 {
		t.Errorf("a read from a trusted server: %v, %v", st, err)
	}
}

// With a proxy in the environment for the cloud's address there is no read
// transport: the reads go over net/http, which follows the proxy. Run in
// child processes, as net/http reads the environment once.
func TestNoReadTransportBehindAProxy(t *testing.T) {
	switch os.Getenv("C2M_TEST_PROXY_CHILD") {
	case "with":
		rt, err := NewReadTransport("https://cloud.example.org", 1, time.Minute)
		if err != nil || rt != nil {
			t.Fatalf("with HTTPS_PROXY set: %v, %v; want none", rt, err)
		}
		if rt, err := NewReadTransport("https://localhost:8443", 1, time.Minute); err != nil || rt == nil {
			t.Fatalf("to localhost, which no proxy carries: %v, %v; want one", rt, err)
		}
		return
	case "without":
		if rt, err := NewReadTransport("https://cloud.example.org", 1, time.Minute); err != nil || rt == nil {
			t.Fatalf("without a proxy: %v, %v; want a transport", rt, err)
		}
		return
	}
	for _, child := range []string{"with", "without"} {
		var env []string
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); !strings.HasSuffix(strings.ToUpper(k), "_PROXY") {
				env = append(env, kv)
			}
		}
		env = append(env, "C2M_TEST_PROXY_CHILD="+child)
		if child == "with" {
			env = append(env, "HTTPS_PROXY=http://proxy.example.org:3128")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestNoReadTransportBehindAProxy$", "-test.count=1", "-test.v")
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestNoReadTransportBehindAProxy") {
			t.Errorf("%s a proxy: %v\n%s", child, err, out)
		}
	}
}

// BenchmarkStateReadOverLoopback is one state read through the client to a
// test server on loopback, over net/http and over the daemon's
// ReadTransport: the client's own time and garbage per read (the server's
// share of the time is in ns/op too).
//
//	go test -run '^$' -bench StateReadOverLoopback -benchmem ./internal/cloud
func BenchmarkStateReadOverLoopback(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, stateAnswer)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name  string
		reads bool
	}{{"net-http", false}, {"read-transport", true}} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := Config{BaseURL: srv.URL, APIKey: testKey, HTTPClient: srv.Client()}
			if tc.reads {
				cfg.ReadTransport = newReads(b, srv.URL)
			}
			c, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.State(b.Context(), tSKU, tDevice); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// rawServer answers every request on a loopback listener with the bytes
// answer returns, then closes the connection.
func rawServer(t testing.TB, answer func() []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { _ = ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// The request is small: one read takes it whole.
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			buf := make([]byte, 4096)
			_, _ = c.Read(buf)
			_, _ = c.Write(answer())
			_ = c.Close()
		}
	}()
	return "http://" + ln.Addr().String()
}

// Whatever bytes come back over the read transport, a state read ends
// with a state or an *APIError (never a panic; the client's 2 s timeout
// bounds each),
// and a state only from an HTTP answer. (fasthttp reads a status code
// below 100, "HTTP/1.1 000", as 200, where net/http's answer would be
// refused for its status: a seed keeps that case; decisions.md.)
func FuzzReadTransportAnswers(f *testing.F) {
	ok := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(stateAnswer)) + "\r\n\r\n" + stateAnswer
	f.Add([]byte(ok))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"cod\r\n0\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nAPI-RateLimit-Remaining: 0\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n{}"))
	f.Add([]byte("HTTP/1.0 302 Found\r\nLocation: http://elsewhere\r\n\r\n"))
	f.Add([]byte("garbage\r\n\r\n"))
	f.Add([]byte(""))
	var current atomic.Pointer[[]byte]
	url := rawServer(f, func() []byte { return *current.Load() })
	rt, err := NewReadTransport(url, 2, time.Minute)
	if err != nil || rt == nil {
		f.Fatal(rt, err)
	}
	c, err := New(Config{BaseURL: url, APIKey: testKey, ReadTransport: rt, HTTPClient: &http.Client{Timeout: 2 * time.Second}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		current.Store(&raw)
		st, err := c.State(t.Context(), tSKU, tDevice)
		var ae *APIError
		switch {
		case err == nil:
			if !bytes.HasPrefix(raw, []byte("HTTP/")) || len(st.Capabilities) > 0 && st.Capabilities[0].Instance == "" {
				t.Fatalf("a state %#v from %q", st, raw)
			}
		case !errors.As(err, &ae):
			t.Fatalf("error %v (%T), want an *APIError", err, err)
		}
	})
}
