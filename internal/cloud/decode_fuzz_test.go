package cloud

import (
	"bytes"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"

	"github.com/rs/zerolog"
)

// The fuzz targets feed arbitrary bytes to the decoding of each endpoint's
// answer, without HTTP, under several statuses. Beyond "no panic" they check
// what callers rely on: a failure is always an *APIError of a real kind that
// never shows the key nor a formatting artefact, a refused key names where
// the key came from and its header, and a success names the device asked
// for. The seed corpus in testdata/fuzz holds the recorded answers of
// ../../testdata and the error bodies of client_test.go.

const (
	fuzzKey    = "fz-key-0b9e77d1c3"
	fuzzSKU    = "H7143"
	fuzzDevice = "52:8B:D4:AD:FC:45:5D:FE"
)

func fuzzClient(t testing.TB) *Client {
	t.Helper()
	c, err := New(Config{BaseURL: "http://127.0.0.1:1", APIKey: fuzzKey, Logger: zerolog.Nop(),
		KeySource: "CLOUD_API_KEY_FILE", KeyHeader: "X-Fuzz-Key"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fuzzAnswers is the body under the statuses whose handling differs.
func fuzzAnswers(body []byte) []answer {
	return []answer{
		{status: 200, header: http.Header{}, body: body},
		{status: 400, header: http.Header{}, body: body},
		{status: 401, header: http.Header{}, body: body},
		{status: 429, header: http.Header{"Retry-After": {"7"}}, body: body},
		{status: 503, header: http.Header{}, body: body},
	}
}

func checkDecodeError(t *testing.T, a answer, err error) {
	t.Helper()
	ae, ok := err.(*APIError)
	if !ok {
		t.Fatalf("status %d: error %v (%T) is not an *APIError", a.status, err, err)
	}
	if ae.Kind < ErrAuth || ae.Kind > ErrTransient || ae.Endpoint == "" {
		t.Fatalf("status %d: error %+v has no kind or endpoint", a.status, ae)
	}
	msg := ae.Error()
	// A "%!" is a formatting artefact unless the answer itself held one (the error quotes it).
	artefact := strings.Contains(msg, "%!") && !bytes.Contains(a.body, []byte("%!"))
	if strings.Contains(msg, fuzzKey) || !strings.HasPrefix(msg, "cloud: ") || artefact {
		t.Fatalf("status %d: error text %q", a.status, msg)
	}
	if ae.Kind == ErrAuth && (!strings.Contains(msg, "read from CLOUD_API_KEY_FILE") || !strings.Contains(msg, "CLOUD_API_KEY_HEADER (the key is sent in X-Fuzz-Key")) {
		t.Fatalf("status %d: a refused key's error does not name its source and header: %q", a.status, msg)
	}
	if a.status != 200 && ae.HTTPStatus != a.status {
		t.Fatalf("status %d: error carries HTTP %d", a.status, ae.HTTPStatus)
	}
	if ae.RetryAfter < 0 || ae.RetryAfter > maxRetryAfter {
		t.Fatalf("retry after %v", ae.RetryAfter)
	}
}

// FuzzDecodeDevices also checks that the devices, which share the decoding
// of identical capability definitions, are those each decoded on its own.
func FuzzDecodeDevices(f *testing.F) {
	f.Add([]byte(`{"code":200,"message":"success","data":[{"sku":"H1","device":"D1","capabilities":[]}]}`))
	two := `[{"type":"devices.capabilities.on_off","instance":"powerSwitch","parameters":{"dataType":"ENUM","options":[{"name":"on","value":1}]}},{"type":"x"}]`
	f.Add([]byte(`{"code":200,"data":[{"sku":"H1","device":"D1","capabilities":` + two + `},{"sku":"H1","device":"D2","capabilities":` + two +
		`},{"sku":"H2","device":"D3","capabilities":` + two + `,"capabilities":null},{"sku":"H1","device":"D4","capabilities":{}},null,7]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c := fuzzClient(t)
		cl := c.call(epDevices, "", "", "")
		for _, a := range fuzzAnswers(body) {
			devs, err := c.readDevices(cl, a)
			if err != nil {
				checkDecodeError(t, a, err)
				continue
			}
			if a.status != 200 || devs == nil {
				t.Fatalf("status %d: success with %v", a.status, devs)
			}
			if want := separately(t, body); !reflect.DeepEqual(devs, want) {
				t.Fatalf("devices decoded with shared definitions\n%+v\neach on its own\n%+v", devs, want)
			}
			seen := map[string]bool{}
			for _, d := range devs {
				if d.SKU == "" || d.Device == "" || seen[d.String()] {
					t.Fatalf("device %q is unnamed or repeated", d.String())
				}
				seen[d.String()] = true
				for _, cp := range d.Capabilities {
					if cp.Instance == "" {
						t.Fatalf("capability without instance in %s", d)
					}
				}
			}
		}
	})
}

func FuzzDecodeState(f *testing.F) {
	f.Add([]byte(`{"code":200,"msg":"success","payload":{"sku":"H7143","device":"52:8B:D4:AD:FC:45:5D:FE","capabilities":[]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c := fuzzClient(t)
		cl := c.call(epState, fuzzSKU, fuzzDevice, "")
		for _, a := range fuzzAnswers(body) {
			st, err := c.readState(cl, a)
			if err != nil {
				checkDecodeError(t, a, err)
				continue
			}
			if a.status != 200 || st.SKU != fuzzSKU || st.Device != fuzzDevice {
				t.Fatalf("status %d: state of %s/%s", a.status, st.SKU, st.Device)
			}
			for _, cs := range st.Capabilities {
				if cs.Instance == "" {
					t.Fatal("capability state without instance")
				}
			}
			_, _ = st.Online()
			_ = st.Values()
		}
	})
}

func FuzzDecodeScenes(f *testing.F) {
	f.Add([]byte(`{"code":200,"msg":"success","payload":{"sku":"H7143","device":"52:8B:D4:AD:FC:45:5D:FE","capabilities":[]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c := fuzzClient(t)
		for _, ep := range []endpoint{epScenes, epDIYScenes} {
			cl := c.call(ep, fuzzSKU, fuzzDevice, "")
			for _, a := range fuzzAnswers(body) {
				sc, err := c.readScenes(cl, a)
				if err != nil {
					checkDecodeError(t, a, err)
					continue
				}
				if a.status != 200 || sc.SKU != fuzzSKU || sc.Device != fuzzDevice {
					t.Fatalf("status %d: scenes of %s/%s", a.status, sc.SKU, sc.Device)
				}
				_ = sc.Options()
			}
		}
	})
}

func FuzzDecodeControl(f *testing.F) {
	f.Add([]byte(`{"requestId":"r","msg":"success","code":200,"capability":{"type":"devices.capabilities.on_off","instance":"powerSwitch","value":1,"state":{"status":"success"}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c := fuzzClient(t)
		cl := c.call(epControl, fuzzSKU, fuzzDevice, capability.InstancePower)
		for _, a := range fuzzAnswers(body) {
			res, err := c.readControl(cl, a)
			if err != nil {
				checkDecodeError(t, a, err)
				continue
			}
			if a.status != 200 || res.Code != 200 {
				t.Fatalf("status %d: success with code %d", a.status, res.Code)
			}
			if res.Capability != nil && res.Capability.State != nil &&
				strings.EqualFold(strings.TrimSpace(res.Capability.State.Status), "failure") {
				t.Fatalf("a failure status passed as success: %+v", res.Capability.State)
			}
		}
	})
}

func FuzzDecodeRetryAfter(f *testing.F) {
	f.Add("30")
	f.Fuzz(func(t *testing.T, v string) {
		now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		if d := parseRetryAfter(v, now); d < 0 || d > maxRetryAfter {
			t.Fatalf("parseRetryAfter(%q) = %v", v, d)
		}
	})
}

// FuzzRateLimits feeds arbitrary values to both rate-limit triples: what is
// read is always within bounds (a count from 0 to the bound, a reset no more
// than a month ahead and never before now), and a value is either read or
// named as a problem.
func FuzzRateLimits(f *testing.F) {
	f.Add("10000", "9876", "3600")
	f.Add("45", "0", "1795000000")
	f.Add("100, 100;w=60", "12", "1795000000000")
	f.Add("lots", "-1", "Wed, 25 Nov 2026 19:00:00 GMT")
	f.Fuzz(func(t *testing.T, limit, remaining, reset string) {
		now := time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC)
		h := http.Header{"Api-Ratelimit-Limit": {limit}, "Api-Ratelimit-Remaining": {remaining}, "Api-Ratelimit-Reset": {reset},
			"X-Ratelimit-Limit": {reset}, "X-Ratelimit-Remaining": {limit}, "X-Ratelimit-Reset": {remaining}}
		l, problems := parseRateLimits(h, now)
		read := 0
		for _, w := range []RateLimit{l.Quota, l.Short} {
			if w.Limit < 0 || w.Limit > maxRateCount || w.Remaining < 0 || w.Remaining > maxRateCount ||
				(w.Limit > 0 && w.Remaining > w.Limit) {
				t.Fatalf("counts out of bounds: %+v", w)
			}
			if !w.Reset.IsZero() && (w.Reset.Before(now) || w.Reset.Sub(now) > maxResetAhead) {
				t.Fatalf("reset out of bounds: %v", w.Reset)
			}
			for _, ok := range []bool{w.Limit > 0, w.HasRemaining, !w.Reset.IsZero()} {
				if ok {
					read++
				}
			}
		}
		if read+len(problems) != 6 {
			t.Fatalf("%d values read and %d problems, want 6 in all: %+v %v", read, len(problems), l, problems)
		}
	})
}
