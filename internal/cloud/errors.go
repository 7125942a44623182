package cloud

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrorKind sorts cloud failures by what the caller should do about them:
// fix the key, wait, give up on the request, or try again later.
type ErrorKind int

// The kinds of failure. The zero value is deliberately not one of them, so an
// APIError built without a kind is never mistaken for an auth failure.
const (
	// ErrAuth: the API key was refused (401/403). Retrying cannot help.
	ErrAuth ErrorKind = iota + 1
	// ErrRateLimited: 429; RetryAfter says how long to wait when the service said so.
	ErrRateLimited
	// ErrRequest: 400 and other 4xx; the request itself was refused (a bad
	// value, a device that does not belong to the account). Never retried.
	ErrRequest
	// ErrNotFound: 404; the device or the instance does not exist. Never retried.
	ErrNotFound
	// ErrTransient: 5xx, timeouts, resets, and answers that are not the JSON
	// we expect. The same request may succeed later.
	ErrTransient
	// ErrScheme: the scheme of CLOUD_BASE_URL does not match the server
	// (https:// to a plain HTTP port, http:// to a TLS one). Never
	// retried: only a change of CLOUD_BASE_URL helps (IsSchemeMismatch).
	ErrScheme
)

// String names the kind for logs and metrics labels.
func (k ErrorKind) String() string {
	switch k {
	case ErrAuth:
		return "auth"
	case ErrRateLimited:
		return "rate limited"
	case ErrRequest:
		return "request"
	case ErrNotFound:
		return "not found"
	case ErrTransient:
		return "transient"
	case ErrScheme:
		return "wrong scheme"
	}
	return fmt.Sprintf("unknown(%d)", int(k))
}

// APIError is a failed cloud request, whether the service said so with an
// HTTP status, with the body's code, with a control answer's failure status,
// or the answer never arrived in a usable form. Callers decide on Kind (or the
// Is* helpers) and show Error() to people.
type APIError struct {
	Kind     ErrorKind
	Endpoint string // "devices", "state", "scenes", "diy-scenes" or "control"

	SKU, Device, Instance string // what the request was about, where it was about a device

	HTTPStatus int    // 0 when no answer arrived
	Code       int    // the body's code (or a control failure's errorCode); 0 when absent
	Msg        string // the service's message, or what was wrong with the answer

	// RetryAfter is the service's Retry-After, capped at maxRetryAfter; 0
	// when it gave none.
	RetryAfter time.Duration
	// Limits are what the answer's rate-limit headers said (zero when it
	// had none): for a 429, whether the account's quota is spent.
	Limits RateLimits

	Err error // the underlying cause (network, JSON), if any

	// keyHint is what a refused key's hint says to check (the client's:
	// where its key came from, the header it goes in); "" is hintKey.
	keyHint string
	// fix is a scheme mismatch's hint: the CLOUD_BASE_URL to set.
	fix string
}

// Error reads like "cloud: control H6072/AA:BB:…: brightness: parameter value
// out of range (code 400)", followed by its hint (what to check, naming the
// setting) where there is one. It never contains the API key: messages taken
// from the service are redacted before they are stored in Msg.
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("cloud: ")
	b.WriteString(e.Endpoint)
	if e.SKU != "" || e.Device != "" {
		b.WriteString(" ")
		b.WriteString(e.SKU)
		b.WriteString("/")
		b.WriteString(e.Device)
	}
	if e.Instance != "" {
		b.WriteString(": ")
		b.WriteString(e.Instance)
	}
	b.WriteString(": ")
	if e.Msg != "" {
		b.WriteString(e.Msg)
	} else {
		b.WriteString(e.Kind.String())
	}
	var status []string
	if e.HTTPStatus != 0 && e.HTTPStatus != 200 && e.HTTPStatus != e.Code {
		status = append(status, fmt.Sprintf("HTTP %d", e.HTTPStatus))
	}
	if e.Code != 0 && e.Code != 200 {
		status = append(status, fmt.Sprintf("code %d", e.Code))
	}
	if len(status) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(status, ", "))
		b.WriteString(")")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if h := e.hint(); h != "" {
		b.WriteString("; ")
		b.WriteString(h)
	}
	return b.String()
}

// Unwrap gives errors.Is/As the underlying cause (for example
// context.DeadlineExceeded or a *net.OpError).
func (e *APIError) Unwrap() error { return e.Err }

func kindOf(err error) (ErrorKind, *APIError) {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Kind, ae
	}
	return 0, nil
}

// IsAuth reports whether the API key was refused.
func IsAuth(err error) bool {
	k, _ := kindOf(err)
	return k == ErrAuth
}

// IsRateLimited reports whether the service answered 429, and how long it
// asked to wait (0 when it did not say).
func IsRateLimited(err error) (retryAfter time.Duration, ok bool) {
	k, ae := kindOf(err)
	if k != ErrRateLimited {
		return 0, false
	}
	return ae.RetryAfter, true
}

// IsRejected reports whether the service refused the request itself (400 or
// 404 class): sending it again unchanged cannot succeed.
func IsRejected(err error) bool {
	k, _ := kindOf(err)
	return k == ErrRequest || k == ErrNotFound
}
