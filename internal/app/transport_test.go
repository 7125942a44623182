package app

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"cloud2mqtt/internal/scheduler"
)

// TestCloudTransportKeepsConnections: reads sent together, round after
// round, reuse the connections of the previous round instead of opening
// new ones (a TLS handshake each with the real cloud).
func TestCloudTransportKeepsConnections(t *testing.T) {
	var opened atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte(`{"code":200}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	tr := cloudTransport()
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	const rounds = 5
	for range rounds {
		var wg sync.WaitGroup
		for range scheduler.DefaultMaxInFlight {
			wg.Go(func() {
				resp, err := c.Post(srv.URL, "application/json", nil)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			})
		}
		wg.Wait()
	}
	if n := opened.Load(); n > scheduler.DefaultMaxInFlight {
		t.Errorf("%d rounds of %d concurrent requests opened %d connections; want at most %d (kept open between rounds)",
			rounds, scheduler.DefaultMaxInFlight, n, scheduler.DefaultMaxInFlight)
	}
}
