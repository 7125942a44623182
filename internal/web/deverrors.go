package web

import (
	"sync"
	"time"

	"cloud2mqtt/internal/capability"
)

// DeviceErrors keeps each device's last errors for the page's "last error"
// (Device.LastError): of reads (the one that made the device unreachable,
// a failed read on request), shown until a good read after it, and of
// commands (every answer on <id>/error: rejected or failed commands,
// refused reads on request), shown until the cloud accepts a command of
// the device after it. The page shows the later of the two. Its methods
// are safe for concurrent use; the registry's observer and the bridge's
// hooks feed it (internal/statuspage).
type DeviceErrors struct {
	mu   sync.Mutex
	errs map[capability.Key]*errorPair
	now  func() time.Time
}

type errorPair struct {
	read, command deviceError
	commandOK     time.Time // the last command the cloud accepted
}

type deviceError struct {
	msg string
	at  time.Time
}

// NewDeviceErrors returns an empty record; now stamps the errors (nil:
// time.Now).
func NewDeviceErrors(now func() time.Time) *DeviceErrors {
	if now == nil {
		now = time.Now
	}
	return &DeviceErrors{errs: map[capability.Key]*errorPair{}, now: now}
}

func (e *DeviceErrors) pair(k capability.Key) *errorPair {
	p := e.errs[k]
	if p == nil {
		p = &errorPair{}
		e.errs[k] = p
	}
	return p
}

// ReadFailed notes a failed read of the device.
func (e *DeviceErrors) ReadFailed(k capability.Key, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pair(k).read = deviceError{msg, e.now()}
}

// CommandFailed notes an answer on the device's <id>/error.
func (e *DeviceErrors) CommandFailed(k capability.Key, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pair(k).command = deviceError{msg, e.now()}
}

// CommandAccepted notes a command of the device the cloud (or the LAN)
// accepted: it clears the command's error.
func (e *DeviceErrors) CommandAccepted(k capability.Key) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pair(k).commandOK = e.now()
}

// Last is the device's last error still standing ("" none); read and
// lastRead say whether and when it was last read well.
func (e *DeviceErrors) Last(k capability.Key, read bool, lastRead time.Time) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.errs[k]
	if p == nil {
		return ""
	}
	var out deviceError
	if p.read.msg != "" && (!read || p.read.at.After(lastRead)) {
		out = p.read
	}
	if p.command.msg != "" && p.command.at.After(p.commandOK) && !p.command.at.Before(out.at) {
		out = p.command
	}
	return out.msg
}
