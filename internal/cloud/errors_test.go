package cloud

// Failures: every error the cloud or the network can give, and the key never shown.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestErrors is the table of failures: each row's server answers one way and
// the client must sort the failure into the right kind with a useful message.
func TestErrors(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		op      op
		handler http.HandlerFunc
		mod     func(*Config)
		timeout time.Duration // a context deadline for the call

		kind       ErrorKind
		status     int
		code       int
		retryAfter time.Duration
		text       string // exact Error() when it starts with "cloud: ", else a substring
		is         error  // errors.Is must hold
	}{
		{name: "401 empty body", op: opDevices, handler: answerWith(401, ""),
			kind: ErrAuth, status: 401, text: "cloud: devices: unauthorized (HTTP 401); check CLOUD_API_KEY"},
		{name: "401 with message", op: opState, handler: answerWith(401, `{"code":401,"message":"Unauthorized"}`),
			kind: ErrAuth, status: 401, code: 401, text: "cloud: state H6072/AA:BB:CC:DD:EE:FF:00:11: Unauthorized (code 401); check CLOUD_API_KEY"},
		{name: "200 with code 401", op: opDevices, handler: answerWith(200, `{"code":401,"message":"invalid key"}`),
			kind: ErrAuth, status: 200, code: 401, text: "check CLOUD_API_KEY"},
		// A refused key names where it came from, and the header when it
		// is not the cloud's own, so that the user knows what to fix.
		{name: "401 of a key file", op: opState, handler: answerWith(401, `{"code":401,"message":"Unauthorized"}`),
			mod:  func(cfg *Config) { cfg.KeySource = "CLOUD_API_KEY_FILE" },
			kind: ErrAuth, status: 401, code: 401,
			text: "cloud: state H6072/AA:BB:CC:DD:EE:FF:00:11: Unauthorized (code 401); check the API key read from CLOUD_API_KEY_FILE"},
		{name: "401 of a credential in another header", op: opDevices, handler: answerWith(401, ""),
			mod:  func(cfg *Config) { cfg.KeySource, cfg.KeyHeader = "systemd credential cloud_api_key", "X-Api-Key" },
			kind: ErrAuth, status: 401,
			text: "cloud: devices: unauthorized (HTTP 401); check the API key read from systemd credential cloud_api_key and CLOUD_API_KEY_HEADER (the key is sent in X-Api-Key; the cloud's own header is Service-API-Key)"},
		{name: "401 of the variable in the cloud's header spelt otherwise", op: opDevices, handler: answerWith(200, `{"code":401,"message":"invalid key"}`),
			mod:  func(cfg *Config) { cfg.KeySource, cfg.KeyHeader = "CLOUD_API_KEY", "service-api-key" },
			kind: ErrAuth, status: 200, code: 401, text: "cloud: devices: invalid key (code 401); check CLOUD_API_KEY"},
		{name: "control failure 401 of a key file", op: opControl,
			handler: answerWith(200, `{"code":200,"capability":{"instance":"brightness","state":{"status":"failure","errorCode":401,"errorMsg":"unauthorized"}}}`),
			mod:     func(cfg *Config) { cfg.KeySource = "CLOUD_API_KEY_FILE" },
			kind:    ErrAuth, status: 200, code: 401,
			text: "cloud: control H6072/AA:BB:CC:DD:EE:FF:00:11: brightness: unauthorized (code 401); check the API key read from CLOUD_API_KEY_FILE"},
		{name: "429 empty body", op: opControl, handler: answerWith(429, ""),
			kind: ErrRateLimited, status: 429, text: "too many requests (HTTP 429); slow down"},
		{name: "429 retry-after seconds", op: opDevices, handler: answerWith(429, "", "Retry-After", "30"),
			kind: ErrRateLimited, status: 429, retryAfter: 30 * time.Second, text: "; retry after 30s"},
		{name: "429 retry-after date", op: opState,
			handler: answerWith(429, `{"code":429,"msg":"Too many requests"}`, "Retry-After", now.Add(90*time.Second).Format(http.TimeFormat)),
			kind:    ErrRateLimited, status: 429, code: 429, retryAfter: 90 * time.Second, text: "Too many requests (code 429); retry after 1m30s"},
		{name: "429 retry-after garbage", op: opState, handler: answerWith(429, "", "Retry-After", "soon"),
			kind: ErrRateLimited, status: 429},
		{name: "200 with code 429", op: opControl, handler: answerWith(200, `{"code":429,"msg":"rate limit"}`, "Retry-After", "2"),
			kind: ErrRateLimited, status: 200, code: 429, retryAfter: 2 * time.Second},
		{name: "devices not belong you", op: opControl, handler: answerWith(200, `{"requestId":"x","code":400,"msg":"devices not belong you"}`),
			kind: ErrRequest, status: 200, code: 400,
			text: "cloud: control H6072/AA:BB:CC:DD:EE:FF:00:11: brightness: devices not belong you (code 400)"},
		{name: "devices not exist", op: opState, handler: answerWith(200, `{"requestId":"x","code":400,"msg":"devices not exist"}`),
			kind: ErrRequest, status: 200, code: 400, text: "cloud: state H6072/AA:BB:CC:DD:EE:FF:00:11: devices not exist (code 400)"},
		{name: "devices not support this instance", op: opControl, handler: answerWith(200, `{"requestId":"x","code":400,"msg":"devices not support this instance"}`),
			kind: ErrRequest, status: 200, code: 400, text: "brightness: devices not support this instance (code 400)"},
		{name: "200 with code 404", op: opScenes, handler: answerWith(200, `{"code":404,"msg":"devices not exist"}`),
			kind: ErrNotFound, status: 200, code: 404, text: "devices not exist (code 404); check that the device is still in the account"},
		{name: "400 out of range", op: opControl, handler: answerWith(400, `{"code":400,"msg":"parameter value out of range"}`),
			kind: ErrRequest, status: 400, code: 400,
			text: "cloud: control H6072/AA:BB:CC:DD:EE:FF:00:11: brightness: parameter value out of range (code 400)"},
		{name: "404 empty body", op: opDIY, handler: answerWith(404, ""),
			kind: ErrNotFound, status: 404, text: "cloud: diy-scenes H6072/AA:BB:CC:DD:EE:FF:00:11: not found (HTTP 404); check that the device is still in the account and has this capability"},
		{name: "500", op: opDevices, handler: answerWith(500, `{"code":500,"message":"internal error"}`),
			kind: ErrTransient, status: 500, code: 500, text: "cloud: devices: internal error (code 500)"},
		{name: "502 html", op: opState, handler: answerWith(502, "<html><body>Bad Gateway</body></html>"),
			kind: ErrTransient, status: 502, text: "bad gateway (HTTP 502)"},
		{name: "503 retry-after", op: opControl, handler: answerWith(503, "", "Retry-After", "5"),
			kind: ErrTransient, status: 503, retryAfter: 5 * time.Second, text: "service unavailable (HTTP 503)"},
		{name: "200 non-JSON", op: opDevices, handler: answerWith(200, "<html>maintenance</html>"),
			kind: ErrTransient, status: 200, text: `the answer is not JSON: "<html>maintenance</html>"`},
		{name: "200 truncated JSON", op: opDevices, handler: answerWith(200, `{"code":200,"message":"success","data":[{"sku":"H6`),
			kind: ErrTransient, status: 200, text: "the answer is not JSON"},
		{name: "200 empty", op: opScenes, handler: answerWith(200, ""),
			kind: ErrTransient, status: 200, text: "the answer is empty"},
		{name: "200 JSON null", op: opState, handler: answerWith(200, "null"),
			kind: ErrTransient, status: 200, text: "not JSON"},
		{name: "200 without code", op: opDevices, handler: answerWith(200, `{"data":[]}`),
			kind: ErrTransient, status: 200, text: "the answer has no code"},
		{name: "200 with a word for code", op: opDevices, handler: answerWith(200, `{"code":"ok","data":[]}`),
			kind: ErrTransient, status: 200, text: "is not a number"},
		{name: "code 400 with null data", op: opDevices, handler: answerWith(200, `{"code":400,"message":"bad","data":null}`),
			kind: ErrRequest, status: 200, code: 400},
		{name: "data not a list", op: opDevices, handler: answerWith(200, `{"code":200,"data":{"sku":"H1"}}`),
			kind: ErrTransient, status: 200, code: 200, text: "data is not a list"},
		{name: "state without payload", op: opState, handler: answerWith(200, `{"code":200,"msg":"success"}`),
			kind: ErrTransient, status: 200, code: 200, text: "the state answer has no payload"},
		{name: "state of another device", op: opState,
			handler: answerWith(200, `{"code":200,"msg":"success","payload":{"sku":"H6072","device":"11:22:33:44:55:66:77:88","capabilities":[]}}`),
			kind:    ErrTransient, status: 200, code: 200, text: "the answer is about H6072/11:22:33:44:55:66:77:88, not the device asked for"},
		{name: "scenes of another device", op: opScenes,
			handler: answerWith(200, `{"code":200,"msg":"success","payload":{"sku":"H6199","device":"AA:BB:CC:DD:EE:FF:00:11"}}`),
			kind:    ErrTransient, status: 200, code: 200, text: "not the device asked for"},
		{name: "control failure status", op: opControl,
			handler: answerWith(200, `{"requestId":"x","msg":"success","code":200,"capability":{"type":"devices.capabilities.range","instance":"brightness","value":500,"state":{"status":"failure","errorCode":400,"errorMsg":"parameter value out of range"}}}`),
			kind:    ErrRequest, status: 200, code: 400,
			text: "cloud: control H6072/AA:BB:CC:DD:EE:FF:00:11: brightness: parameter value out of range (code 400)"},
		{name: "control failure without code", op: opControl,
			handler: answerWith(200, `{"code":200,"capability":{"instance":"brightness","state":{"status":"Failure","errorMsg":"device offline"}}}`),
			kind:    ErrTransient, status: 200, text: "cloud: control H6072/AA:BB:CC:DD:EE:FF:00:11: brightness: device offline"},
		{name: "control failure with a word for code", op: opControl,
			handler: answerWith(200, `{"code":200,"capability":{"state":{"status":"failure","errorCode":"TIMEOUT"}}}`),
			kind:    ErrTransient, status: 200, text: "brightness: the device reported a failure [TIMEOUT]"},
		{name: "redirect", op: opDevices, handler: answerWith(302, "", "Location", "http://127.0.0.1:9/elsewhere"),
			kind: ErrRequest, status: 302, text: `the service redirects to "http://127.0.0.1:9/elsewhere": set CLOUD_BASE_URL`},
		{name: "answer too large", op: opDevices, handler: func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write(bytes.Repeat([]byte(" "), MaxResponseBytes+1))
		}, kind: ErrTransient, status: 200, text: "the answer is larger than 8388608 bytes and was not read"},
		{name: "body cut off", op: opDevices, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "500")
			_, _ = io.WriteString(w, `{"code":200,"data":[`)
		}, kind: ErrTransient, status: 200, text: "the answer was cut off", is: io.ErrUnexpectedEOF},
		{name: "connection reset", op: opControl, handler: reset, kind: ErrTransient, text: "the request failed"},
		{name: "hang until the context deadline", op: opState, timeout: 100 * time.Millisecond,
			handler: hang,
			kind:    ErrTransient, text: "no answer before the deadline", is: context.DeadlineExceeded},
		{name: "hang until the client timeout", op: opDevices,
			handler: hang,
			mod:     func(cfg *Config) { cfg.HTTPClient.Timeout = 100 * time.Millisecond },
			kind:    ErrTransient, text: "no answer in time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mods := []func(*Config){}
			if tt.mod != nil {
				mods = append(mods, tt.mod)
			}
			c, _ := newTestClient(t, tt.handler, mods...)
			c.now = func() time.Time { return now }
			ctx := t.Context()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			err := tt.op.call(ctx, c)
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("error %v (%T), want an *APIError", err, err)
			}
			if ae.Kind != tt.kind || ae.HTTPStatus != tt.status || ae.Code != tt.code || ae.RetryAfter != tt.retryAfter || ae.Endpoint != tt.op.name {
				t.Errorf("got kind %v, HTTP %d, code %d, retry after %v, endpoint %q\nwant kind %v, HTTP %d, code %d, retry after %v, endpoint %q",
					ae.Kind, ae.HTTPStatus, ae.Code, ae.RetryAfter, ae.Endpoint, tt.kind, tt.status, tt.code, tt.retryAfter, tt.op.name)
			}
			msg := err.Error()
			if strings.HasPrefix(tt.text, "cloud: ") && msg != tt.text || !strings.Contains(msg, tt.text) {
				t.Errorf("error text\n%s\nwant\n%s", msg, tt.text)
			}
			if strings.Contains(msg, "%!") {
				t.Errorf("error text with a formatting artefact: %s", msg)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) is false", err, tt.is)
			}
			ra, limited := IsRateLimited(err)
			if IsAuth(err) != (tt.kind == ErrAuth) || limited != (tt.kind == ErrRateLimited) || ra != tt.retryAfter && limited ||
				isTransient(err) != (tt.kind == ErrTransient) || IsRejected(err) != (tt.kind == ErrRequest || tt.kind == ErrNotFound) {
				t.Errorf("helpers disagree with kind %v: auth %v, limited %v %v, transient %v, rejected %v",
					tt.kind, IsAuth(err), limited, ra, isTransient(err), IsRejected(err))
			}
			if strings.Contains(msg, testKey) {
				t.Errorf("the error shows the key: %s", msg)
			}
		})
	}
}

func TestRedirectDoesNotCarryKey(t *testing.T) {
	var leaked bool
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked = leaked || r.Header.Get("Service-API-Key") != ""
		_, _ = io.WriteString(w, `{"code":200,"data":[]}`)
	}))
	defer target.Close()
	c, _ := newTestClient(t, answerWith(http.StatusTemporaryRedirect, "", "Location", target.URL+"/router/api/v1/user/devices"))
	if _, err := c.ListDevices(t.Context()); !IsRejected(err) || leaked {
		t.Errorf("error %v, key sent to the redirect target: %v", err, leaked)
	}
}

func TestCancelledContextIsNotTransient(t *testing.T) {
	started := make(chan struct{})
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		hang(w, r)
	})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	_, err := c.State(ctx, tSKU, tDevice)
	var ae *APIError
	if !errors.Is(err, context.Canceled) || errors.As(err, &ae) || isTransient(err) {
		t.Fatalf("error %v, want the context's cancellation, not an API error", err)
	}
	if want := "cloud: state H6072/AA:BB:CC:DD:EE:FF:00:11: context canceled"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// TestKeyNeverLeaks runs a server that repeats the key wherever an answer
// can carry text into an error or a log line.
func TestKeyNeverLeaks(t *testing.T) {
	bodies := []struct {
		status int
		body   string
	}{
		{401, `{"code":401,"message":"key ` + testKey + ` is not valid"}`},
		{200, `{"code":400,"msg":"devices not belong you (` + testKey + `)"}`},
		{200, `{"code":"` + testKey + `"}`},
		{502, "<html>" + strings.Repeat("x", 70) + testKey + "</html>"},
		{200, "<html>" + strings.Repeat("x", 70) + testKey + "</html>"},
		{200, `{"code":200,"message":"ok","data":[{"sku":"H1","device":"D1","type":"` + testKey + `","capabilities":[{"type":"` + testKey + `","instance":"` + testKey + `"}]},{"sku":"` + testKey + `"}]}`},
		{200, `{"code":200,"payload":{"sku":"` + testKey + `","device":"x"}}`},
		{200, `{"code":200,"capability":{"state":{"status":"failure","errorCode":"` + testKey + `","errorMsg":"` + testKey + `"}}}`},
		{302, ""},
	}
	for i, b := range bodies {
		c, logs := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", "https://evil.example/"+testKey)
			w.WriteHeader(b.status)
			_, _ = io.WriteString(w, b.body)
		})
		for _, o := range allOps {
			if err := o.call(t.Context(), c); err != nil && strings.Contains(err.Error(), testKey) {
				t.Errorf("answer %d, %s: the error shows the key: %v", i, o.name, err)
			}
		}
		if strings.Contains(logs.String(), testKey) || (i == 5 && !strings.Contains(logs.String(), "[redacted]")) {
			t.Errorf("answer %d: log\n%s", i, logs)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-5", 0},
		{" 30 ", 30 * time.Second},
		{"1.2", 2 * time.Second},
		{"NaN", 0},
		{"Inf", 0},
		{"soon", 0},
		{"99999999999999999999", time.Hour},
		{now.Add(45 * time.Second).Format(http.TimeFormat), 45 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), time.Hour},
		{"Sunday, 22-Nov-26 10:00:20 GMT", 20 * time.Second}, // RFC 850, also allowed
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestErrorKindAndHelpers(t *testing.T) {
	names := map[ErrorKind]string{ErrAuth: "auth", ErrRateLimited: "rate limited", ErrRequest: "request",
		ErrNotFound: "not found", ErrTransient: "transient", 0: "unknown(0)"}
	for k, want := range names {
		if k.String() != want {
			t.Errorf("ErrorKind(%d).String() = %q, want %q", int(k), k.String(), want)
		}
	}
	wrapped := fmt.Errorf("poller: %w", &APIError{Kind: ErrRateLimited, Endpoint: "state", RetryAfter: time.Second})
	if ra, ok := IsRateLimited(wrapped); !ok || ra != time.Second {
		t.Errorf("IsRateLimited through a wrap: %v, %v", ra, ok)
	}
	for _, err := range []error{nil, errors.New("plain"), &APIError{}} {
		if _, ok := IsRateLimited(err); ok || IsAuth(err) || isTransient(err) || IsRejected(err) {
			t.Errorf("%v is classified", err)
		}
	}
	e := &APIError{Kind: ErrTransient, Endpoint: "devices", HTTPStatus: 502, Code: 500, Msg: "upstream", Err: io.ErrUnexpectedEOF}
	if got, want := e.Error(), "cloud: devices: upstream (HTTP 502, code 500): unexpected EOF"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, io.ErrUnexpectedEOF) {
		t.Error("Unwrap does not reach the cause")
	}
}

// isTransient reports whether err is a transient failure (ErrTransient):
// server errors, timeouts, resets and unreadable answers; a cancelled
// context is not one.
func isTransient(err error) bool {
	k, _ := kindOf(err)
	return k == ErrTransient
}
