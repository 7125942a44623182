package cloud

// A CLOUD_BASE_URL whose scheme does not match the server: https:// to a
// plain HTTP port, or http:// to a port that speaks only TLS. Retrying
// cannot help, and the raw failure ("first record does not look like a TLS
// handshake", a 400 from a TLS server) does not say what to change.

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// IsSchemeMismatch reports whether the request failed because the scheme
// of CLOUD_BASE_URL does not match what the server speaks: the error's
// message says which scheme to use.
func IsSchemeMismatch(err error) bool {
	k, _ := kindOf(err)
	return k == ErrScheme
}

// tlsOnlyPhrases are how TLS servers answer a plain HTTP request with a
// plain 400 (Go, nginx, Apache), lowercased.
var tlsOnlyPhrases = []string{
	"http request to an https server",
	"plain http request was sent to https port",
	"speaking plain http to an ssl-enabled server",
}

// schemeOfTransport tells a failed https:// request to a plain HTTP server
// (Go's TLS client reads "HTTP/" where the server's handshake should be)
// and a failed http:// request to a server that answered with a TLS record
// (an alert or a handshake, which net/http reports as a malformed
// response). nil when err is neither.
func (c *Client) schemeOfTransport(cl call, err error) *APIError {
	var record tls.RecordHeaderError
	switch {
	case c.tls() && (errors.Is(err, http.ErrSchemeMismatch) ||
		errors.As(err, &record) && string(record.RecordHeader[:]) == "HTTP/"):
		return c.schemeError(cl, "the server at CLOUD_BASE_URL answers plain HTTP, not HTTPS", err)
	case !c.tls() && (strings.Contains(err.Error(), `malformed HTTP response "\x15\x03`) ||
		strings.Contains(err.Error(), `malformed HTTP response "\x16\x03`)):
		return c.schemeError(cl, "the server at CLOUD_BASE_URL answers with TLS (HTTPS), not plain HTTP", err)
	}
	return nil
}

// schemeOfAnswer tells a plain HTTP request answered by a TLS server's
// 400 ("Client sent an HTTP request to an HTTPS server."). nil when the
// answer is not that.
func (c *Client) schemeOfAnswer(cl call, status int, body []byte) *APIError {
	if c.tls() || status != http.StatusBadRequest {
		return nil
	}
	lower := bytes.ToLower(body)
	for _, p := range tlsOnlyPhrases {
		if bytes.Contains(lower, []byte(p)) {
			return c.schemeError(cl, "the server at CLOUD_BASE_URL speaks only HTTPS on that port: it refused the plain HTTP request", nil)
		}
	}
	return nil
}

// schemeError is the permanent error of a mismatch. Its HTTPStatus is 0:
// whatever answered is not the cloud API, and the request counts against
// no budget (Reached).
func (c *Client) schemeError(cl call, msg string, err error) *APIError {
	e := cl.fail(ErrScheme, msg, err)
	e.fix = "set CLOUD_BASE_URL=" + c.otherScheme()
	return e
}

func (c *Client) tls() bool { return strings.HasPrefix(c.base, "https://") }

// otherScheme is the base URL with the other scheme and the port it was
// reached on: https://host (443) answering plain HTTP becomes
// http://host:443, not http://host (80).
func (c *Client) otherScheme() string {
	u, err := url.Parse(c.base)
	if err != nil {
		return c.base // parseBaseURL built it: not reached
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	if u.Scheme == "https" {
		u.Scheme = "http"
	} else {
		u.Scheme = "https"
	}
	u.Host = net.JoinHostPort(u.Hostname(), port)
	return u.String()
}
