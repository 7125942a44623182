package cloud

import (
	"errors"
	"strings"
)

// Whether a request reached the cloud, and what a refused state read means.

// sentError marks a failure that came after the request was written to the
// connection (a timeout or a cut while waiting for the answer): the cloud
// may have counted it against the day's budget.
type sentError struct{ err error }

func (e *sentError) Error() string { return e.err.Error() }
func (e *sentError) Unwrap() error { return e.err }

// Reached reports whether the request that ended with err reached the
// cloud: an answer came back (whatever it said), or the request was
// written and then no answer came in time. A request that failed before it
// was written (connection refused, an unknown host, a TLS handshake that
// failed, the bridge's own hold-offs) did not reach it, nor did one that
// met a server of the other scheme (IsSchemeMismatch: whatever answered
// is not the API): it costs nothing of the cloud's daily budget and shows
// nothing of the cloud's health.
func Reached(err error) bool {
	if err == nil {
		return true
	}
	var se *sentError
	if errors.As(err, &se) {
		return true
	}
	_, ae := kindOf(err)
	return ae != nil && ae.HTTPStatus != 0
}

// IsStateless reports whether a state read was refused because the cloud
// keeps no state for the device: the live service lists the groups made in
// its app (SKUs such as SameModeGroup, BaseGroup, DreamViewScenic) as
// devices, accepts their commands, and answers their state reads with 400
// (or 404) "devices not exist".
func IsStateless(err error) bool {
	k, ae := kindOf(err)
	if k != ErrRequest && k != ErrNotFound {
		return false
	}
	return strings.Contains(strings.ToLower(ae.Msg), "not exist")
}
