package web

import (
	"sync"
	"time"

	"cloud2mqtt/internal/capability"
)

// DeviceErrors keeps each device's standing errors for Device.LastError. A
// read's error stands until a good read; a command's until a command of its
// instance is accepted (any command, when it named no instance). The page shows
// the latest; it is safe for concurrent use.
type DeviceErrors struct {
	mu   sync.Mutex
	errs map[capability.Key]*standing
	now  func() time.Time
	seq  uint64 // orders the errors: two may share an instant
}

// standing is one device's errors.
type standing struct {
	read     deviceError
	commands map[string]deviceError // by instance; "" names none
}

type deviceError struct {
	msg string
	at  time.Time
	seq uint64
}

// maxInstanceErrors bounds the command errors kept per device, since whoever
// can publish names the instances; the oldest is forgotten.
const maxInstanceErrors = 16

// NewDeviceErrors returns an empty record; now stamps the errors (nil:
// time.Now).
func NewDeviceErrors(now func() time.Time) *DeviceErrors {
	if now == nil {
		now = time.Now
	}
	return &DeviceErrors{errs: map[capability.Key]*standing{}, now: now}
}

func (e *DeviceErrors) of(k capability.Key) *standing {
	s := e.errs[k]
	if s == nil {
		s = &standing{}
		e.errs[k] = s
	}
	return s
}

func (e *DeviceErrors) stamp(msg string) deviceError {
	e.seq++
	return deviceError{msg: msg, at: e.now(), seq: e.seq}
}

// ReadFailed notes a failed read of the device.
func (e *DeviceErrors) ReadFailed(k capability.Key, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.of(k).read = e.stamp(msg)
}

// CommandFailed notes an answer on the device's <id>/error for a command
// of instance ("" when it names none).
func (e *DeviceErrors) CommandFailed(k capability.Key, instance, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.of(k)
	if s.commands == nil {
		s.commands = map[string]deviceError{}
	}
	s.commands[instance] = e.stamp(msg)
	if len(s.commands) > maxInstanceErrors {
		oldest, first := "", true
		for in, c := range s.commands {
			if first || c.seq < s.commands[oldest].seq {
				oldest, first = in, false
			}
		}
		delete(s.commands, oldest)
	}
}

// CommandAccepted clears the error of the accepted command's instance and that
// of a command that named none.
func (e *DeviceErrors) CommandAccepted(k capability.Key, instance string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.errs[k]; s != nil {
		delete(s.commands, instance)
		delete(s.commands, "")
	}
}

// Last is the device's latest error still standing ("" none); read and
// lastRead say whether and when it was last read well.
func (e *DeviceErrors) Last(k capability.Key, read bool, lastRead time.Time) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.errs[k]
	if s == nil {
		return ""
	}
	var out deviceError
	if s.read.msg != "" && (!read || s.read.at.After(lastRead)) {
		out = s.read
	}
	for _, c := range s.commands {
		if c.seq > out.seq {
			out = c
		}
	}
	return out.msg
}
