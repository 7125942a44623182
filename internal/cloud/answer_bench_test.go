package cloud

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// cannedTransport answers every request with the same status, headers and
// body, without a network: what a request costs the client itself.
type cannedTransport struct {
	header http.Header
	body   []byte
}

func (t cannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	h := make(http.Header, len(t.header))
	for k, v := range t.header {
		h[k] = v
	}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(bytes.NewReader(t.body)),
		ContentLength: int64(len(t.body)), Request: r}, nil
}

// benchQuotaHeaders are the headers a state answer of the live service is
// reported to carry: the account's quota and a shorter window.
func benchQuotaHeaders() http.Header {
	return http.Header{
		"Content-Type":            {"application/json"},
		"Api-Ratelimit-Limit":     {"10000"},
		"Api-Ratelimit-Remaining": {"9876"},
		"Api-Ratelimit-Reset":     {strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)},
		"X-Ratelimit-Limit":       {"100"},
		"X-Ratelimit-Remaining":   {"99"},
		"X-Ratelimit-Reset":       {"42"},
	}
}

// BenchmarkStateAnswer is one state read through the client, request built
// and answer decoded, over a transport that answers at once: with the
// quota's headers and without them: the difference is what reading them
// costs per answer (docs/benchmarks.md).
func BenchmarkStateAnswer(b *testing.B) {
	sku, device, body := lightStateAnswer(b)
	for _, tc := range []struct {
		name   string
		header http.Header
	}{
		{"headers", benchQuotaHeaders()},
		{"no-headers", http.Header{"Content-Type": {"application/json"}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c, err := New(Config{BaseURL: "http://cloud.invalid", APIKey: testKey, Logger: zerolog.Nop(),
				HTTPClient: &http.Client{Transport: cannedTransport{tc.header, body}}})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.State(b.Context(), sku, device); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseRateLimits is the headers' share of an answer's cost: both
// triples read, and an answer without them.
func BenchmarkParseRateLimits(b *testing.B) {
	now := time.Now()
	for _, tc := range []struct {
		name   string
		header http.Header
	}{
		{"headers", benchQuotaHeaders()},
		{"no-headers", http.Header{"Content-Type": {"application/json"}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if l, _ := parseRateLimits(tc.header, now); l.Known() != (tc.name == "headers") {
					b.Fatal(l)
				}
			}
		})
	}
}
