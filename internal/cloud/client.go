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
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

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

// The endpoints' names (APIError.Endpoint, the scheduler's and the
// simulator's counts, metrics) and paths, for every package that names them.
const (
	EndpointDevices   = "devices"
	EndpointState     = "state"
	EndpointScenes    = "scenes"
	EndpointDIYScenes = "diy-scenes"
	EndpointControl   = "control"

	PathDevices   = "/router/api/v1/user/devices"
	PathState     = "/router/api/v1/device/state"
	PathScenes    = "/router/api/v1/device/scenes"
	PathDIYScenes = "/router/api/v1/device/diy-scenes"
	PathControl   = "/router/api/v1/device/control"
)

var (
	epDevices   = endpoint{EndpointDevices, http.MethodGet, PathDevices}
	epState     = endpoint{EndpointState, http.MethodPost, PathState}
	epScenes    = endpoint{EndpointScenes, http.MethodPost, PathScenes}
	epDIYScenes = endpoint{EndpointDIYScenes, http.MethodPost, PathDIYScenes}
	epControl   = endpoint{EndpointControl, http.MethodPost, PathControl}
)

// EndpointOf names the endpoint a request path (with any base path before
// it) is for, "" for none.
func EndpointOf(path string) string {
	for _, ep := range []endpoint{epDevices, epState, epScenes, epDIYScenes, epControl} {
		if strings.HasSuffix(path, ep.path) {
			return ep.name
		}
	}
	return ""
}

// Config is what New needs. Only BaseURL and APIKey are required.
type Config struct {
	BaseURL    string       // CLOUD_BASE_URL, e.g. https://host (paths /router/api/v1/... appended)
	APIKey     string       // CLOUD_API_KEY; sent in KeyHeader, never logged
	KeyHeader  string       // default "Service-API-Key"
	HTTPClient *http.Client // its Transport and Timeout (default: DefaultTimeout per request); redirects are never followed
	// KeySource is where APIKey came from, as the configuration says it:
	// "CLOUD_API_KEY", "CLOUD_API_KEY_FILE" or "systemd credential
	// cloud_api_key" ("": CLOUD_API_KEY). A refused key's error names it,
	// and CLOUD_API_KEY_HEADER when KeyHeader is not the cloud's own, so
	// that the user checks what was sent.
	KeySource string
	// OnRequest, when set, is told of every request sent, by endpoint name
	// (EndpointState, ...), with its answer's HTTP status (0 when none
	// came), from the requesting goroutine; it must not block.
	OnRequest func(endpoint string, status int)
	Logger    zerolog.Logger // warnings about odd answers, debug lines per request
	// OnLimits, when set, is called with what an answer's rate-limit
	// headers said (the account's quota, a shorter window), for every
	// answer that carried any, success or not, before the request's method
	// returns: whoever plans the requests learns what is left from it. It
	// is called from the requesting goroutine and must not block.
	OnLimits func(RateLimits)
	// Now is the clock that turns a Retry-After or a rate-limit reset given
	// in seconds from now into an instant (nil: time.Now); the daemon
	// passes its injected clock, whose instants the scheduler compares them
	// with.
	Now func() time.Time
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
	keyHint string      // what a refused key's error says to check (keyHint)
	headers http.Header // every request's, shared read-only: built once, not per request
	// The reads' headers: an empty Idempotency-Key (never sent) lets net/http
	// ask again on a new connection when the cloud closed a kept one.
	replay http.Header
	// The configured client's transport and timeout, used directly: Do would
	// copy the headers for redirects (which are never followed) and arm a
	// second timer for every request.
	transport http.RoundTripper
	onRequest func(endpoint string, status int)
	timeout   time.Duration
	log       zerolog.Logger
	now       func() time.Time
	maxBody   int64
	onLimits  func(RateLimits)

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
		return nil, errors.New("cloud: the API key has spaces at its ends or control characters (a newline from a key file?): check " + keySetting(cfg.KeySource))
	}
	header := cfg.KeyHeader
	if header == "" {
		header = DefaultKeyHeader
	}
	if !validHeaderName(header) {
		return nil, fmt.Errorf("cloud: the key header name %q is not a valid HTTP header name: use letters, digits and '-', e.g. %s", header, DefaultKeyHeader)
	}
	transport, timeout := http.DefaultTransport, DefaultTimeout
	if hc := cfg.HTTPClient; hc != nil {
		timeout = hc.Timeout
		if hc.Transport != nil {
			transport = hc.Transport
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	headers := http.Header{http.CanonicalHeaderKey(header): {cfg.APIKey}, "Content-Type": {"application/json"}, "Accept": {"application/json"}}
	replay := headers.Clone()
	replay["Idempotency-Key"] = nil
	return &Client{
		base:      base,
		key:       cfg.APIKey,
		header:    header,
		keyHint:   KeyHint(cfg.KeySource, header),
		headers:   headers,
		replay:    replay,
		transport: transport,
		onRequest: cfg.OnRequest,
		timeout:   timeout,
		log:       cfg.Logger.With().Str("component", "cloud").Logger(),
		now:       cfg.Now,
		maxBody:   MaxResponseBytes,
		onLimits:  cfg.OnLimits,
		seen:      make(map[string]struct{}),
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
	cl := c.call(epDevices, "", "", "")
	a, err := c.exchange(ctx, cl, nil)
	if err != nil {
		return nil, err
	}
	return c.readDevices(cl, a)
}

// State reads the current state of one device.
func (c *Client) State(ctx context.Context, sku, device string) (DeviceState, error) {
	cl := c.call(epState, sku, device, "")
	if err := cl.needDevice(); err != nil {
		return DeviceState{}, err
	}
	a, err := c.exchange(ctx, cl, devicePayload{SKU: sku, Device: device})
	if err != nil {
		return DeviceState{}, err
	}
	defer a.release() // the decoded state keeps none of the body's bytes
	return c.readState(cl, a)
}

// Scenes lists a device's dynamic light scenes (too many to be in the device list).
func (c *Client) Scenes(ctx context.Context, sku, device string) (Scenes, error) {
	return c.scenes(ctx, c.call(epScenes, sku, device, ""))
}

// DIYScenes lists a device's DIY scenes.
func (c *Client) DIYScenes(ctx context.Context, sku, device string) (Scenes, error) {
	return c.scenes(ctx, c.call(epDIYScenes, sku, device, ""))
}

// call is one request of the client's, for its errors and logs.
func (c *Client) call(ep endpoint, sku, device, instance string) call {
	return call{ep: ep, sku: sku, device: device, instance: instance, keyHint: c.keyHint}
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
	cl := c.call(epControl, req.SKU, req.Device, req.Instance)
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
