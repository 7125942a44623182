package demo

import (
	"context"
	"net"
	"net/http"
	"time"
)

// loopbackServer serves a handler on a free loopback port.
type loopbackServer struct {
	URL  string
	srv  *http.Server
	done chan struct{}
}

func newLoopbackServer(h http.Handler) (*loopbackServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &loopbackServer{URL: "http://" + ln.Addr().String(), srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}, done: make(chan struct{})}
	go func() { defer close(s.done); _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *loopbackServer) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
}
