package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"cloud2mqtt/internal/statuspage"
	"cloud2mqtt/internal/web"
)

// The HTTP endpoint: /healthz, /metrics and the status page on HTTP_ADDR, and
// in app mode the page on the ingress port. One web.Handler holds the guards;
// the servers here bound what a connection may cost.

// Ingress is the status page in Home Assistant's sidebar: only the
// Supervisor's proxy is served on Addr. The zero value is off.
type Ingress struct {
	// Addr is the listener's address, ":8099" for the app's ingress_port.
	Addr string
	// Peer is the one address served: the Supervisor's ingress proxy
	// (172.30.32.2; tests use a loopback address).
	Peer string
}

// httpTimeouts bound a connection's request headers and body and its idle wait;
// event streams are bounded by their write deadline instead.
type httpTimeouts struct {
	readHeader, read, idle time.Duration
}

func (t httpTimeouts) withDefaults() httpTimeouts {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&t.readHeader, 5*time.Second)
	def(&t.read, 10*time.Second)
	def(&t.idle, 30*time.Second)
	return t
}

// serve starts the HTTP endpoint (health, metrics, the status page) when
// HTTP_ADDR is set, and the ingress listener when Main.Ingress is.
func (m *Main) serve(ctx context.Context, wg *sync.WaitGroup, d *running) error {
	addr := d.cfg.HTTP.Addr
	if addr == "" && m.Ingress.Addr == "" {
		return nil
	}
	var peer netip.Addr
	if m.Ingress.Addr != "" {
		var err error
		if peer, err = netip.ParseAddr(m.Ingress.Peer); err != nil {
			return fmt.Errorf("app: the ingress proxy's address %q is not an IP address (ADDON_INGRESS_PEER; default 172.30.32.2)", m.Ingress.Peer)
		}
	}
	h, err := d.page.Handler(web.Options{Addr: addr, Hosts: d.cfg.HTTP.HostNames(), Token: d.cfg.HTTP.Token.Reveal(),
		Health: http.HandlerFunc(m.serveHealth), Metrics: metricsHandler(d.met)},
		statuspage.Parts{Mirror: d.mirror, Registry: d.reg, Poller: d.poll, Scheduler: d.sched, Settings: d.set,
			Limits: d.scfg, LANPoll: d.lanPoll()}, d.log)
	if err != nil {
		return err
	}
	timeouts := httpTimeouts{}.withDefaults()
	if addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("app: listen on HTTP_ADDR=%s: %w (choose a free host:port, or leave HTTP_ADDR empty to turn the endpoint off)", addr, err)
		}
		url := m.startServer(ctx, wg, ln, h, h, timeouts)
		m.mu.Lock()
		m.reached.PageURL = url
		m.mu.Unlock()
		m.Log.Info().Str("HTTP_ADDR", addr).Str("url", url+"/").Msg("http endpoint: the status page at /, /healthz and /metrics")
	}
	if m.Ingress.Addr != "" {
		ln, err := net.Listen("tcp", m.Ingress.Addr)
		if err != nil {
			return fmt.Errorf("app: listen on the ingress port %s: %w (another program uses it)", m.Ingress.Addr, err)
		}
		url := m.startServer(ctx, wg, ln, h.Ingress(peer), h, timeouts)
		m.mu.Lock()
		m.reached.IngressURL = url
		m.mu.Unlock()
		m.Log.Info().Str("listen", ln.Addr().String()).Str("proxy", peer.String()).
			Msg("ingress: the status page in Home Assistant's sidebar, for its proxy only")
	}
	return nil
}

// startServer serves handler on ln until ctx ends and returns its base
// URL. page's event streams end with the server.
func (m *Main) startServer(ctx context.Context, wg *sync.WaitGroup, ln net.Listener, handler http.Handler, page *web.Handler, t httpTimeouts) string {
	srv := newHTTPServer(handler, t)
	// Open event streams would keep Shutdown waiting: they end with it.
	srv.RegisterOnShutdown(page.Close)
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Log.Error().Err(err).Msg("http endpoint stopped")
		}
	}()
	go func() {
		defer wg.Done()
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return pageURL(ln.Addr())
}

// newHTTPServer is a server of the HTTP endpoint: handler, its connections
// bounded by t, headers by 32 KiB.
func newHTTPServer(handler http.Handler, t httpTimeouts) *http.Server {
	return &http.Server{Handler: handler, ReadHeaderTimeout: t.readHeader, ReadTimeout: t.read, IdleTimeout: t.idle,
		MaxHeaderBytes: 32 << 10}
}

// metricsHandler is /metrics.
func metricsHandler(met *metrics) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		met.write(w)
	})
}

// serveHealth is /healthz.
func (m *Main) serveHealth(w http.ResponseWriter, _ *http.Request) {
	ok, reasons, details := m.health()
	w.Header().Set("Content-Type", "application/json")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	if reasons == nil {
		reasons = []string{}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"healthy": ok, "reasons": reasons, "details": details})
}
