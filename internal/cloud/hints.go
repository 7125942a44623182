package cloud

// What a failure means for the user: the setting to check and what to do.
// Every APIError ends with its hint (APIError.Error).

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"
)

// Hints, one place each so every message says the same.
const (
	keyVar           = "CLOUD_API_KEY"
	hintKey          = "check " + keyVar
	maxHeaderShown   = 64 // of CLOUD_API_KEY_HEADER's value in a hint
	hintBaseURLShape = "set CLOUD_BASE_URL to the API's scheme and host only, like https://host (the bridge appends /router/api/v1/...)"
)

func (e *APIError) hint() string {
	switch e.Kind {
	case ErrAuth:
		if e.keyHint != "" {
			return e.keyHint
		}
		return hintKey
	case ErrScheme:
		return e.fix
	case ErrRateLimited:
		if w, spent := e.Limits.Spent(); spent {
			s := "the account's request quota is spent"
			if w.Limit > 0 {
				s = fmt.Sprintf("the account's request quota of %d is spent", w.Limit)
			}
			if !w.Reset.IsZero() {
				s += "; it renews at " + w.Reset.UTC().Format(time.RFC3339)
			}
			return s
		}
		if e.RetryAfter > 0 {
			return fmt.Sprintf("retry after %s", e.RetryAfter)
		}
		return "slow down and retry later"
	case ErrNotFound, ErrRequest:
		// The device list is a GET without parameters: only the wrong
		// address can make it "not found" or a bad request.
		if e.Endpoint == EndpointDevices && e.HTTPStatus != 0 {
			return "the service has no device list at this address: " + hintBaseURLShape
		}
		if e.Kind == ErrNotFound {
			return "check that the device is still in the account and has this capability"
		}
	case ErrTransient:
		if e.HTTPStatus == 0 {
			return networkHint(e.Err)
		}
		var syntax *json.SyntaxError
		if e.Endpoint == EndpointDevices && e.HTTPStatus >= 200 && e.HTTPStatus <= 299 && errors.As(e.Err, &syntax) {
			return "this is not the cloud API's answer: " + hintBaseURLShape
		}
	}
	return ""
}

// KeyHint is what a refused key's error says to check: the setting the key
// came from (Config.KeySource) and, when the key goes in another header
// than the cloud's own, CLOUD_API_KEY_HEADER.
func KeyHint(source, header string) string {
	h := hintKey
	if source != "" && source != keyVar {
		h = "check the API key read from " + source
	}
	if header != "" && !strings.EqualFold(header, DefaultKeyHeader) {
		if len(header) > maxHeaderShown {
			header = header[:maxHeaderShown] + "…"
		}
		h += fmt.Sprintf(" and CLOUD_API_KEY_HEADER (the key is sent in %s; the cloud's own header is %s)", header, DefaultKeyHeader)
	}
	return h
}

// keySetting names where the key came from, for a message that says to
// check it.
func keySetting(source string) string {
	if source == "" {
		return keyVar
	}
	return source
}

// networkHint explains a request that got no answer.
func networkHint(err error) string {
	var (
		dns     *net.DNSError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		verify  *tls.CertificateVerificationError
		record  tls.RecordHeaderError
		alert   tls.AlertError
		nerr    net.Error
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &dns) && dns.IsNotFound:
		return "the host name in CLOUD_BASE_URL does not exist: check its spelling"
	case errors.As(err, &dns):
		return "the host name in CLOUD_BASE_URL cannot be looked up: check this machine's DNS and network, and the host name in CLOUD_BASE_URL"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "nothing answers at the host and port of CLOUD_BASE_URL: check the host and port in CLOUD_BASE_URL (without a port, https:// means 443 and http:// 80) and that the service is up"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "the host in CLOUD_BASE_URL cannot be reached: check this machine's network and CLOUD_BASE_URL"
	case errors.As(err, &record):
		return "the server at CLOUD_BASE_URL does not speak TLS on that port: use http:// for a plain HTTP server, or the port of its https:// service"
	case errors.As(err, &unknown), errors.As(err, &verify), errors.As(err, &invalid), errors.As(err, &host):
		return "the certificate of the host in CLOUD_BASE_URL is not trusted: check the host name in CLOUD_BASE_URL and this machine's CA certificates (the date and time too)"
	case errors.As(err, &alert):
		return "the TLS handshake with the host in CLOUD_BASE_URL failed: check that CLOUD_BASE_URL is the API's https:// address"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return "no answer in time: check CLOUD_BASE_URL and this machine's network (a firewall that drops packets looks like this); CLOUD_TIMEOUT is how long each request may take"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "the connection was reset; the bridge tries again"
	}
	return ""
}
