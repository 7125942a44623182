package cloud

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// ReadTransport carries the periodic state reads, the daemon's steady
// traffic (17 a second at 1000 devices), over fasthttp's client instead of
// net/http's: one read is written and answered in the caller's goroutine
// on a kept connection, with the request, the answer and their buffers
// reused, where net/http hands each request to two goroutines of its
// connection and leaves about 3 kB a read for the collector, the largest
// part of an idle daemon's CPU (docs/benchmarks.md, issue 32). It speaks
// HTTP/1.1 to the one host of the base URL, follows no redirect, and asks
// for no compression. Commands, the device list and scene lists keep
// net/http (Config.HTTPClient), whose account of what was written tells
// whether a failed command may have reached the cloud; a read that failed
// after its connection was made is taken as one that reached it.
//
// A read is bounded by its context's deadline (the client's timeout). A
// read's context ended before that ends every read then in flight: fasthttp
// has no per-request cancellation, so the transport cuts its connections
// short instead (the scheduler's reads share one context, ended when a
// shutdown has waited long enough for them).
type ReadTransport struct {
	hc     *fasthttp.HostClient
	origin string // scheme://host[:port]

	tls *tls.Config // https: dial agrees on it

	mu    sync.Mutex
	conns map[*trackedConn]struct{} // open connections, for abort
}

// NewReadTransport makes the transport for the base URL's host (what
// CLOUD_BASE_URL names): at most conns connections, each kept for idle
// seconds without a request. It returns nil and no error when a proxy is
// configured for that URL in the environment (HTTPS_PROXY, HTTP_PROXY,
// NO_PROXY), which only net/http's transport follows.
func NewReadTransport(baseURL string, conns int, idle time.Duration) (*ReadTransport, error) {
	base, err := parseBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("cloud: CLOUD_BASE_URL %q: %w", baseURL, err)
	}
	// The environment's proxy settings as net/http's transport reads them
	// (once, at its first use).
	if p, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err != nil || p != nil {
		return nil, nil // no transport: net/http's follows the proxy
	}
	host, port := u.Hostname(), u.Port()
	tlsOn := u.Scheme == "https"
	if port == "" {
		port = "80"
		if tlsOn {
			port = "443"
		}
	}
	hc := &fasthttp.HostClient{
		Addr:                      net.JoinHostPort(host, port),
		IsTLS:                     tlsOn,
		MaxConns:                  max(conns, 1),
		MaxConnWaitTimeout:        DefaultTimeout,
		MaxIdleConnDuration:       idle,
		MaxIdemponentCallAttempts: 2,
		ReadBufferSize:            16 << 10, // the answer's headers must fit
		MaxResponseBodySize:       int(MaxResponseBytes),
		NoDefaultUserAgentHeader:  true,
		DisablePathNormalizing:    true,
		// A read is a question: when a kept connection turns out closed
		// by the other end, asking again on a new one is safe (fasthttp
		// asks this only for failures on a kept connection). A read that
		// ran out of time, or was aborted, is not asked again.
		RetryIfErr: func(_ *fasthttp.Request, _ int, err error) (resetTimeout, retry bool) {
			var ne net.Error
			return false, !errors.Is(err, fasthttp.ErrTimeout) && !(errors.As(err, &ne) && ne.Timeout())
		},
	}
	var tlsConf *tls.Config
	if tlsOn {
		tlsConf = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	t := &ReadTransport{hc: hc, origin: u.Scheme + "://" + u.Host, conns: make(map[*trackedConn]struct{}), tls: tlsConf}
	hc.DialTimeout = t.dial
	return t, nil
}

// dial connects with net's dialer (fasthttp's own keeps a DNS cache whose
// cleaner ticks every second) and, for https, agrees on TLS here, so that
// a failure of either is known to have written nothing (a *dialError). The
// connection joins the set abort cuts short.
func (t *ReadTransport) dial(addr string, timeout time.Duration) (net.Conn, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	d := &net.Dialer{Timeout: timeout}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, &dialError{err}
	}
	if t.tls != nil {
		tc := tls.Client(c, t.tls)
		_ = tc.SetDeadline(time.Now().Add(timeout))
		if err := tc.Handshake(); err != nil {
			_ = c.Close()
			return nil, &dialError{err}
		}
		_ = tc.SetDeadline(time.Time{})
		c = tc
	}
	tc := &trackedConn{Conn: c, t: t}
	t.mu.Lock()
	t.conns[tc] = struct{}{}
	t.mu.Unlock()
	return tc, nil
}

// abort ends every open connection's wait at once and for good: a read in
// flight fails (even one whose deadline fasthttp is about to set), and the
// connections idle in the pool are closed.
func (t *ReadTransport) abort() {
	t.mu.Lock()
	for c := range t.conns {
		c.aborted.Store(true)
		_ = c.Conn.SetDeadline(past)
	}
	t.mu.Unlock()
	t.hc.CloseIdleConnections()
}

// past is a deadline that has passed.
var past = time.Unix(1, 0)

// trackedConn is a connection of the transport's: it leaves the set when
// closed, and once aborted keeps every deadline in the past.
type trackedConn struct {
	net.Conn
	t       *ReadTransport
	aborted atomic.Bool
	once    sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.t.mu.Lock()
		delete(c.t.conns, c)
		c.t.mu.Unlock()
	})
	return c.Conn.Close()
}

// Handshake tells fasthttp that the connection is TLS already (dial agreed
// on it); a plain one is never asked.
func (c *trackedConn) Handshake() error {
	if h, ok := c.Conn.(interface{ Handshake() error }); ok {
		return h.Handshake()
	}
	return nil
}

func (c *trackedConn) deadline(d time.Time) time.Time {
	if c.aborted.Load() {
		return past
	}
	return d
}

func (c *trackedConn) SetDeadline(d time.Time) error { return c.Conn.SetDeadline(c.deadline(d)) }
func (c *trackedConn) SetReadDeadline(d time.Time) error {
	return c.Conn.SetReadDeadline(c.deadline(d))
}
func (c *trackedConn) SetWriteDeadline(d time.Time) error {
	return c.Conn.SetWriteDeadline(c.deadline(d))
}

// CloseIdleConnections closes the connections no read is using.
func (t *ReadTransport) CloseIdleConnections() { t.hc.CloseIdleConnections() }

// exchangeRead is exchange for a state read over c.reads: body POSTed to
// the state path, the answer read whole into fasthttp's buffers, which
// the answer's release gives back.
func (c *Client) exchangeRead(ctx context.Context, cl call, body []byte) (answer, error) {
	start := time.Now()
	deadline, ok := ctx.Deadline()
	if c.timeout > 0 && (!ok || start.Add(c.timeout).Before(deadline)) {
		deadline, ok = start.Add(c.timeout), true
	}
	if !ok {
		deadline = start.Add(DefaultTimeout)
	}
	resp, err := c.reads.post(ctx, cl.ep.path, c.headers, body, deadline)
	if err != nil {
		c.counted(cl, 0)
		var large *tooLargeError
		if errors.As(err, &large) {
			return answer{}, cl.tooLarge(large.status, large.limit, RateLimits{})
		}
		var df *dialError
		reached := !errors.As(err, &df)
		err = c.transportError(ctx, cl, 0, err)
		if reached {
			err = &sentError{err}
		}
		return answer{}, err
	}
	status := resp.StatusCode()
	c.counted(cl, status)
	h := fastHeader{&resp.Header}
	limits := c.heard(h)
	data := resp.Body()
	if e := c.sized(cl, status, len(data), limits, start); e != nil {
		fasthttp.ReleaseResponse(resp)
		return answer{}, e
	}
	return answer{status: status, header: h, body: data, limits: limits, fresp: resp}, nil
}

// fastHeader is fasthttp's answer's headers.
type fastHeader struct{ h *fasthttp.ResponseHeader }

func (f fastHeader) first(name string) (string, bool) {
	v := f.h.Peek(name)
	if v == nil {
		return "", false
	}
	return string(v), true
}

// post sends body to path with header and reads the answer whole, which
// the caller gives back with fasthttp.ReleaseResponse. It returns when
// deadline passes or ctx ends; a failure before anything was written is a
// *dialError.
func (t *ReadTransport) post(ctx context.Context, path string, header http.Header, body []byte, deadline time.Time) (*fasthttp.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, &dialError{err}
	}
	fr := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(fr)
	fr.Header.SetMethod(http.MethodPost)
	fr.SetRequestURI(t.origin + path)
	for k, vs := range header {
		for _, v := range vs {
			fr.Header.Add(k, v)
		}
	}
	fr.SetBody(body)
	resp := fasthttp.AcquireResponse()
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, t.abort)
	}
	err := t.hc.DoDeadline(fr, resp, deadline)
	if stop != nil {
		stop()
	}
	if err == nil {
		return resp, nil
	}
	status := resp.StatusCode()
	fasthttp.ReleaseResponse(resp)
	timedOut := errors.Is(err, fasthttp.ErrTimeout)
	if d, ok := ctx.Deadline(); timedOut && ok && !time.Now().Before(d) {
		// The context's deadline has passed (fasthttp's was the same
		// instant): its end is on its way, and the read ends with it, as
		// over net/http.
		<-ctx.Done()
	}
	var df *dialError
	switch {
	case errors.As(err, &df):
		return nil, err
	case errors.Is(err, fasthttp.ErrNoFreeConns):
		return nil, &dialError{err}
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%w (%w)", ctx.Err(), err)
	case timedOut:
		// As net/http says it: a net.Error that timed out.
		return nil, fmt.Errorf("%w (%w)", os.ErrDeadlineExceeded, err)
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return nil, &tooLargeError{status: status, limit: int64(t.hc.MaxResponseBodySize)}
	}
	return nil, err
}

// dialError is a failure to connect (or to agree on TLS): nothing was
// written, and the cloud was not reached.
type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// tooLargeError is an answer longer than fasthttp was allowed to read
// (MaxResponseBytes), left unread: Client.tooLarge's error.
type tooLargeError struct {
	status int   // the answer's HTTP status
	limit  int64 // the most bytes read
}

func (e *tooLargeError) Error() string { return "the answer is too large" }
