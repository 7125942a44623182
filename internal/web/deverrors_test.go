package web

import (
	"fmt"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
)

// TestDeviceLastError: a device's last error is the latest still
// standing: a read's until a good read after it, a command's until a
// command of its instance is accepted (one naming no instance until any
// command is).
func TestDeviceLastError(t *testing.T) {
	now := time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)
	tick := func() { now = now.Add(time.Second) }
	e := NewDeviceErrors(func() time.Time { return now })
	k := capability.Key{SKU: "H6008", Device: "AA"}
	other := capability.Key{SKU: "H6008", Device: "BB"}
	// What the registry knows of the device: read, and when.
	read, lastRead := true, now.Add(-time.Minute)
	last := func() string { return e.Last(k, read, lastRead) }
	if got := last(); got != "" {
		t.Errorf("no error yet: %q", got)
	}
	e.CommandFailed(k, "brightness", "brightness: 250 is above the maximum 100")
	if got := last(); got != "brightness: 250 is above the maximum 100" {
		t.Errorf("after a rejected command: %q", got)
	}
	if got := e.Last(other, read, lastRead); got != "" {
		t.Errorf("another device: %q", got)
	}
	// A good read does not clear a command's error.
	tick()
	lastRead = now
	if got := last(); got != "brightness: 250 is above the maximum 100" {
		t.Errorf("after a good read: %q", got)
	}
	// A failed read after it is the later error, until a good read.
	tick()
	e.ReadFailed(k, "cloud: state H6008/AA: 500")
	if got := last(); got != "cloud: state H6008/AA: 500" {
		t.Errorf("after a failed read: %q", got)
	}
	if got := e.Last(k, false, time.Time{}); got != "cloud: state H6008/AA: 500" {
		t.Errorf("never read: %q", got)
	}
	tick()
	lastRead = now
	if got := last(); got != "brightness: 250 is above the maximum 100" {
		t.Errorf("after a good read, the command's error stays: %q", got)
	}
	// Another instance's accepted command, another device's: the error
	// stays; its own instance's clears it.
	tick()
	e.CommandAccepted(k, "powerSwitch")
	e.CommandAccepted(other, "brightness")
	if got := last(); got == "" {
		t.Error("cleared by another instance's or another device's command")
	}
	e.CommandAccepted(k, "brightness")
	if got := last(); got != "" {
		t.Errorf("after an accepted command of the instance: %q", got)
	}
	// Two instances refused: the later shows, then the earlier once the
	// later is made good.
	e.CommandFailed(k, "colorRgb", "colorRgb: not a colour")
	e.CommandFailed(k, "brightness", "brightness: 0 is below the minimum 1")
	if got := last(); got != "brightness: 0 is below the minimum 1" {
		t.Errorf("the later of two: %q", got)
	}
	e.CommandAccepted(k, "brightness")
	if got := last(); got != "colorRgb: not a colour" {
		t.Errorf("the earlier once the later is made good: %q", got)
	}
	// A command naming no instance (a set object that is none) is made
	// good by any accepted command.
	e.CommandAccepted(k, "colorRgb")
	e.CommandFailed(k, "", "set expects a JSON object")
	e.CommandAccepted(k, "powerSwitch")
	if got := last(); got != "" {
		t.Errorf("an error naming no instance after an accepted command: %q", got)
	}
}

// TestDeviceErrorsBounded: a flood of refused commands naming made-up
// instances keeps a few per device, the latest among them.
func TestDeviceErrorsBounded(t *testing.T) {
	e := NewDeviceErrors(nil)
	k := capability.Key{SKU: "H6008", Device: "AA"}
	for i := range 10000 {
		e.CommandFailed(k, fmt.Sprintf("made_up_%d", i), fmt.Sprintf("no such instance %d", i))
	}
	if n := len(e.errs[k].commands); n != maxInstanceErrors {
		t.Errorf("%d command errors kept, want %d", n, maxInstanceErrors)
	}
	if got := e.Last(k, true, time.Now()); got != "no such instance 9999" {
		t.Errorf("last: %q", got)
	}
}
