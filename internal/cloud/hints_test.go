package cloud

// Hints: what each failure tells the user to check.

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// listAt reads the device list from base with a plain client.
func listAt(t *testing.T, base string, transport http.RoundTripper) error {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: transport}
	c, err := New(Config{BaseURL: base, APIKey: testKey, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListDevices(context.Background())
	if err == nil {
		t.Fatal("the device list was read")
	}
	return err
}

func TestHintsNameTheSetting(t *testing.T) {
	plain := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plain.Close)
	html := httptest.NewServer(answerWith(200, "<html>a web page</html>"))
	t.Cleanup(html.Close)
	secure := httptest.NewTLSServer(answerWith(200, `{"code":200,"data":[]}`))
	t.Cleanup(secure.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	fail := func(err error) http.RoundTripper {
		return roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, err })
	}

	for _, tc := range []struct {
		name      string
		base      string
		transport http.RoundTripper
		want      string
	}{
		{"base URL with the API path", plain.URL + "/router/api/v1", nil, "the service has no device list at this address: set CLOUD_BASE_URL to the API's scheme and host only"},
		{"a web page", html.URL, nil, "this is not the cloud API's answer: set CLOUD_BASE_URL"},
		{"refused", refused, nil, "nothing answers at the host and port of CLOUD_BASE_URL"},
		{"https to a plain server", strings.Replace(plain.URL, "http://", "https://", 1), nil, "set CLOUD_BASE_URL=http://"},
		{"http to a TLS server", strings.Replace(secure.URL, "https://", "http://", 1), nil, "set CLOUD_BASE_URL=https://"},
		{"untrusted certificate", secure.URL, nil, "the certificate of the host in CLOUD_BASE_URL is not trusted"},
		{"unknown host", "https://cloud.example", fail(&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "cloud.example", IsNotFound: true}}),
			"the host name in CLOUD_BASE_URL does not exist"},
		{"DNS down", "https://cloud.example", fail(&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "server misbehaving", Name: "cloud.example", IsTemporary: true}}),
			"cannot be looked up: check this machine's DNS"},
		{"timeout", "https://cloud.example", fail(&net.OpError{Op: "dial", Net: "tcp", Err: timeoutError{}}), "no answer in time: check CLOUD_BASE_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			transport := tc.transport
			if transport == nil {
				transport = http.DefaultTransport
			}
			err := listAt(t, tc.base, transport)
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(Hint(err), tc.want) {
				t.Errorf("got %q (hint %q), want it to say %q", err, Hint(err), tc.want)
			}
			if strings.Contains(err.Error(), "CLOUD_API_KEY") {
				t.Errorf("%q blames the key", err)
			}
			if strings.Count(err.Error(), "cloud: ") != 1 {
				t.Errorf("%q repeats its prefix", err)
			}
		})
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// A server that takes the connection and never answers: the client's own
// timeout (CLOUD_TIMEOUT) names the address and the setting.
func TestHintForNoAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(hang))
	t.Cleanup(srv.Close)
	c, err := New(Config{BaseURL: srv.URL, APIKey: testKey, HTTPClient: &http.Client{Timeout: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListDevices(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no answer in time: check CLOUD_BASE_URL") || !strings.Contains(err.Error(), "CLOUD_TIMEOUT") {
		t.Errorf("got %v", err)
	}
}

// A device's own "not found" still points at the device, and the key's
// refusal at the key; a server error needs no hint.
func TestHintsByKind(t *testing.T) {
	for _, tc := range []struct {
		err  *APIError
		want string
	}{
		{&APIError{Kind: ErrNotFound, Endpoint: EndpointState, HTTPStatus: 200, Code: 404, Msg: "devices not exist"}, "check that the device is still in the account"},
		{&APIError{Kind: ErrNotFound, Endpoint: EndpointDevices, HTTPStatus: 404, Msg: "not found"}, "CLOUD_BASE_URL"},
		{&APIError{Kind: ErrAuth, Endpoint: EndpointDevices, HTTPStatus: 401}, "check CLOUD_API_KEY"},
		{&APIError{Kind: ErrRateLimited, Endpoint: EndpointState, HTTPStatus: 429, RetryAfter: 30 * time.Second}, "retry after 30s"},
		{&APIError{Kind: ErrTransient, Endpoint: EndpointDevices, HTTPStatus: 500}, ""},
		{&APIError{Kind: ErrRequest, Endpoint: EndpointControl, HTTPStatus: 200, Code: 400, Msg: "parameter value out of range"}, ""},
	} {
		if got := Hint(tc.err); (tc.want == "" && got != "") || !strings.Contains(got, tc.want) {
			t.Errorf("%v: hint %q, want %q", tc.err, got, tc.want)
		}
	}
	if Hint(errors.New("other")) != "" || Hint(nil) != "" {
		t.Error("a hint for an error that is not the cloud's")
	}
}

// Hint says in words what to do about a failed cloud request, naming the
// setting to check (CLOUD_BASE_URL, CLOUD_API_KEY, ...). It is "" for errors
// that are not the cloud's, and for failures where waiting is all there is
// to do (a server error).
func Hint(err error) string {
	var ae *APIError
	if !errors.As(err, &ae) {
		return ""
	}
	return ae.hint()
}

// TestKeyHint: a refused key's hint names where the key came from, and
// CLOUD_API_KEY_HEADER with its value (bounded) when the key goes in
// another header than the cloud's own.
func TestKeyHint(t *testing.T) {
	long := "X-" + strings.Repeat("k", 100)
	for _, tc := range []struct{ source, header, want string }{
		{"", "", "check CLOUD_API_KEY"},
		{"CLOUD_API_KEY", DefaultKeyHeader, "check CLOUD_API_KEY"},
		{"CLOUD_API_KEY", "SERVICE-API-KEY", "check CLOUD_API_KEY"},
		{"CLOUD_API_KEY_FILE", "", "check the API key read from CLOUD_API_KEY_FILE"},
		{"systemd credential cloud_api_key", "", "check the API key read from systemd credential cloud_api_key"},
		{"CLOUD_API_KEY", "Authorization",
			"check CLOUD_API_KEY and CLOUD_API_KEY_HEADER (the key is sent in Authorization; the cloud's own header is Service-API-Key)"},
		{"CLOUD_API_KEY_FILE", long,
			"check the API key read from CLOUD_API_KEY_FILE and CLOUD_API_KEY_HEADER (the key is sent in " + long[:64] + "…; the cloud's own header is Service-API-Key)"},
	} {
		if got := KeyHint(tc.source, tc.header); got != tc.want {
			t.Errorf("KeyHint(%q, %q) = %q, want %q", tc.source, tc.header, got, tc.want)
		}
	}
}
