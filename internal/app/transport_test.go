package app

import (
	"fmt"
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
// new ones (a TLS handshake each with the real cloud): the steady reads
// in flight, and a start's first reads beside them.
func TestCloudTransportKeepsConnections(t *testing.T) {
	for _, concurrent := range []int{scheduler.DefaultMaxInFlight, scheduler.DefaultMaxInFlight + scheduler.DefaultFirstInFlight} {
		t.Run(fmt.Sprint(concurrent), func(t *testing.T) {
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
			const rounds = 10
			for range rounds {
				var wg sync.WaitGroup
				for range concurrent {
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
			// A connection goes back to the idle pool just after its body
			// is read, so now and then a round starts before the last
			// one's are all back and dials one more. net/http's default (2
			// idle) dials concurrent-2 a round, the steady 8 kept
			// concurrent-8.
			if n := opened.Load(); n >= 2*int64(concurrent) {
				t.Errorf("%d rounds of %d concurrent requests opened %d connections; want about %d (kept open between rounds)",
					rounds, concurrent, n, concurrent)
			}
		})
	}
}

// TestCloudTransportFollowsTheProxy: every request to the cloud goes over
// the one transport, which follows a proxy set in the environment
// (HTTPS_PROXY, HTTP_PROXY, NO_PROXY) as net/http's default does.
func TestCloudTransportFollowsTheProxy(t *testing.T) {
	hc, _ := (&Main{}).httpClient()
	if tr, ok := hc.Transport.(*http.Transport); !ok || tr.Proxy == nil {
		t.Errorf("the daemon's cloud transport %T does not follow the environment's proxy", hc.Transport)
	}
}
