package cloud

// State reads, the daemon's steady traffic: what a read sends, what its
// answer tells, and the wire's ways of failing it.

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
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
	method, path, key, contentType, accept string
}

// TestStateRead: a read sends the key and JSON, and its answer gives the
// state, its rate limits (OnLimits), a count (OnRequest) and a debug line;
// a read that got no answer is counted with status 0.
func TestStateRead(t *testing.T) {
	var last atomic.Pointer[seenRequest]
	var mu sync.Mutex
	var limits RateLimits
	var counted []string
	c, logs := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if _, ok := r.Header["Idempotency-Key"]; ok {
			t.Error("the read sent an Idempotency-Key")
		}
		last.Store(&seenRequest{r.Method, r.URL.Path, r.Header.Get(DefaultKeyHeader), r.Header.Get("Content-Type"), r.Header.Get("Accept")})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-RateLimit-Limit", "10000")
		w.Header().Set("X-RateLimit-Remaining", "9876")
		_, _ = io.WriteString(w, stateAnswer)
	}, func(cfg *Config) {
		cfg.OnLimits = func(l RateLimits) { limits = l }
		cfg.OnRequest = func(endpoint string, status int) {
			mu.Lock()
			counted = append(counted, endpoint+" "+strconv.Itoa(status))
			mu.Unlock()
		}
	})
	st, err := c.State(t.Context(), tSKU, tDevice)
	if err != nil {
		t.Fatal(err)
	}
	want := seenRequest{http.MethodPost, PathState, testKey, "application/json", "application/json"}
	if got := *last.Load(); got != want {
		t.Errorf("the request %+v, want %+v", got, want)
	}
	if len(st.Capabilities) != 2 || st.Capabilities[1].Instance != "brightness" || st.Values()["brightness"] != int64(42) {
		t.Errorf("the state read: %#v", st)
	}
	if limits.Short.Limit != 10000 || limits.Short.Remaining != 9876 {
		t.Errorf("rate limits %+v, want 9876 of 10000 left", limits)
	}
	if !strings.Contains(logs.String(), `"message":"cloud request"`) || !strings.Contains(logs.String(), `"endpoint":"state"`) {
		t.Errorf("no debug line for the read:\n%s", logs)
	}

	// The same client to an address where nothing listens.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.base = "http://" + ln.Addr().String()
	_ = ln.Close()
	if _, err := c.State(t.Context(), tSKU, tDevice); err == nil || Reached(err) {
		t.Errorf("a read to a closed port: %v, reached %v; want an error that did not reach the cloud", err, Reached(err))
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(counted, ", ") != "state 200, state 0" {
		t.Errorf("OnRequest told of %q, want a state read answered OK and one without an answer", counted)
	}
}

// TestStateReadFailures: every way the wire can fail a state read, and
// what the read's error says of it (TestErrors has the answers' own).
func TestStateReadFailures(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		mod     func(*Config)
		kind    ErrorKind
		status  int
		text    string
		reached bool
	}{
		{"429 retry-after seconds", answerWith(429, "", "Retry-After", "30"), nil, ErrRateLimited, 429, "retry after 30s", true},
		{"200 not JSON", answerWith(200, "<html>maintenance</html>"), nil, ErrTransient, 200, `the answer is not JSON: "<html>maintenance</html>"`, true},
		{"200 empty", answerWith(200, ""), nil, ErrTransient, 200, "the answer is empty", true},
		{"redirect", answerWith(307, "", "Location", "http://127.0.0.1:9/elsewhere"), nil, ErrRequest, 307,
			`the service redirects to "http://127.0.0.1:9/elsewhere"`, true},
		{"too large", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write(bytes.Repeat([]byte(" "), MaxResponseBytes+1))
		}, nil, ErrTransient, 200, "the answer is larger than 8388608 bytes and was not read", true},
		{"cut off", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "500")
			_, _ = io.WriteString(w, stateAnswer[:40])
		}, nil, ErrTransient, 200, "the answer was cut off", true},
		{"reset", reset, nil, ErrTransient, 0, "the request failed", true},
		{"client timeout", hang, func(cfg *Config) { cfg.HTTPClient.Timeout = 100 * time.Millisecond }, ErrTransient, 0, "no answer in time", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mods []func(*Config)
			if tt.mod != nil {
				mods = append(mods, tt.mod)
			}
			c, _ := newTestClient(t, tt.handler, mods...)
			_, err := c.State(t.Context(), tSKU, tDevice)
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("error %v (%T), want an *APIError", err, err)
			}
			if ae.Kind != tt.kind || ae.HTTPStatus != tt.status || ae.Endpoint != EndpointState || !strings.Contains(err.Error(), tt.text) {
				t.Errorf("error %v (kind %v, HTTP %d)\nwant kind %v, HTTP %d, and %q in it", err, ae.Kind, ae.HTTPStatus, tt.kind, tt.status, tt.text)
			}
			if Reached(err) != tt.reached {
				t.Errorf("Reached(%v) = %v, want %v", err, Reached(err), tt.reached)
			}
		})
	}
}

// A chunked answer is read whole.
func TestStateReadChunked(t *testing.T) {
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < len(stateAnswer); i += 100 {
			_, _ = io.WriteString(w, stateAnswer[i:min(i+100, len(stateAnswer))])
			w.(http.Flusher).Flush()
		}
	})
	st, err := c.State(t.Context(), tSKU, tDevice)
	if err != nil || len(st.Capabilities) != 2 {
		t.Errorf("a chunked answer: %#v, %v", st, err)
	}
}

// Reads share a kept connection, and one the cloud closed between two
// reads costs nothing: the next read goes out on a new one.
func TestStateReadsKeepTheirConnection(t *testing.T) {
	srv := httptest.NewUnstartedServer(answerWith(200, stateAnswer))
	var opened atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL, APIKey: testKey, HTTPClient: srv.Client()})
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

// replayable records, by endpoint, whether net/http may send a request
// again on a new connection.
type replayable struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (t *replayable) RoundTrip(r *http.Request) (*http.Response, error) {
	_, ok := r.Header["Idempotency-Key"]
	t.mu.Lock()
	t.seen[EndpointOf(r.URL.Path)] = ok
	t.mu.Unlock()
	return nil, errors.New("not sent")
}

// Every read may be asked again when the cloud closed its kept connection;
// a command never is.
func TestOnlyReadsAreAskedAgain(t *testing.T) {
	rt := &replayable{seen: map[string]bool{}}
	c, err := New(Config{BaseURL: "http://cloud.invalid", APIKey: testKey, HTTPClient: &http.Client{Transport: rt}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range allOps {
		_ = o.call(t.Context(), c)
	}
	want := map[string]bool{EndpointDevices: true, EndpointState: true, EndpointScenes: true, EndpointDIYScenes: true, EndpointControl: false}
	if !maps.Equal(rt.seen, want) {
		t.Errorf("replayable by endpoint %v, want %v", rt.seen, want)
	}
}

// BenchmarkStateReadOverLoopback is one state read through the client to a
// test server on loopback: the client's own time and garbage per read (the
// server's share of the time is in ns/op too).
//
//	go test -run '^$' -bench StateReadOverLoopback -benchmem ./internal/cloud
func BenchmarkStateReadOverLoopback(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, stateAnswer)
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL, APIKey: testKey, HTTPClient: srv.Client()})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.State(b.Context(), tSKU, tDevice); err != nil {
			b.Fatal(err)
		}
	}
}
