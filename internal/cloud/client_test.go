package cloud

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"cloud2mqtt/internal/capability"

	"github.com/rs/zerolog"
)

// testKey is long and odd enough that finding it in a log or an error can only
// mean it leaked.
const testKey = "tk-5ecr3t-7f3a9c1e-0d42"

// logBuf collects a client's log output; the handler goroutines of a test
// server never log, but a lock keeps the race detector's opinion simple.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// fixtureDir holds the recorded answers of the live service.
const fixtureDir = "../../testdata"

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// warnings returns the warn-level log lines, decoded.
func (l *logBuf) warnings(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if m["level"] == "warn" {
			out = append(out, m)
		}
	}
	return out
}

// newTestClient starts a server answering with h and returns a client of it
// that logs at debug level into the returned buffer. When the test ends the
// buffer must not contain the API key.
func newTestClient(t *testing.T, h http.HandlerFunc, mods ...func(*Config)) (*Client, *logBuf) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	logs := &logBuf{}
	cfg := Config{BaseURL: srv.URL, APIKey: testKey, HTTPClient: srv.Client(), Logger: zerolog.New(logs).Level(zerolog.DebugLevel)}
	for _, m := range mods {
		m(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if strings.Contains(logs.String(), testKey) {
			t.Errorf("the API key appears in the log:\n%s", logs)
		}
	})
	return c, logs
}

// answerWith answers every request with status, headers and body.
func answerWith(status int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// reset answers with a connection reset: the connection closed with RST,
// no answer.
func reset(w http.ResponseWriter, r *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close with RST
	}
	_ = conn.Close()
}

// hang never answers. It reads the request body first: only then does the
// server watch the connection and cancel r.Context() when the client leaves.
func hang(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// op is one client call, reduced to its error.
type op struct {
	name string
	call func(context.Context, *Client) error
}

const (
	tSKU    = "H6072"
	tDevice = "AA:BB:CC:DD:EE:FF:00:11"
)

var (
	opDevices = op{"devices", func(ctx context.Context, c *Client) error { _, err := c.ListDevices(ctx); return err }}
	opState   = op{"state", func(ctx context.Context, c *Client) error { _, err := c.State(ctx, tSKU, tDevice); return err }}
	opScenes  = op{"scenes", func(ctx context.Context, c *Client) error { _, err := c.Scenes(ctx, tSKU, tDevice); return err }}
	opDIY     = op{"diy-scenes", func(ctx context.Context, c *Client) error { _, err := c.DIYScenes(ctx, tSKU, tDevice); return err }}
	opControl = op{"control", func(ctx context.Context, c *Client) error {
		_, err := c.Control(ctx, ControlRequest{SKU: tSKU, Device: tDevice, Type: capability.TypeRange, Instance: capability.InstanceBrightness, Value: int64(50)})
		return err
	}}
	allOps = []op{opDevices, opState, opScenes, opDIY, opControl}
)

func TestNewValidatesConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error; "" means no error
	}{
		{"valid", Config{BaseURL: "https://cloud.example", APIKey: testKey}, ""},
		{"valid with port, path and trailing slashes", Config{BaseURL: "http://127.0.0.1:8080/base//", APIKey: testKey}, ""},
		{"empty base URL", Config{APIKey: testKey}, "set CLOUD_BASE_URL"},
		{"unparsable base URL", Config{BaseURL: "http://[::1", APIKey: testKey}, "CLOUD_BASE_URL does not parse"},
		{"no scheme", Config{BaseURL: "cloud.example", APIKey: testKey}, "must start with http:// or https://"},
		{"host:port without scheme", Config{BaseURL: "cloud.example:443", APIKey: testKey}, "must start with http:// or https://"},
		{"ftp scheme", Config{BaseURL: "ftp://cloud.example", APIKey: testKey}, "must start with http:// or https://"},
		{"no host", Config{BaseURL: "https:///path", APIKey: testKey}, "has no host"},
		{"user info", Config{BaseURL: "https://u:pw@cloud.example", APIKey: testKey}, "must not carry a user or password"},
		{"query", Config{BaseURL: "https://cloud.example/?x=1", APIKey: testKey}, "must not have a query"},
		{"empty key", Config{BaseURL: "https://cloud.example"}, "set CLOUD_API_KEY"},
		{"key with newline", Config{BaseURL: "https://cloud.example", APIKey: testKey + "\n"}, "check CLOUD_API_KEY"},
		{"key with control character", Config{BaseURL: "https://cloud.example", APIKey: "a\x00b"}, "check CLOUD_API_KEY"},
		{"key file with a space", Config{BaseURL: "https://cloud.example", APIKey: testKey + " ", KeySource: "CLOUD_API_KEY_FILE"}, "check CLOUD_API_KEY_FILE"},
		{"bad header name", Config{BaseURL: "https://cloud.example", APIKey: testKey, KeyHeader: "Api Key"}, "not a valid HTTP header name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.cfg)
			if tt.want == "" {
				if err != nil || c == nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("New accepted %v", tt.cfg)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "cloud: ") {
				t.Errorf("error %q, want it to start with \"cloud: \" and contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), "pw") {
				t.Errorf("error %q shows a secret", err)
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	c, err := New(Config{BaseURL: "https://cloud.example/", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if c.header != DefaultKeyHeader || c.timeout != DefaultTimeout || c.base != "https://cloud.example" || c.maxBody != 8<<20 {
		t.Errorf("defaults: header %q timeout %v base %q max body %d", c.header, c.timeout, c.base, c.maxBody)
	}
}

func TestConfigRedactsKey(t *testing.T) {
	cfg := Config{BaseURL: "https://cloud.example", APIKey: testKey}
	var zl bytes.Buffer
	zl2 := zerolog.New(&zl)
	zl2.Info().Object("cloud", cfg).Msg("config")
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%v", &cfg), zl.String()} {
		if strings.Contains(s, testKey) || !strings.Contains(s, "redacted") {
			t.Errorf("config shown as %q: want the key redacted", s)
		}
	}
}

// TestRequests checks what each endpoint sends: method, path, headers and
// body shape, with a fresh requestId every time.
func TestRequests(t *testing.T) {
	devicePayload := map[string]any{"sku": tSKU, "device": tDevice}
	tests := []struct {
		op      op
		method  string
		path    string
		payload map[string]any // nil: no body
		answer  string
	}{
		{opDevices, "GET", "/router/api/v1/user/devices", nil, `{"code":200,"message":"success","data":[]}`},
		{opState, "POST", "/router/api/v1/device/state", devicePayload,
			`{"requestId":"x","msg":"success","code":200,"payload":{"sku":"H6072","device":"AA:BB:CC:DD:EE:FF:00:11","capabilities":[]}}`},
		{opScenes, "POST", "/router/api/v1/device/scenes", devicePayload, `{"requestId":"x","msg":"success","code":200,"payload":{}}`},
		{opDIY, "POST", "/router/api/v1/device/diy-scenes", devicePayload, `{"requestId":"x","msg":"success","code":200,"payload":{}}`},
		{opControl, "POST", "/router/api/v1/device/control", map[string]any{
			"sku": tSKU, "device": tDevice,
			"capability": map[string]any{"type": capability.TypeRange, "instance": capability.InstanceBrightness, "value": float64(50)},
		}, `{"requestId":"x","msg":"success","code":200}`},
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	ids := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.op.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []*http.Request
			var bodies [][]byte
			c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				got, bodies = append(got, r), append(bodies, b)
				mu.Unlock()
				_, _ = io.WriteString(w, tt.answer)
			})
			for range 2 {
				if err := tt.op.call(t.Context(), c); err != nil {
					t.Fatal(err)
				}
			}
			for i, r := range got {
				if r.Method != tt.method || r.URL.Path != tt.path {
					t.Errorf("request %s %s, want %s %s", r.Method, r.URL.Path, tt.method, tt.path)
				}
				if k := r.Header.Get("Service-API-Key"); k != testKey {
					t.Errorf("Service-API-Key = %q, want the key", k)
				}
				if ct := r.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q", ct)
				}
				if tt.payload == nil {
					if len(bodies[i]) != 0 {
						t.Errorf("GET has a body: %s", bodies[i])
					}
					continue
				}
				var body struct {
					RequestID string         `json:"requestId"`
					Payload   map[string]any `json:"payload"`
				}
				dec := json.NewDecoder(bytes.NewReader(bodies[i]))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&body); err != nil {
					t.Fatalf("body %s: %v", bodies[i], err)
				}
				if !uuid.MatchString(body.RequestID) {
					t.Errorf("requestId %q is not a random UUID", body.RequestID)
				}
				if ids[body.RequestID] {
					t.Errorf("requestId %q used twice", body.RequestID)
				}
				ids[body.RequestID] = true
				if g, w := fmt.Sprint(body.Payload), fmt.Sprint(tt.payload); g != w {
					t.Errorf("payload %s, want %s", g, w)
				}
			}
		})
	}
}

func TestBaseURLPrefixAndKeyHeader(t *testing.T) {
	var path string
	var header http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, header = r.URL.Path, r.Header.Clone()
		_, _ = io.WriteString(w, `{"code":200,"message":"success","data":[]}`)
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL + "/proxy/cloud//", APIKey: testKey, KeyHeader: "X-Api-Key", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListDevices(t.Context()); err != nil {
		t.Fatal(err)
	}
	if path != "/proxy/cloud/router/api/v1/user/devices" {
		t.Errorf("path %q", path)
	}
	if header.Get("X-Api-Key") != testKey || header.Get("Service-API-Key") != "" {
		t.Errorf("key headers: X-Api-Key %q, Service-API-Key %q", header.Get("X-Api-Key"), header.Get("Service-API-Key"))
	}
}

func TestRequestsNeedDeviceAndValue(t *testing.T) {
	c, err := New(Config{BaseURL: "http://127.0.0.1:1", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	_, e1 := c.State(ctx, "", tDevice)
	_, e2 := c.Scenes(ctx, tSKU, "")
	_, e3 := c.Control(ctx, ControlRequest{SKU: tSKU, Device: tDevice, Type: capability.TypeRange, Instance: capability.InstanceBrightness})
	_, e4 := c.Control(ctx, ControlRequest{SKU: tSKU, Device: tDevice, Value: 1})
	_, e5 := c.Control(ctx, ControlRequest{SKU: tSKU, Device: tDevice, Type: capability.TypeRange, Instance: capability.InstanceBrightness, Value: make(chan int)})
	for i, err := range []error{e1, e2, e3, e4, e5} {
		if !IsRejected(err) {
			t.Errorf("case %d: %v, want a request error before anything is sent", i+1, err)
		}
	}
}
