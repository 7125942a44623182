package cloud

// One request and its answer: the HTTP exchange, the envelope every answer
// has, and what its status and code mean.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// call identifies one request for errors and logs.
type call struct {
	ep                    endpoint
	sku, device, instance string
	keyHint               string // Client.keyHint, for a refused key's error
}

func (cl call) String() string {
	s := cl.ep.name
	if cl.sku != "" || cl.device != "" {
		s += " " + cl.sku + "/" + cl.device
	}
	if cl.instance != "" {
		s += ": " + cl.instance
	}
	return s
}

func (cl call) fail(kind ErrorKind, msg string, err error) *APIError {
	return &APIError{Kind: kind, Endpoint: cl.ep.name, SKU: cl.sku, Device: cl.device, Instance: cl.instance, Msg: msg, Err: err, keyHint: cl.keyHint}
}

func (cl call) needDevice() error {
	if cl.sku == "" || cl.device == "" {
		return cl.fail(ErrRequest, "the sku and the device id must not be empty", nil)
	}
	return nil
}

type request struct {
	RequestID string `json:"requestId"`
	Payload   any    `json:"payload"`
}

type devicePayload struct {
	SKU    string `json:"sku"`
	Device string `json:"device"`
}

type controlPayload struct {
	SKU        string            `json:"sku"`
	Device     string            `json:"device"`
	Capability controlCapability `json:"capability"`
}

type controlCapability struct {
	Type     string `json:"type"`
	Instance string `json:"instance"`
	Value    any    `json:"value"`
}

// newRequestID returns a random (version 4) UUID: the spec asks for a unique
// id per request, and the service echoes it.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	hex.Encode(s[9:13], b[4:6])
	hex.Encode(s[14:18], b[6:8])
	hex.Encode(s[19:23], b[8:10])
	hex.Encode(s[24:36], b[10:16])
	s[8], s[13], s[18], s[23] = '-', '-', '-', '-'
	return string(s[:])
}

// answer is a response read in full.
type answer struct {
	status int
	header http.Header
	body   []byte
	limits RateLimits    // what its rate-limit headers said
	buf    *bytes.Buffer // body's storage, for release
}

// exchange sends one request and reads its answer, whatever its status.
// Failures to get an answer are transient, except a cancelled context, which
// is returned wrapped as it is.
func (c *Client) exchange(ctx context.Context, cl call, payload any) (answer, error) {
	var body io.Reader
	if cl.ep.method == http.MethodPost {
		b, err := json.Marshal(request{RequestID: newRequestID(), Payload: payload})
		if err != nil {
			return answer{}, cl.fail(ErrRequest, "the request cannot be encoded as JSON", err)
		}
		body = bytes.NewReader(b)
	}
	reqCtx := ctx // ctx's own end is told apart from the client's timeout
	if c.timeout > 0 {
		var cancel context.CancelFunc
		reqCtx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel() // after the body is read: the timeout covers it too
	}
	// Whether the request was written: a failure after that may have
	// reached the cloud (Reached), one before it did not. The trace goes
	// into the context the request is built with (req.WithContext would
	// copy the request).
	var wrote atomic.Bool
	reqCtx = httptrace.WithClientTrace(reqCtx, &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				wrote.Store(true)
			}
		},
	})
	req, err := http.NewRequestWithContext(reqCtx, cl.ep.method, c.base+cl.ep.path, body)
	if err != nil {
		return answer{}, cl.fail(ErrRequest, "the request cannot be built", err)
	}
	req.Header = c.headers
	if cl.ep != epControl { // a command is never sent twice
		req.Header = c.replay
	}

	start := time.Now()
	// A redirect is answered as it is: following it would carry the key
	// header to wherever it points.
	resp, err := c.transport.RoundTrip(req)
	if err != nil {
		c.counted(cl, 0)
		if e := c.schemeOfTransport(cl, err); e != nil && ctx.Err() == nil {
			return answer{}, e // failed before anything reached a server that speaks it
		}
		err = c.transportError(ctx, cl, 0, err)
		if wrote.Load() {
			err = &sentError{err}
		}
		return answer{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	c.counted(cl, resp.StatusCode)
	// The headers say what is left of the quota, whatever the answer.
	limits := c.readRateLimits(resp.Header, c.now())
	if c.onLimits != nil && limits.Known() {
		c.onLimits(limits)
	}
	// One buffer of the announced size (io.ReadAll would grow one from 512
	// bytes, copying each time): a read answer is a kilobyte or two. The
	// buffer comes from a pool when the caller gives the answer back
	// (answer.release).
	size := int64(bytes.MinRead)
	if n := resp.ContentLength; n > 0 && n <= c.maxBody {
		size += n
	}
	buf := getBodyBuffer(int(size))
	_, err = buf.ReadFrom(io.LimitReader(resp.Body, c.maxBody+1))
	data := buf.Bytes()
	if err != nil {
		putBodyBuffer(buf)
		return answer{}, c.transportError(ctx, cl, resp.StatusCode, err)
	}
	c.log.Debug().Str("endpoint", cl.ep.name).Str("sku", cl.sku).Str("device", cl.device).
		Int("status", resp.StatusCode).Int("bytes", len(data)).Dur("elapsed", time.Since(start).Round(10*time.Microsecond)).Msg("cloud request")
	if e := c.schemeOfAnswer(cl, resp.StatusCode, data); e != nil {
		putBodyBuffer(buf)
		return answer{}, e
	}
	if int64(len(data)) > c.maxBody {
		putBodyBuffer(buf)
		e := cl.fail(ErrTransient, fmt.Sprintf("the answer is larger than %d bytes and was not read", c.maxBody), nil)
		e.HTTPStatus, e.Limits = resp.StatusCode, limits
		return answer{}, e
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: data, limits: limits, buf: buf}, nil
}

// counted tells Config.OnRequest of a request sent, and its answer's
// status (0: none came).
func (c *Client) counted(cl call, status int) {
	if c.onRequest != nil {
		c.onRequest(cl.ep.name, status)
	}
}

// bodyBuffers keeps the buffers of answers given back, so that the steady
// reads do not each leave one for the collector. A buffer grown past
// maxPooledBody (a device list) is left to the collector.
var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBody = 64 << 10

func getBodyBuffer(size int) *bytes.Buffer {
	buf := bodyBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	buf.Grow(size)
	return buf
}

func putBodyBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledBody {
		bodyBuffers.Put(buf)
	}
}

// release gives the answer's buffer back for another answer: after it
// nothing may use a.body, or anything that shares its bytes (decoding
// copies what it keeps).
func (a *answer) release() {
	if a.buf != nil {
		putBodyBuffer(a.buf)
		a.buf, a.body = nil, nil
	}
}

func (c *Client) transportError(ctx context.Context, cl call, status int, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.Canceled) {
			return fmt.Errorf("cloud: %s: %w", cl, ctxErr)
		}
		e := cl.fail(ErrTransient, "no answer before the deadline", ctxErr)
		e.HTTPStatus = status
		return e
	}
	msg := "the request failed"
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		msg = "no answer in time"
	case status != 0:
		msg = "the answer was cut off"
	}
	e := cl.fail(ErrTransient, msg, err)
	e.HTTPStatus = status
	return e
}

// envelope is what every answer has around its content.
type envelope struct {
	code       int
	codeErr    error // the code is missing or not a number
	msg        string
	requestID  string
	data       json.RawMessage // device list
	payload    json.RawMessage // state, scenes
	capability json.RawMessage // control
}

var errNoCode = errors.New("the answer has no code")

// parseEnvelope reads the members every answer shares. Only a body that is
// not a JSON object is an error here; the code is judged by check.
func parseEnvelope(body []byte) (envelope, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return envelope{}, err
	}
	if m == nil {
		return envelope{}, errors.New("the answer is null, not an object")
	}
	env := envelope{
		msg:        rawText(m["msg"]),
		requestID:  rawText(m["requestId"]),
		data:       m["data"],
		payload:    m["payload"],
		capability: m["capability"],
	}
	if env.msg == "" {
		env.msg = rawText(m["message"])
	}
	env.code, env.codeErr = rawCode(m["code"])
	return env, nil
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// rawText reads a JSON string, or keeps any other JSON value as its text.
func rawText(raw json.RawMessage) string {
	if isNull(raw) {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	return string(bytes.TrimSpace(raw))
}

// rawCode reads a code given as a number or a numeric string.
func rawCode(raw json.RawMessage) (int, error) {
	if isNull(raw) {
		return 0, errNoCode
	}
	s := rawText(raw)
	if i, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
		return i, nil
	}
	if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1e9 {
		return int(f), nil
	}
	return 0, fmt.Errorf("the answer's code %.40q is not a number", s)
}

// kindForStatus maps an HTTP status or a body code onto an ErrorKind.
func kindForStatus(code int) ErrorKind {
	switch {
	case code == http.StatusUnauthorized, code == http.StatusForbidden:
		return ErrAuth
	case code == http.StatusTooManyRequests:
		return ErrRateLimited
	case code == http.StatusNotFound:
		return ErrNotFound
	case code == http.StatusRequestTimeout:
		return ErrTransient
	case code >= 400 && code <= 499:
		return ErrRequest
	}
	return ErrTransient
}

// check turns an answer into its envelope, or into the error it carries:
// by HTTP status first, then by the body's code (the service often answers
// a failure as HTTP 200 with "code": 400 and a msg).
func (c *Client) check(cl call, a answer) (envelope, error) {
	env, jsonErr := parseEnvelope(a.body)
	if a.status < 200 || a.status > 299 {
		e := cl.fail(kindForStatus(a.status), "", nil)
		if a.status >= 300 && a.status <= 399 {
			e.Kind = ErrRequest
			e.Msg = fmt.Sprintf("the service redirects to %q: set CLOUD_BASE_URL to the service's address", c.clean(a.header.Get("Location")))
		} else if jsonErr == nil {
			e.Msg = c.clean(env.msg)
			if env.codeErr == nil {
				e.Code = env.code
			}
		}
		if e.Msg == "" {
			e.Msg = strings.ToLower(http.StatusText(a.status))
		}
		e.HTTPStatus, e.Limits = a.status, a.limits
		e.RetryAfter = parseRetryAfter(a.header.Get("Retry-After"), c.now())
		return envelope{}, e
	}
	if jsonErr != nil {
		e := cl.fail(ErrTransient, "the answer is not JSON: "+c.excerpt(a.body), jsonErr)
		if len(bytes.TrimSpace(a.body)) == 0 {
			e.Msg, e.Err = "the answer is empty", nil
		}
		e.HTTPStatus = a.status
		return envelope{}, e
	}
	if env.codeErr != nil {
		e := cl.fail(ErrTransient, c.clean(env.codeErr.Error()), nil)
		e.HTTPStatus = a.status
		return envelope{}, e
	}
	if env.code != 200 {
		msg := c.clean(env.msg)
		if msg == "" {
			msg = "the service reported a failure"
		}
		e := cl.fail(kindForStatus(env.code), msg, nil)
		e.HTTPStatus, e.Limits = a.status, a.limits
		e.Code = env.code
		e.RetryAfter = parseRetryAfter(a.header.Get("Retry-After"), c.now())
		return envelope{}, e
	}
	return env, nil
}

// parseRetryAfter reads Retry-After as seconds or as an HTTP date; 0 when it
// is absent, unreadable or in the past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(secs) || math.IsInf(secs, 0) || secs <= 0 {
			return 0
		}
		if secs >= maxRetryAfter.Seconds() {
			return maxRetryAfter
		}
		d = time.Duration(math.Ceil(secs)) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}
