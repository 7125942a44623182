// Package cloud is the typed HTTP client of the Smart Device Cloud Control
// Interface: device lists, state, scenes and control, with the cloud's
// errors as *APIError.
//
// It is the only package that knows the cloud's wire format. It imports
// nothing of ours but the capability value language (internal/capability),
// into whose types it decodes, and knows nothing of MQTT, scheduling or Home
// Assistant; callers decide when to call it (internal/scheduler owns every
// request budget).
package cloud

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"cloud2mqtt/internal/capability"

	"github.com/rs/zerolog"
)

const (
	// DefaultKeyHeader is the header that carries the API key (spec, Authentication).
	DefaultKeyHeader = "Service-API-Key"
	// DefaultTimeout bounds one request when Config.HTTPClient is nil.
	DefaultTimeout = 10 * time.Second
	// MaxResponseBytes is the most of an answer the client reads. The largest
	// real device list we have is 43 KB; anything near this limit is not an
	// answer we could use, and reading it whole would only cost memory.
	MaxResponseBytes = 8 << 20

	// maxRetryAfter caps a Retry-After so that a bogus header cannot stall
	// the scheduler for days; the service's windows are a minute at most.
	maxRetryAfter = time.Hour
	// maxRemembered bounds the set behind the log-once warnings.
	maxRemembered = 1024
	// maxMsgLen bounds a message taken from an answer into an error or log.
	maxMsgLen = 300
)

// endpoint is one operation of the service.
type endpoint struct {
	name   string // the APIError.Endpoint value
	method string
	path   string
}

var (
	epDevices   = endpoint{"devices", http.MethodGet, "/router/api/v1/user/devices"}
	epState     = endpoint{"state", http.MethodPost, "/router/api/v1/device/state"}
	epScenes    = endpoint{"scenes", http.MethodPost, "/router/api/v1/device/scenes"}
	epDIYScenes = endpoint{"diy-scenes", http.MethodPost, "/router/api/v1/device/diy-scenes"}
	epControl   = endpoint{"control", http.MethodPost, "/router/api/v1/device/control"}
)

// Config is what New needs. Only BaseURL and APIKey are required.
type Config struct {
	BaseURL    string         // CLOUD_BASE_URL, e.g. https://host (paths /router/api/v1/... appended)
	APIKey     string         // CLOUD_API_KEY; sent in KeyHeader, never logged
	KeyHeader  string         // default "Service-API-Key"
	HTTPClient *http.Client   // default: DefaultTimeout per request
	Logger     zerolog.Logger // warnings about odd answers, debug lines per request
}

// String describes the config with the API key redacted, so that a Config
// printed by mistake leaks nothing.
func (c Config) String() string {
	return fmt.Sprintf("cloud.Config{BaseURL: %q, KeyHeader: %q, APIKey: %s}", c.BaseURL, c.KeyHeader, redactedKey(c.APIKey))
}

// MarshalZerologObject logs the config with the API key redacted.
func (c Config) MarshalZerologObject(e *zerolog.Event) {
	e.Str("base_url", c.BaseURL).Str("key_header", c.KeyHeader).Str("api_key", redactedKey(c.APIKey))
}

func redactedKey(k string) string {
	if k == "" {
		return "(empty)"
	}
	return "[redacted]"
}

// ControlRequest asks the device to set one capability instance to Value
// (the cloud form: an int for ENUM/INTEGER, a map for STRUCT).
type ControlRequest struct {
	SKU, Device, Type, Instance string
	Value                       any
}

// Client talks to the cloud service. It is safe for concurrent use; it does no
// rate limiting or retrying of its own (internal/scheduler does), it only says
// through the kind of its errors whether a retry can help.
type Client struct {
	base    string // scheme://host[/prefix], no trailing slash
	key     string
	header  string
	http    *http.Client
	log     zerolog.Logger
	now     func() time.Time
	maxBody int64

	mu   sync.Mutex
	seen map[string]struct{} // warnings already logged
}

// New checks cfg and returns a client. Its errors name the variable to fix.
func New(cfg Config) (*Client, error) {
	base, err := parseBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	if cfg.APIKey == "" {
		return nil, errors.New("cloud: the API key is empty: set CLOUD_API_KEY to the key of the account")
	}
	if strings.TrimSpace(cfg.APIKey) != cfg.APIKey || !validHeaderValue(cfg.APIKey) {
		return nil, errors.New("cloud: the API key has spaces at its ends or control characters (a newline from a key file?): check CLOUD_API_KEY")
	}
	header := cfg.KeyHeader
	if header == "" {
		header = DefaultKeyHeader
	}
	if !validHeaderName(header) {
		return nil, fmt.Errorf("cloud: the key header name %q is not a valid HTTP header name: use letters, digits and '-', e.g. %s", header, DefaultKeyHeader)
	}
	var hc http.Client
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient // a copy shares the transport, lets us refuse redirects
	} else {
		hc.Timeout = DefaultTimeout
	}
	if hc.CheckRedirect == nil {
		// A redirect would carry the key header to wherever it points.
		hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return &Client{
		base:    base,
		key:     cfg.APIKey,
		header:  header,
		http:    &hc,
		log:     cfg.Logger.With().Str("component", "cloud").Logger(),
		now:     time.Now,
		maxBody: MaxResponseBytes,
		seen:    make(map[string]struct{}),
	}, nil
}

func parseBaseURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", errors.New("cloud: the base URL is empty: set CLOUD_BASE_URL, e.g. https://host")
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the url.Error would repeat the URL, password and all
		}
		return "", fmt.Errorf("cloud: CLOUD_BASE_URL does not parse as a URL (%w): use e.g. https://host", err)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	default:
		return "", fmt.Errorf("cloud: CLOUD_BASE_URL %q must start with http:// or https://, e.g. https://host", u.Redacted())
	}
	if u.Host == "" {
		return "", fmt.Errorf("cloud: CLOUD_BASE_URL %q has no host: use e.g. https://host", u.Redacted())
	}
	if u.User != nil {
		return "", fmt.Errorf("cloud: CLOUD_BASE_URL %q must not carry a user or password: the API key goes in CLOUD_API_KEY", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("cloud: CLOUD_BASE_URL %q must not have a query or fragment: use e.g. https://host", u.Redacted())
	}
	return strings.ToLower(u.Scheme) + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/"), nil
}

func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < 0x20 && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

func validHeaderName(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		b := h[i]
		switch {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0:
		default:
			return false
		}
	}
	return true
}

// ListDevices returns the account's devices with their capability
// definitions. Devices the answer does not identify (no sku or device id) and
// duplicates are left out and logged; capabilities that cannot be decoded are
// named in Device.Problems. An answer without data is an empty list.
func (c *Client) ListDevices(ctx context.Context) ([]capability.Device, error) {
	cl := call{ep: epDevices}
	a, err := c.exchange(ctx, cl, nil)
	if err != nil {
		return nil, err
	}
	return c.readDevices(cl, a)
}

// State reads the current state of one device.
func (c *Client) State(ctx context.Context, sku, device string) (DeviceState, error) {
	cl := call{ep: epState, sku: sku, device: device}
	if err := cl.needDevice(); err != nil {
		return DeviceState{}, err
	}
	a, err := c.exchange(ctx, cl, devicePayload{SKU: sku, Device: device})
	if err != nil {
		return DeviceState{}, err
	}
	return c.readState(cl, a)
}

// Scenes lists a device's dynamic light scenes (too many to be in the device list).
func (c *Client) Scenes(ctx context.Context, sku, device string) (Scenes, error) {
	return c.scenes(ctx, call{ep: epScenes, sku: sku, device: device})
}

// DIYScenes lists a device's DIY scenes.
func (c *Client) DIYScenes(ctx context.Context, sku, device string) (Scenes, error) {
	return c.scenes(ctx, call{ep: epDIYScenes, sku: sku, device: device})
}

func (c *Client) scenes(ctx context.Context, cl call) (Scenes, error) {
	if err := cl.needDevice(); err != nil {
		return Scenes{}, err
	}
	a, err := c.exchange(ctx, cl, devicePayload{SKU: cl.sku, Device: cl.device})
	if err != nil {
		return Scenes{}, err
	}
	return c.readScenes(cl, a)
}

// Control sends one command. It fails when the service refuses it, by HTTP
// status, by the body's code, or by a "failure" status in the echoed
// capability. The value is sent as given: validating it against the
// capability is Validate's job.
func (c *Client) Control(ctx context.Context, req ControlRequest) (ControlResult, error) {
	cl := call{ep: epControl, sku: req.SKU, device: req.Device, instance: req.Instance}
	if err := cl.needDevice(); err != nil {
		return ControlResult{}, err
	}
	if req.Type == "" || req.Instance == "" {
		return ControlResult{}, cl.fail(ErrRequest, "a control request needs a capability type and instance", nil)
	}
	if req.Value == nil {
		return ControlResult{}, cl.fail(ErrRequest, "a control request needs a value", nil)
	}
	a, err := c.exchange(ctx, cl, controlPayload{
		SKU:        req.SKU,
		Device:     req.Device,
		Capability: controlCapability{Type: req.Type, Instance: req.Instance, Value: req.Value},
	})
	if err != nil {
		return ControlResult{}, err
	}
	return c.readControl(cl, a)
}

// call identifies one request for errors and logs.
type call struct {
	ep                    endpoint
	sku, device, instance string
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
	return &APIError{Kind: kind, Endpoint: cl.ep.name, SKU: cl.sku, Device: cl.device, Instance: cl.instance, Msg: msg, Err: err}
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
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// answer is a response read in full.
type answer struct {
	status int
	header http.Header
	body   []byte
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
	req, err := http.NewRequestWithContext(ctx, cl.ep.method, c.base+cl.ep.path, body)
	if err != nil {
		return answer{}, cl.fail(ErrRequest, "the request cannot be built", err)
	}
	req.Header.Set(c.header, c.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")

	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return answer{}, c.transportError(ctx, cl, 0, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return answer{}, c.transportError(ctx, cl, resp.StatusCode, err)
	}
	c.log.Debug().Str("endpoint", cl.ep.name).Str("sku", cl.sku).Str("device", cl.device).
		Int("status", resp.StatusCode).Int("bytes", len(data)).Dur("elapsed", time.Since(start)).Msg("cloud request")
	if int64(len(data)) > c.maxBody {
		e := cl.fail(ErrTransient, fmt.Sprintf("the answer is larger than %d bytes and was not read", c.maxBody), nil)
		e.HTTPStatus = resp.StatusCode
		return answer{}, e
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: data}, nil
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
		e.HTTPStatus = a.status
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
		e.HTTPStatus = a.status
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

// readDevices decodes a device-list answer.
func (c *Client) readDevices(cl call, a answer) ([]capability.Device, error) {
	env, err := c.check(cl, a)
	if err != nil {
		return nil, err
	}
	out := []capability.Device{}
	if isNull(env.data) {
		return out, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(env.data, &items); err != nil {
		e := cl.fail(ErrTransient, "the device list's data is not a list", err)
		e.HTTPStatus, e.Code = a.status, env.code
		return nil, e
	}
	seen := make(map[string]bool, len(items))
	var dec capability.DeviceDecoder
	for i, raw := range items {
		d, err := dec.Decode(raw)
		if err != nil {
			c.warnOnce("device-undecodable:"+strconv.Itoa(i)+":"+err.Error(), func(ev *zerolog.Event) {
				ev.Int("index", i).Str("error", c.clean(err.Error())).Msg("cloud: a device in the list cannot be decoded; left out")
			})
			continue
		}
		if d.SKU == "" || d.Device == "" {
			c.warnOnce("device-unnamed:"+d.SKU+"/"+d.Device+":"+d.Name, func(ev *zerolog.Event) {
				ev.Int("index", i).Str("sku", c.clean(d.SKU)).Str("device", c.clean(d.Device)).Str("name", c.clean(d.Name)).
					Msg("cloud: a device in the list has no sku or device id; left out")
			})
			continue
		}
		key := d.SKU + "/" + d.Device
		if seen[key] {
			c.warnOnce("device-duplicate:"+key, func(ev *zerolog.Event) {
				ev.Str("sku", c.clean(d.SKU)).Str("device", c.clean(d.Device)).Msg("cloud: a device appears twice in the list; the first is kept")
			})
			continue
		}
		seen[key] = true
		c.noteDevice(d)
		out = append(out, d)
	}
	return out, nil
}

// noteDevice logs, once per distinct thing, what the bridge will not fully
// understand about a device: its type, its capability types, its problems.
func (c *Client) noteDevice(d capability.Device) {
	if d.Type != "" && !capability.KnownDeviceType(d.Type) {
		c.warnOnce("device-type:"+d.Type, func(ev *zerolog.Event) {
			ev.Str("type", c.clean(d.Type)).Str("sku", c.clean(d.SKU)).Str("device", c.clean(d.Device)).
				Msg("cloud: unknown device type; kept as reported")
		})
	}
	for _, cp := range d.Capabilities {
		c.noteCapabilityType(cp.Type, cp.Instance, d.SKU, d.Device)
	}
	for _, p := range d.Problems {
		c.warnOnce("device-problem:"+d.SKU+"/"+d.Device+":"+p, func(ev *zerolog.Event) {
			ev.Str("sku", c.clean(d.SKU)).Str("device", c.clean(d.Device)).Str("problem", c.clean(p)).
				Msg("cloud: a capability cannot be decoded; left out")
		})
	}
}

func (c *Client) noteCapabilityType(typ, instance, sku, device string) {
	if capability.KnownCapabilityType(typ) {
		return
	}
	c.warnOnce("capability-type:"+typ, func(ev *zerolog.Event) {
		ev.Str("type", c.clean(typ)).Str("instance", c.clean(instance)).Str("sku", c.clean(sku)).Str("device", c.clean(device)).
			Msg("cloud: unknown capability type; kept as reported")
	})
}

// warnOnce logs a warning the first time key is seen by this client. Past
// maxRemembered keys it keeps logging rather than grow without bound.
func (c *Client) warnOnce(key string, log func(*zerolog.Event)) {
	c.mu.Lock()
	_, done := c.seen[key]
	if !done && len(c.seen) < maxRemembered {
		c.seen[key] = struct{}{}
	}
	c.mu.Unlock()
	if !done {
		log(c.log.Warn())
	}
}

// devicePart is the part of a state or scene payload that names the device.
type devicePart struct {
	SKU          string            `json:"sku"`
	Device       string            `json:"device"`
	Capabilities []json.RawMessage `json:"capabilities"`
}

// readPayload decodes a state or scene payload and checks it is about the
// device asked for (a missing name is taken to be that device).
func (c *Client) readPayload(cl call, a answer, env envelope) (devicePart, error) {
	var p devicePart
	if err := json.Unmarshal(env.payload, &p); err != nil {
		e := cl.fail(ErrTransient, "the answer's payload is not a device object", err)
		e.HTTPStatus, e.Code = a.status, env.code
		return p, e
	}
	if (p.SKU != "" && !strings.EqualFold(p.SKU, cl.sku)) || (p.Device != "" && !strings.EqualFold(p.Device, cl.device)) {
		e := cl.fail(ErrTransient, fmt.Sprintf("the answer is about %s/%s, not the device asked for", c.clean(p.SKU), c.clean(p.Device)), nil)
		e.HTTPStatus, e.Code = a.status, env.code
		return p, e
	}
	return p, nil
}

// readStateSlow decodes a state answer the robust way: each part on its
// own, so that a capability that cannot be read costs only itself (logged).
// readState tries readStateFast first.
func (c *Client) readStateSlow(cl call, a answer) (DeviceState, error) {
	env, err := c.check(cl, a)
	if err != nil {
		return DeviceState{}, err
	}
	if isNull(env.payload) {
		e := cl.fail(ErrTransient, "the state answer has no payload", nil)
		e.HTTPStatus, e.Code = a.status, env.code
		return DeviceState{}, e
	}
	p, err := c.readPayload(cl, a, env)
	if err != nil {
		return DeviceState{}, err
	}
	caps := decodeCapabilities(c, cl, p.Capabilities, func(cs CapabilityState) (string, string) { return cs.Type, cs.Instance })
	return DeviceState{SKU: cl.sku, Device: cl.device, Capabilities: caps}, nil
}

// decodeCapabilities decodes the capabilities of a state or scene payload.
// One that cannot be decoded or has no instance is left out and logged.
func decodeCapabilities[T any](c *Client, cl call, raws []json.RawMessage, name func(T) (typ, instance string)) []T {
	out := make([]T, 0, len(raws))
	for i, raw := range raws {
		var v T
		err := json.Unmarshal(raw, &v)
		typ, instance := name(v)
		if err == nil && instance == "" {
			err = errors.New("it has no instance")
		}
		if err != nil {
			c.warnOnce(cl.ep.name+"-undecodable:"+cl.sku+"/"+cl.device+":"+strconv.Itoa(i)+":"+err.Error(), func(ev *zerolog.Event) {
				ev.Str("endpoint", cl.ep.name).Str("sku", c.clean(cl.sku)).Str("device", c.clean(cl.device)).Int("index", i).
					Str("error", c.clean(err.Error())).Msg("cloud: a capability in the answer cannot be decoded; left out")
			})
			continue
		}
		c.noteCapabilityType(typ, instance, cl.sku, cl.device)
		out = append(out, v)
	}
	return out
}

// readScenes decodes a scene or DIY-scene answer. A missing payload is no
// scenes.
func (c *Client) readScenes(cl call, a answer) (Scenes, error) {
	env, err := c.check(cl, a)
	if err != nil {
		return Scenes{}, err
	}
	if isNull(env.payload) {
		return Scenes{SKU: cl.sku, Device: cl.device, Capabilities: []capability.Capability{}}, nil
	}
	p, err := c.readPayload(cl, a, env)
	if err != nil {
		return Scenes{}, err
	}
	caps := decodeCapabilities(c, cl, p.Capabilities, func(cp capability.Capability) (string, string) { return cp.Type, cp.Instance })
	return Scenes{SKU: cl.sku, Device: cl.device, Capabilities: caps}, nil
}

// readControl decodes a control answer. Besides the code, the live service
// reports a device-side failure in the echoed capability's state:
// {"status":"failure","errorCode":…,"errorMsg":…}.
func (c *Client) readControl(cl call, a answer) (ControlResult, error) {
	env, err := c.check(cl, a)
	if err != nil {
		return ControlResult{}, err
	}
	res := ControlResult{RequestID: env.requestID, Code: env.code, Msg: env.msg}
	if isNull(env.capability) {
		return res, nil
	}
	echo, err := decodeEcho(env.capability)
	if err != nil {
		// The code said success; an echo we cannot read does not undo that.
		c.warnOnce("control-echo:"+cl.sku+"/"+cl.device+":"+cl.instance, func(ev *zerolog.Event) {
			ev.Str("sku", c.clean(cl.sku)).Str("device", c.clean(cl.device)).Str("instance", c.clean(cl.instance)).
				Str("error", c.clean(err.Error())).Msg("cloud: the control answer's capability cannot be read; trusting its code")
		})
		return res, nil
	}
	res.Capability = echo
	if echo.State == nil || !strings.EqualFold(strings.TrimSpace(echo.State.Status), "failure") {
		return res, nil
	}
	msg := c.clean(echo.State.ErrorMsg)
	if msg == "" {
		msg = "the device reported a failure"
	}
	kind, code := ErrTransient, 0
	switch v := echo.State.ErrorCode.(type) {
	case int64:
		if v > math.MinInt32 && v < math.MaxInt32 {
			code = int(v)
		}
	case string:
		if i, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			code = i
		} else if v != "" {
			msg += " [" + c.clean(v) + "]"
		}
	case nil:
	default:
		msg += " [" + c.clean(fmt.Sprint(v)) + "]"
	}
	if code >= 400 {
		kind = kindForStatus(code)
	}
	e := cl.fail(kind, msg, nil)
	e.HTTPStatus, e.Code = a.status, code
	return ControlResult{}, e
}

// decodeEcho reads the capability echoed by a control answer, tolerating
// members of unexpected JSON types.
func decodeEcho(raw json.RawMessage) (*ControlEcho, error) {
	var m struct {
		Type     json.RawMessage `json:"type"`
		Instance json.RawMessage `json:"instance"`
		Value    json.RawMessage `json:"value"`
		State    json.RawMessage `json:"state"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	echo := &ControlEcho{Type: capability.NormalizeType(rawText(m.Type)), Instance: rawText(m.Instance)}
	if !isNull(m.Value) {
		v, err := capability.Normalize(m.Value)
		if err != nil {
			return nil, err
		}
		echo.Value = v
	}
	if isNull(m.State) {
		return echo, nil
	}
	var st struct {
		Status    json.RawMessage `json:"status"`
		ErrorCode json.RawMessage `json:"errorCode"`
		ErrorMsg  json.RawMessage `json:"errorMsg"`
	}
	if err := json.Unmarshal(m.State, &st); err != nil {
		// A bare string state ("failure") is read as the status.
		echo.State = &ControlState{Status: rawText(m.State)}
		return echo, nil
	}
	echo.State = &ControlState{Status: rawText(st.Status), ErrorMsg: rawText(st.ErrorMsg)}
	if !isNull(st.ErrorCode) {
		v, err := capability.Normalize(st.ErrorCode)
		if err != nil {
			return nil, err
		}
		echo.State.ErrorCode = v
	}
	return echo, nil
}

// clean makes a string from an answer safe for an error or a log line: the
// API key redacted, control characters replaced, the length bounded.
func (c *Client) clean(s string) string {
	if c.key != "" && strings.Contains(s, c.key) {
		s = strings.ReplaceAll(s, c.key, "[redacted]")
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)
	if len(s) > maxMsgLen {
		cut := maxMsgLen
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// excerpt quotes the start of an unreadable answer for an error message.
func (c *Client) excerpt(body []byte) string {
	const n = 80
	if len(body) > n+len(c.key) {
		body = body[:n+len(c.key)] // enough to redact a key that straddles the cut
	}
	s := c.clean(string(body))
	if len(s) > n {
		s = s[:n]
	}
	return strconv.Quote(s)
}
