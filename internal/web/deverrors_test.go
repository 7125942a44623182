package web

import (
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
)

// TestDeviceLastError: a device's last error is the later of its read
// error, until a good read after it, and its command error, until the
// cloud accepts a command of the device after it.
func TestDeviceLastError(t *testing.T) {
	now := time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)
	tick := func() { now = now.Add(time.Second) }
	e := NewDeviceErrors(func() time.Time { return now })
	k := capability.Key{SKU: "H6008", Device: "AA"}
	other := capability.Key{SKU: "H6008", Device: "BB"}
	// What the registry knows of the device: read, and when.
	read, lastRead := true, now.Add(-time.Minute)
	if got := e.Last(k, read, lastRead); got != "" {
		t.Errorf("no error yet: %q", got)
	}
	e.CommandFailed(k, "brightness: 250 is above the maximum 100")
	if got := e.Last(k, read, lastRead); got != "brightness: 250 is above the maximum 100" {
		t.Errorf("after a rejected command: %q", got)
	}
	if got := e.Last(other, read, lastRead); got != "" {
		t.Errorf("another device: %q", got)
	}
	// A good read does not clear a command's error.
	tick()
	lastRead = now
	if got := e.Last(k, read, lastRead); got != "brightness: 250 is above the maximum 100" {
		t.Errorf("after a good read: %q", got)
	}
	// A failed read after it is the later error, until a good read.
	tick()
	e.ReadFailed(k, "cloud: state H6008/AA: 500")
	if got := e.Last(k, read, lastRead); got != "cloud: state H6008/AA: 500" {
		t.Errorf("after a failed read: %q", got)
	}
	if got := e.Last(k, false, time.Time{}); got != "cloud: state H6008/AA: 500" {
		t.Errorf("never read: %q", got)
	}
	tick()
	lastRead = now
	if got := e.Last(k, read, lastRead); got != "brightness: 250 is above the maximum 100" {
		t.Errorf("after a good read, the command's error stays: %q", got)
	}
	// An accepted command clears the command's error; other devices'
	// commands do not.
	tick()
	e.CommandAccepted(other)
	if got := e.Last(k, read, lastRead); got == "" {
		t.Error("cleared by another device's command")
	}
	e.CommandAccepted(k)
	if got := e.Last(k, read, lastRead); got != "" {
		t.Errorf("after an accepted command: %q", got)
	}
}
