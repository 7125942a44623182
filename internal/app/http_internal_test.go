package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestHTTPServerBounds: by default a connection's request must arrive
// within seconds and an idle kept-alive connection is closed within a
// minute (TestIdleConnectionsClosed proves the idle bound with a short
// one); a test's shorter bound is kept.
func TestHTTPServerBounds(t *testing.T) {
	d := httpTimeouts{}.withDefaults()
	if d.readHeader <= 0 || d.readHeader > 10*time.Second || d.read <= 0 || d.read > 30*time.Second || d.idle <= 0 || d.idle > time.Minute {
		t.Errorf("defaults %+v: want a request within seconds and idle connections closed within a minute", d)
	}
	if s := (httpTimeouts{idle: time.Millisecond}).withDefaults(); s.idle != time.Millisecond || s.read != d.read {
		t.Errorf("a test's idle bound: %+v", s)
	}
}

// serveHTTP serves h on a loopback port with the HTTP endpoint's server
// bounded by to, until the test ends; it returns the address.
func serveHTTP(t *testing.T, h http.Handler, to httpTimeouts) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(h, to)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	return ln.Addr().String()
}

// TestIdleConnectionsClosed: 2,000 kept-alive connections that go quiet
// after a request (they stayed open for ever) are closed by the daemon's
// HTTP server (newHTTPServer, as serve makes it, its /healthz) after its
// idle timeout, here shortened.
func TestIdleConnectionsClosed(t *testing.T) {
	t.Parallel()
	addr := serveHTTP(t, http.HandlerFunc((&Main{}).serveHealth), httpTimeouts{idle: 200 * time.Millisecond}.withDefaults())
	const n = 2000
	errs := make(chan error, n)
	sem := make(chan struct{}, 200) // not more at once than the listen backlog takes
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			<-sem
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			if _, err := fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
				errs <- err
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			r := bufio.NewReader(c)
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				errs <- fmt.Errorf("connection %d: %w", i, err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			// Kept alive, then quiet: the daemon closes it.
			if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
				errs <- fmt.Errorf("connection %d after its answer: %v, want the daemon's close (EOF)", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if failed++; failed <= 3 {
			t.Error(err)
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d idle connections not closed", failed, n)
	}
}
