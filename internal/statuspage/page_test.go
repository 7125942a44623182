package statuspage

import (
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/settings"
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

// TestDeviceErrorsFed: the page's record of a device's last error is fed
// by the registry (the read error that made it unreachable) and the
// bridge (answers on <id>/error: a command's, cleared by an accepted
// command of its instance, never by a failed one, another instance's or
// another device's; a read's on request, cleared by a good read); every
// command's outcome still reaches the next hook (the metrics).
func TestDeviceErrorsFed(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	p := New(func() time.Time { return now })
	k := capability.Key{SKU: "H6008", Device: "AA"}
	lastRead := now.Add(-time.Minute)
	last := func() string { return p.errs.Last(k, true, lastRead) }
	cmd := func(device, instance string, err error) scheduler.CommandResult {
		return scheduler.CommandResult{Request: cloud.ControlRequest{SKU: "H6008", Device: device, Instance: instance}, Err: err}
	}

	p.ErrorAnswered(k, "brightness", false, "brightness: 250 is above the maximum 100")
	if got := last(); got != "brightness: 250 is above the maximum 100" {
		t.Errorf("after a rejected command: %q", got)
	}
	p.CommandDone(cmd("BB", "brightness", nil))
	p.CommandDone(cmd("AA", "brightness", errString("cloud: 500")))
	p.CommandDone(cmd("AA", "powerSwitch", nil))
	if got := last(); got == "" {
		t.Error("cleared by another device's command, a failed one or another instance's")
	}
	p.CommandDone(cmd("AA", "brightness", nil))
	if got := last(); got != "" {
		t.Errorf("after an accepted command of the instance: %q", got)
	}

	// A read on request the cloud refused (<id>/get answered on
	// <id>/error) stands until a good read, which an accepted command is
	// not.
	now = now.Add(time.Second)
	p.ErrorAnswered(k, "", true, "cloud: state H6008/AA: 429")
	p.CommandDone(cmd("AA", "brightness", nil))
	if got := last(); got != "cloud: state H6008/AA: 429" {
		t.Errorf("a failed read on request after an accepted command: %q", got)
	}
	now = now.Add(time.Second)
	lastRead = now
	if got := last(); got != "" {
		t.Errorf("after a good read: %q", got)
	}

	// The registry tells the page the read error that made the device
	// unreachable, without our packages' prefixes.
	reg := registry.New(zerolog.Nop(), p.Observer())
	reg.SetDevices([]capability.Device{{SKU: "H6008", Device: "AA", Name: "Lamp"}})
	reg.MarkUnreachable(k, errString("cloud: state H6008/AA: timeout"))
	if got := p.errs.Last(k, false, time.Time{}); got != "state H6008/AA: timeout" {
		t.Errorf("unreachable: %q", got)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// TestDevicePath: without local control every device is reached by the
// cloud; where the registry says the LAN reaches a device, it is local.
func TestDevicePath(t *testing.T) {
	src := &source{errs: web.NewDeviceErrors(nil)}
	v := registry.View{Device: capability.Device{SKU: "H6008", Device: "AA", Name: "Lamp"}, Read: true, Online: true, Reachable: true}
	if d := src.row(v, "h6008_aa", nil, nil); d.Path != "cloud" || d.Name != "Lamp" || d.Status != web.StatusOnline {
		t.Errorf("without local control: %+v", d)
	}
	v.Location = registry.Location{Eligible: true, Addr: "127.0.0.2", Local: true}
	if d := src.row(v, "h6008_aa", map[string]settings.Device{"h6008_aa": {Name: "Hall lamp", Disabled: true}}, nil); d.Path != "local" || d.Name != "Hall lamp" || !d.Disabled {
		t.Errorf("with local control and the user's name: %+v", d)
	}
}

// TestConnectionOf: the status page's path follows the registry's location.
func TestConnectionOf(t *testing.T) {
	reg := registry.New(zerolog.Nop())
	d := capability.Device{SKU: "H6008", Device: "AA:01", Type: capability.DeviceLight}
	reg.SetDevices([]capability.Device{d})
	src := &source{Parts: Parts{Registry: reg}, errs: web.NewDeviceErrors(nil)}
	path := func(k capability.Key) string {
		v, _ := src.Registry.Snapshot(k)
		return src.row(v, "h6008_aa01", nil, nil).Path
	}
	if got := path(d.Key()); got != "cloud" {
		t.Errorf("before the scan: %q", got)
	}
	reg.SetLocation(d.Key(), registry.Location{Eligible: true, Addr: "127.0.0.2", Local: true})
	if got := path(d.Key()); got != "local" {
		t.Errorf("found on the LAN: %q", got)
	}
}
