package app

import (
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/web"
)

// TestDeviceStatus: the page's status of a device from what the registry
// knows, in order of precedence.
func TestDeviceStatus(t *testing.T) {
	for _, c := range []struct {
		v    registry.View
		want string
	}{
		{registry.View{Online: true, Reachable: true}, web.StatusUnknown}, // never read
		{registry.View{Read: true, Online: true, Reachable: false}, web.StatusUnreachable},
		{registry.View{Read: true, Online: false, Reachable: false}, web.StatusUnreachable},
		{registry.View{Read: true, Online: false, Reachable: true}, web.StatusOffline},
		{registry.View{Read: true, Online: true, Reachable: true}, web.StatusOnline},
	} {
		if got := status(c.v); got != c.want {
			t.Errorf("%+v: %s, want %s", c.v, got, c.want)
		}
	}
}

// TestDeviceLastError: a device's last error is the later of its read
// error, until a good read after it, and its command error, until the
// cloud accepts a command of the device after it.
func TestDeviceLastError(t *testing.T) {
	now := time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)
	tick := func() { now = now.Add(time.Second) }
	e := newDeviceErrors()
	e.now = func() time.Time { return now }
	k := capability.Key{SKU: "H6008", Device: "AA"}
	other := capability.Key{SKU: "H6008", Device: "BB"}
	read := registry.View{Read: true, Online: true, Reachable: true, LastRead: now.Add(-time.Minute)}
	if got := e.last(k, read); got != "" {
		t.Errorf("no error yet: %q", got)
	}
	e.commandFailed(k, "brightness: 250 is above the maximum 100")
	if got := e.last(k, read); got != "brightness: 250 is above the maximum 100" {
		t.Errorf("after a rejected command: %q", got)
	}
	if got := e.last(other, read); got != "" {
		t.Errorf("another device: %q", got)
	}
	// A good read does not clear a command's error.
	tick()
	read.LastRead = now
	if got := e.last(k, read); got != "brightness: 250 is above the maximum 100" {
		t.Errorf("after a good read: %q", got)
	}
	// A failed read after it is the later error, until a good read.
	tick()
	e.readFailed(k, "cloud: state H6008/AA: 500")
	if got := e.last(k, read); got != "cloud: state H6008/AA: 500" {
		t.Errorf("after a failed read: %q", got)
	}
	if got := e.last(k, registry.View{}); got != "cloud: state H6008/AA: 500" {
		t.Errorf("never read: %q", got)
	}
	tick()
	read.LastRead = now
	if got := e.last(k, read); got != "brightness: 250 is above the maximum 100" {
		t.Errorf("after a good read, the command's error stays: %q", got)
	}
	// An accepted command clears the command's error; other devices'
	// commands do not.
	var passed int
	done := e.commandDone(func(scheduler.CommandResult) { passed++ })
	tick()
	done(scheduler.CommandResult{Request: cloud.ControlRequest{SKU: "H6008", Device: "BB"}})
	done(scheduler.CommandResult{Request: cloud.ControlRequest{SKU: "H6008", Device: "AA"}, Err: errString("cloud: 500")})
	if got := e.last(k, read); got == "" {
		t.Error("cleared by another device's command or by a failed one")
	}
	done(scheduler.CommandResult{Request: cloud.ControlRequest{SKU: "H6008", Device: "AA"}})
	if got := e.last(k, read); got != "" || passed != 3 {
		t.Errorf("after an accepted command: %q (results passed on: %d)", got, passed)
	}

	// The registry's sink reports the read error that made the device
	// unreachable, and still reaches the sink it wraps.
	var wrapped int
	s := e.sink(countingSink{&wrapped})
	tick()
	s.Unreachable(registry.View{Device: capability.Device{SKU: "H6008", Device: "AA"}}, errString("cloud: state H6008/AA: timeout"))
	if got := e.last(k, read); got != "cloud: state H6008/AA: timeout" || wrapped != 1 {
		t.Errorf("unreachable: %q, wrapped sink called %d times", got, wrapped)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

type countingSink struct{ n *int }

func (countingSink) Devices(all, added, removed []capability.Device) {}
func (countingSink) State(registry.View, map[string]any)             {}
func (s countingSink) Unreachable(registry.View, error)              { *s.n++ }
func (countingSink) Scenes(registry.View)                            {}

// TestDevicePath: without local control every device is reached by the
// cloud; the hook says otherwise per device.
func TestDevicePath(t *testing.T) {
	src := &webSource{errs: newDeviceErrors()}
	v := registry.View{Device: capability.Device{SKU: "H6008", Device: "AA", Name: "Lamp"}, Read: true, Online: true, Reachable: true}
	if d := src.row(v, "h6008_aa", nil, nil); d.Path != "cloud" || d.Name != "Lamp" || d.Status != web.StatusOnline {
		t.Errorf("without local control: %+v", d)
	}
	src.Path = func(k capability.Key) string {
		if k.Device == "AA" {
			return "local"
		}
		return "cloud"
	}
	if d := src.row(v, "h6008_aa", map[string]deviceSettings{"h6008_aa": {Name: "Hall lamp", Disabled: true}}, nil); d.Path != "local" || d.Name != "Hall lamp" || !d.Disabled {
		t.Errorf("with local control and the user's name: %+v", d)
	}
}

// TestHTTPServerBounds: by default a connection's request must arrive
// within seconds and an idle kept-alive connection is closed within a
// minute (TestIdleConnectionsClosed proves the idle bound with a short
// one); a test's shorter bound is kept.
func TestHTTPServerBounds(t *testing.T) {
	d := httpTimeouts{}.withDefaults()
	if d.readHeader <= 0 || d.readHeader > 10*time.Second || d.read <= 0 || d.read > 30*time.Second || d.idle <= 0 || d.idle > time.Minute {
		t.Errorf("defaults %+v: want a request within seconds and idle connections closed within a minute", d)
	}
	if s := (httpTimeouts{idle: time.Millisecond}).withDefaults(); s.idle != time.Millisecond || s.read != d.read {
		t.Errorf("a test's idle bound: %+v", s)
	}
}
