package web

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// ingressDo serves a request on the ingress listener's handler, from
// client, as Home Assistant's proxy forwards it (Host: the container's
// name; X-Forwarded-Host: the name the browser reached Home Assistant by).
func ingressDo(a *attackHandler, client, method, path, body string, hdr map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Host, r.RemoteAddr = "local-cloud2mqtt:8099", client+":51000"
	r.Header.Set("X-Ingress-Path", "/api/hassio_ingress/Tok3n")
	r.Header.Set("X-Forwarded-Host", "homeassistant.local:8123")
	for k, v := range hdr {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	w := httptest.NewRecorder()
	a.h.Ingress(netip.MustParseAddr("172.30.32.2")).ServeHTTP(w, r)
	return w
}

// TestIngressListener: the ingress listener answers the Supervisor's
// proxy only; through it the Host is not checked, actions need no
// HTTP_TOKEN but the CSRF token and an Origin of Home Assistant's host,
// and the page may be framed by its own origin.
func TestIngressListener(t *testing.T) {
	a := newAttackHandler(t, Options{Addr: ":8080", Token: "the-http-token-0123456789"})
	const proxy = "172.30.32.2"

	// Anyone else: 403 before anything is served, every path.
	for _, path := range []string{"/", "/api/session", "/api/devices", "/api/events", "/healthz", "/metrics"} {
		w := ingressDo(a, "192.168.1.66", "GET", path, "", nil)
		if w.Code != http.StatusForbidden || strings.Contains(w.Body.String(), a.h.guard.csrf) || strings.Contains(w.Body.String(), "Hall light") ||
			!strings.Contains(w.Body.String(), "Home Assistant's sidebar") {
			t.Errorf("GET %s from another address: %d %s", path, w.Code, w.Body)
		}
	}
	if w := ingressDo(a, "172.30.32.3", "POST", "/api/actions/refresh", "{}", map[string]string{"Content-Type": "application/json"}); w.Code != 403 {
		t.Errorf("a POST from a neighbour of the proxy: %d", w.Code)
	}

	// The proxy: the container's name as Host is served, the page too.
	var s sessionJSON
	w := ingressDo(a, proxy, "GET", "/api/session", "", nil)
	if err := jsonOf(w, &s); err != nil || w.Code != 200 || s.Actions != accessOpen || s.CSRFToken != a.h.guard.csrf {
		t.Fatalf("session through ingress: %d %+v %v", w.Code, s, err)
	}
	page := ingressDo(a, proxy, "GET", "/", "", nil)
	if page.Code != 200 || page.Header().Get("X-Frame-Options") != "SAMEORIGIN" ||
		!strings.Contains(page.Header().Get("Content-Security-Policy"), "frame-ancestors 'self'") {
		t.Errorf("the page through ingress: %d %v", page.Code, page.Header())
	}
	for _, ref := range []string{`src="/`, `href="/`, `"/api`} {
		if strings.Contains(page.Body.String(), ref) {
			t.Errorf("the page has an absolute URL (%s): it would leave the ingress path", ref)
		}
	}

	post := func(hdr map[string]string) *httptest.ResponseRecorder {
		h := map[string]string{"Content-Type": "application/json", csrfHeader: a.h.guard.csrf,
			"Origin": "http://homeassistant.local:8123", "Sec-Fetch-Site": "same-origin"}
		for k, v := range hdr {
			h[k] = v
		}
		return ingressDo(a, proxy, "POST", "/api/actions/read", `{"device":"hall_light"}`, h)
	}
	if w := post(nil); w.Code != 200 {
		t.Errorf("an action through ingress, without HTTP_TOKEN: %d %s", w.Code, w.Body)
	}
	for name, hdr := range map[string]map[string]string{
		"without the CSRF token":  {csrfHeader: ""},
		"from another site":       {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
		"an Origin not HA's host": {"Origin": "http://local-cloud2mqtt:8099"},
	} {
		if w := post(hdr); w.Code != 403 {
			t.Errorf("an action through ingress %s: %d %s", name, w.Code, w.Body)
		}
	}
	if calls := a.act.log(); len(calls) != 1 {
		t.Errorf("calls: %q, want the one allowed", calls)
	}

	// HTTP_ADDR beside it keeps its rules: the token, the Host.
	if w := a.do("POST", "/api/actions/read", "192.168.1.5:8080", "192.168.1.20", `{"device":"hall_light"}`,
		map[string]string{"Content-Type": "application/json", csrfHeader: a.h.guard.csrf}); w.Code != 401 {
		t.Errorf("an action on HTTP_ADDR without the token: %d", w.Code)
	}
	if w := a.do("GET", "/api/session", "local-cloud2mqtt:8099", "192.168.1.20", "", nil); w.Code != http.StatusMisdirectedRequest {
		t.Errorf("the container's name on HTTP_ADDR: %d", w.Code)
	}
}
