package cloudsim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// harness is a simulator behind an httptest server.
type harness struct {
	t     *testing.T
	sim   *Sim
	srv   *httptest.Server
	clock *fakeClock
}

func start(t *testing.T, opts Options) *harness {
	t.Helper()
	clock := newClock()
	if opts.Now == nil {
		opts.Now = clock.Now
	}
	sim := New(opts)
	srv := httptest.NewServer(sim)
	t.Cleanup(func() {
		sim.Faults().Clear()
		srv.Close()
	})
	return &harness{t: t, sim: sim, srv: srv, clock: clock}
}

// reply is a decoded answer.
type reply struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

func (r reply) code() int {
	c, _ := r.body["code"].(int64)
	return int(c)
}

func (r reply) msg() string {
	if m, ok := r.body["msg"].(string); ok {
		return m
	}
	m, _ := r.body["message"].(string)
	return m
}

func (h *harness) do(method, path string, body any, header map[string]string) reply {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, h.srv.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(DefaultKeyHeader, h.sim.APIKey())
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(raw) > 0 {
		v, err := capability.Normalize(raw)
		if err == nil {
			r.body, _ = v.(map[string]any)
		}
	}
	return r
}

func (h *harness) list() reply {
	h.t.Helper()
	return h.do(http.MethodGet, cloud.PathDevices, nil, nil)
}

func (h *harness) state(sku, device string) reply {
	h.t.Helper()
	return h.do(http.MethodPost, cloud.PathState, deviceBody(sku, device), nil)
}

func (h *harness) scenes(path, sku, device string) reply {
	h.t.Helper()
	return h.do(http.MethodPost, path, deviceBody(sku, device), nil)
}

func (h *harness) control(sku, device, typ, instance string, value any) reply {
	h.t.Helper()
	return h.do(http.MethodPost, cloud.PathControl, controlBody(sku, device, typ, instance, value), nil)
}

func deviceBody(sku, device string) map[string]any {
	return map[string]any{"requestId": "req-1", "payload": map[string]any{"sku": sku, "device": device}}
}

func controlBody(sku, device, typ, instance string, value any) map[string]any {
	return map[string]any{"requestId": "req-c", "payload": map[string]any{
		"sku": sku, "device": device,
		"capability": map[string]any{"type": typ, "instance": instance, "value": value},
	}}
}

// Demo devices used across tests.
const (
	stripID      = "AA:BB:CC:DD:EE:FF:10:01"
	stripSKU     = "H619C"
	lampID       = "AA:BB:CC:DD:EE:FF:10:02"
	lampSKU      = "H6076"
	bulbID       = "AA:BB:CC:DD:EE:FF:10:03"
	bulbSKU      = "H6008"
	purifierID   = "AA:BB:CC:DD:EE:FF:10:05"
	purifierSKU  = "H7126"
	thermoID     = "AA:BB:CC:DD:EE:FF:10:06"
	thermoSKU    = "H5179"
	plugID       = "AA:BB:CC:DD:EE:FF:10:08"
	plugSKU      = "H5082"
	heaterID     = "AA:BB:CC:DD:EE:FF:10:09"
	heaterSKU    = "H7133"
	humidifierID = "AA:BB:CC:DD:EE:FF:10:11"
	humidSKU     = "H7142"
	iceID        = "AA:BB:CC:DD:EE:FF:10:13"
	iceSKU       = "H7172"
	monitorID    = "AA:BB:CC:DD:EE:FF:10:16"
	monitorSKU   = "H5106"
)

// stateValues maps instance → value of a state answer, keeping "" values.
func stateValues(t *testing.T, r reply) map[string]any {
	t.Helper()
	payload, ok := r.body["payload"].(map[string]any)
	if !ok {
		t.Fatalf("state answer has no payload: %s", r.raw)
	}
	out := map[string]any{}
	caps, _ := payload["capabilities"].([]any)
	for _, c := range caps {
		m := c.(map[string]any)
		st, _ := m["state"].(map[string]any)
		out[m["instance"].(string)] = st["value"]
	}
	return out
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func bytesReader(b []byte, none bool) io.Reader {
	if none {
		return nil
	}
	return bytes.NewReader(b)
}
