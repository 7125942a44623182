package web

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// Attacks on the page's guards over real loopback connections; each client binds
// the 127.0.0.0/8 address it attacks from. The tests move the handler's clock,
// never wait for it.

// clientFrom is an HTTP client whose connections come from src, an
// address of 127.0.0.0/8.
func clientFrom(t *testing.T, src string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 1}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// serveLoopback serves h on 127.0.0.1 until the test ends; its URL.
func serveLoopback(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// post sends a POST of body with the headers (an empty value leaves the
// header out) and returns the status and the answer.
func post(t *testing.T, c *http.Client, url, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

// TestTokenGuessingFromManyAddresses: 250 addresses guessing 8 tokens each share
// one budget, so at most globalTries plus one per address are compared; the right
// token from an address that did not guess passes at once, from a guessing one
// once its wait is over.
func TestTokenGuessingFromManyAddresses(t *testing.T) {
	const (
		token     = "right-token-0123456789"
		addresses = 250
		each      = 8
	)
	a := newAttackHandler(t, Options{Addr: "127.0.0.1:8080", Token: token})
	url := serveLoopback(t, a.h) + "/api/actions/read"
	clients := make([]*http.Client, addresses+3)
	for i := range clients {
		clients[i] = clientFrom(t, fmt.Sprintf("127.0.0.%d", i+1))
	}
	try := func(c *http.Client, guess string) int {
		code, body := post(t, c, url, `{"device":"hall_light"}`,
			map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + guess})
		if code == 200 && guess != token {
			t.Fatalf("a wrong token was accepted: %s", body)
		}
		return code
	}
	round := func() map[int]int {
		codes := map[int]int{}
		for i := range addresses {
			for j := range each {
				codes[try(clients[i], fmt.Sprintf("guess-%03d-%d-0000000000", i, j))]++
			}
		}
		return codes
	}

	codes := round()
	if compared := codes[http.StatusUnauthorized]; compared > globalTries+addresses || codes[http.StatusTooManyRequests] == 0 {
		t.Errorf("%d addresses × %d wrong tokens: %v; want at most %d compared (the budget of all, then one per address), the rest 429",
			addresses, each, codes, globalTries+addresses)
	}
	t.Logf("%d addresses × %d wrong tokens: %d compared (401), %d refused (429)", addresses, each,
		codes[http.StatusUnauthorized], codes[http.StatusTooManyRequests])
	// A resident's right token, from an address that did not guess: at
	// once, while the budget of all is spent.
	if code := try(clients[addresses], token); code != 200 {
		t.Errorf("the right token from another address while every guess is refused: %d, want 200", code)
	}

	// Another round once every address may guess again: one guess each,
	// and what the budget of all gained meanwhile.
	wait := tokenTries * tokenEvery
	a.advance(wait)
	codes = round()
	if compared, most := codes[http.StatusUnauthorized], addresses+int(wait/globalEvery); compared > most {
		t.Errorf("%s later, the same again: %v; want at most %d compared", wait, codes, most)
	}
	t.Logf("%s later, the same again: %d compared, %d refused", wait, codes[http.StatusUnauthorized], codes[http.StatusTooManyRequests])
	if code := try(clients[addresses+1], token); code != 200 {
		t.Errorf("the right token from another address during the second round: %d, want 200", code)
	}
	// A guessing address with the right token: refused until its wait is
	// over, then served.
	if code := try(clients[7], token); code != http.StatusTooManyRequests {
		t.Errorf("the right token from a guessing address: %d, want 429 until its wait is over", code)
	}
	a.advance(wait)
	if code := try(clients[7], token); code != 200 {
		t.Errorf("the right token from a guessing address after %s: %d, want 200", wait, code)
	}
}

// TestContentTypeMustBeJSON: only application/json, with parameters or not, is
// taken as JSON, not a type that merely starts alike.
func TestContentTypeMustBeJSON(t *testing.T) {
	a := newAttackHandler(t, Options{Addr: "127.0.0.1:8080"})
	url := serveLoopback(t, a.h) + "/api/actions/read"
	c := clientFrom(t, "127.0.0.9")
	for ct, want := range map[string]int{
		"application/json":                 200,
		"application/json; charset=utf-8":  200,
		"Application/JSON;charset=UTF-8":   200,
		"application/jsonx":                http.StatusUnsupportedMediaType,
		"application/json-patch+json":      http.StatusUnsupportedMediaType,
		"application/json5":                http.StatusUnsupportedMediaType,
		"application/jsonfoo; charset=utf": http.StatusUnsupportedMediaType,
		"application/json, text/plain":     http.StatusUnsupportedMediaType,
		"application/json; charset":        http.StatusUnsupportedMediaType,
		"text/plain":                       http.StatusUnsupportedMediaType,
		"":                                 http.StatusUnsupportedMediaType,
	} {
		code, body := post(t, c, url, `{"device":"hall_light"}`, map[string]string{"Content-Type": ct, csrfHeader: a.h.guard.csrf})
		if code != want {
			t.Errorf("Content-Type %q: %d %s, want %d", ct, code, body, want)
		}
	}
	if calls := a.act.log(); len(calls) != 3 {
		t.Errorf("actions carried out: %q, want the three with JSON's type", calls)
	}
}

// TestIngressOriginChecked: through ingress an action's Origin must name the host
// in X-Forwarded-Host; a missing header or Origin refuses it.
func TestIngressOriginChecked(t *testing.T) {
	const proxy = "127.0.0.3"
	a := newAttackHandler(t, Options{Addr: "127.0.0.1:8080", Token: "the-http-token-0123456789"})
	url := serveLoopback(t, a.h.Ingress(netip.MustParseAddr(proxy))) + "/api/actions/read"
	c := clientFrom(t, proxy)
	const ha = "homeassistant.local:8123"
	for _, tc := range []struct {
		name, origin, fwd string
		site              string // Sec-Fetch-Site; "" a browser that sends none
		want              int
	}{
		{"Home Assistant's page", "http://" + ha, ha, "same-origin", 200},
		{"Home Assistant's page, the default port", "https://ha.example.org", "ha.example.org:443", "same-origin", 200},
		{"another site, no X-Forwarded-Host", "http://evil.example", "", "", http.StatusForbidden},
		{"Home Assistant's host, no X-Forwarded-Host", "http://" + ha, "", "same-origin", http.StatusForbidden},
		{"no Origin", "", ha, "", http.StatusForbidden},
		{"another site", "http://evil.example", ha, "", http.StatusForbidden},
		{"another site, marked cross-site", "http://evil.example", ha, "cross-site", http.StatusForbidden},
		{"another port", "http://homeassistant.local:8124", ha, "", http.StatusForbidden},
		{"an opaque origin", "null", ha, "", http.StatusForbidden},
	} {
		hdr := map[string]string{"Content-Type": "application/json", csrfHeader: a.h.guard.csrf, "Sec-Fetch-Site": tc.site,
			"Origin": tc.origin, "X-Forwarded-Host": tc.fwd, "X-Ingress-Path": "/api/hassio_ingress/Tok3n"}
		if code, body := post(t, c, url, `{"device":"hall_light"}`, hdr); code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.want)
		}
	}
	if calls := a.act.log(); len(calls) != 2 {
		t.Errorf("actions carried out: %q, want the two from Home Assistant's page", calls)
	}
}
