package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud2mqtt/internal/app"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/cloudsim"
)

// Home Assistant's ingress over the whole daemon: a stand-in for the
// Supervisor's proxy forwards /api/hassio_ingress/<token>/ to the ingress
// listener from its own address, as the real one does from 172.30.32.2.

const (
	ingressPeer   = "127.0.0.3" // the stand-in proxy's address
	ingressPrefix = "/api/hassio_ingress/Xk3vQ9-token"
	ingressPanel  = "/hassio/ingress/cloud2mqtt" // Home Assistant's page framing the panel
)

// ingressProxy is the stand-in: it strips the prefix, names it in
// X-Ingress-Path, passes the browser's host in X-Forwarded-Host, sends the
// container's name as Host, and dials the daemon from ingressPeer. It
// records every path it is asked for; at ingressPanel it serves Home
// Assistant's page, which frames the panel.
type ingressProxy struct {
	URL   string
	mu    sync.Mutex
	paths []string
}

func startIngressProxy(t *testing.T, target string) *ingressProxy {
	t.Helper()
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ingressPeer)}, Timeout: 5 * time.Second}
	rp := &httputil.ReverseProxy{
		Transport: &http.Transport{DialContext: dialer.DialContext},
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(to)
			pr.Out.URL.Path = strings.TrimPrefix(pr.In.URL.Path, ingressPrefix)
			pr.Out.URL.RawPath = ""
			pr.SetXForwarded()
			pr.Out.Host = "local-cloud2mqtt:8099"
			pr.Out.Header.Set("X-Ingress-Path", ingressPrefix)
		},
	}
	p := &ingressProxy{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.paths = append(p.paths, r.URL.Path)
		p.mu.Unlock()
		switch {
		case r.URL.Path == ingressPanel:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, `<!doctype html><html><head><title>Home Assistant</title><link rel="icon" href="data:,"></head>`+
				`<body><iframe id="panel" src="`+ingressPrefix+`/" style="width:1200px;height:800px"></iframe></body></html>`)
		case strings.HasPrefix(r.URL.Path, ingressPrefix+"/"), r.URL.Path == ingressPrefix:
			rp.ServeHTTP(w, r)
		default:
			http.Error(w, "not under the ingress path", http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// outside are the paths asked for that are neither the panel's page nor
// under the ingress path.
func (p *ingressProxy) outside() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, path := range p.paths {
		if path != ingressPanel && !strings.HasPrefix(path, ingressPrefix+"/") {
			out = append(out, path)
		}
	}
	return out
}

func (p *ingressProxy) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.paths)
}

// startIngress is a daemon with HTTP_ADDR (with a token: actions there
// need it) and the ingress listener, and the stand-in proxy before it.
func startIngress(t *testing.T, o harnessOptions, token string) (*harness, *ingressProxy) {
	t.Helper()
	if o.env == nil {
		o.env = map[string]string{}
	}
	o.env["HTTP_ADDR"] = "127.0.0.1:0"
	o.env["HTTP_TOKEN"] = token
	o.noStart = true
	h := startHarness(t, o)
	h.main.Ingress = app.Ingress{Addr: "127.0.0.1:0", Peer: ingressPeer}
	h.start()
	if h.main.IngressURL() == "" {
		t.Fatal("no ingress listener")
	}
	return h, startIngressProxy(t, h.main.IngressURL())
}

// TestIngress: through the proxy every device is read, an action works
// without HTTP_TOKEN (with the CSRF token), nothing is asked outside the
// prefix; straight to the ingress port, any other address is refused
// before anything is served; HTTP_ADDR keeps its own rules.
func TestIngress(t *testing.T) {
	t.Parallel()
	h, proxy := startIngress(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(3)}}, "ingress-test-token-5a7b9c")
	h.devices()
	base := proxy.URL + ingressPrefix

	var list struct{ Devices []pageDevice }
	if code := getJSONURL(t, base+"/api/devices", &list); code != 200 || len(list.Devices) != 3 {
		t.Fatalf("devices through ingress: %d, %d devices", code, len(list.Devices))
	}
	var s struct {
		CSRF    string `json:"csrf_token"`
		Actions string `json:"actions"`
	}
	if code := getJSONURL(t, base+"/api/session", &s); code != 200 || s.Actions != "open" {
		t.Fatalf("session through ingress: %d %+v", code, s)
	}
	lists := func() int { return h.sim.Counts().Total(cloud.EndpointDevices) }
	before := lists()
	post := func(hdr map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, base+"/api/actions/refresh", bytes.NewReader([]byte("{}")))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", proxy.URL)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(map[string]string{"X-CSRF-Token": "wrong"}); code != 403 {
		t.Errorf("an action through ingress without the CSRF token: %d", code)
	}
	if code := post(map[string]string{"X-CSRF-Token": s.CSRF}); code != 200 {
		t.Errorf("an action through ingress, no HTTP_TOKEN: %d", code)
	}
	h.watch.until(wait, "the device list read again", func() bool { return lists() > before })
	if out := proxy.outside(); len(out) > 0 {
		t.Errorf("requests outside the ingress path: %q", out)
	}

	// Straight to the ingress port: refused, whatever is asked.
	for _, from := range []string{"127.0.0.1", "127.0.0.4"} {
		for _, path := range []string{"/", "/api/devices", "/api/session", "/healthz"} {
			code, body := getFrom(t, from, h.main.IngressURL()+path)
			if code != http.StatusForbidden || strings.Contains(body, s.CSRF) || strings.Contains(body, list.Devices[0].Name) {
				t.Errorf("GET %s from %s on the ingress port: %d %s", path, from, code, body)
			}
		}
	}
	// HTTP_ADDR beside it: the token for actions, its Host rule.
	if code, _ := action(t, h, "refresh", map[string]any{}, ""); code != 401 {
		t.Errorf("an action on HTTP_ADDR without the token: %d", code)
	}
	req, _ := http.NewRequest(http.MethodGet, h.main.HTTPURL()+"/api/devices", nil)
	req.Host = "local-cloud2mqtt:8099"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("the container's name on HTTP_ADDR: %v %v", resp.Status, err)
	} else {
		resp.Body.Close()
	}
}

// getFrom GETs url from the local address from.
func getFrom(t *testing.T, from, url string) (int, string) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s from %s: %v", url, from, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func getJSONURL(t *testing.T, url string, v any) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Errorf("GET %s: %v", url, err)
	}
	return resp.StatusCode
}
