package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"cloud2mqtt/internal/web"
)

// serveHTTP serves /healthz and /metrics, and the status page (page, at /)
// on addr until ctx ends and returns the base URL it listens on.
func (m *Main) serveHTTP(ctx context.Context, wg *sync.WaitGroup, addr string, met *metrics, page *web.Handler) (string, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		met.write(w)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		ok, reasons, details := m.health()
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		if reasons == nil {
			reasons = []string{}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"healthy": ok, "reasons": reasons, "details": details})
	})
	mux.Handle("/", page)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("app: listen on HTTP_ADDR=%s: %w (choose a free host:port, or leave HTTP_ADDR empty to turn the endpoint off)", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
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
	url := pageURL(ln.Addr())
	m.Log.Info().Str("HTTP_ADDR", addr).Str("url", url+"/").Msg("http endpoint: the status page at /, /healthz and /metrics")
	return url, nil
}
