package lan

import (
	"net/netip"
	"slices"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"cloud2mqtt/internal/clock"
)

// Device is what the client knows of a device found on the LAN.
type Device struct {
	ID, SKU string
	// Addr is the address its scan answer came from: the only address the
	// client sends its commands to and accepts its status answers from.
	Addr netip.Addr
	// Reachable is false from a command or read that got no status answer
	// until the device's next scan or status answer.
	Reachable bool
	// Seen is when the device last answered.
	Seen time.Time
	// Firmware, as the scan answer gave it.
	BLEVersionHard, BLEVersionSoft, WiFiVersionHard, WiFiVersionSoft string
}

// device is a Device and its client-side records, guarded by Client.mu
// except pace (safe itself) and busy (a semaphore).
type device struct {
	Device
	pace    *rate.Limiter
	busy    chan struct{} // one command at a time per device
	waiters map[chan answer]struct{}

	// The guard's state (guard.go): the probe under way, the warning limit,
	// the end of the window that first located it, and the two addresses
	// that disputed it.
	probing       bool
	probed        time.Time
	conflictAt    time.Time
	conflictsLeft uint64
	fresh         time.Time
	disputed      [2]netip.Addr
}

// maxUnknownLogged bounds the ids remembered for logging once: spoofed
// scan answers must not grow memory.
const maxUnknownLogged = 256

// SetKnown replaces the ids scan answers are matched against, ignoring
// case. Devices not in ids are forgotten; found ones keep their address.
// The first call also applies the scan answers that came before it.
func (c *Client) SetKnown(ids []string) {
	c.mu.Lock()
	notice := c.setKnownLocked(ids)
	c.mu.Unlock()
	if notice != nil {
		notice()
	}
}

func (c *Client) setKnownLocked(ids []string) func() {
	known := make(map[string]string, len(ids))
	for _, id := range ids {
		known[strings.ToUpper(id)] = id
	}
	for id, d := range c.devices {
		if known[strings.ToUpper(id)] != id {
			delete(c.devices, id)
			if c.byAddr[d.Addr] == d {
				delete(c.byAddr, d.Addr)
			}
		}
	}
	c.known = known
	clear(c.unknown) // an id unknown before may be known now, or gone again
	if c.listed {
		return nil
	}
	c.listed = true
	return c.takeEarlyLocked()
}

// Devices lists the devices found, by id.
func (c *Client) Devices() []Device {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Device, 0, len(c.devices))
	for _, d := range c.devices {
		if d.Addr.IsValid() {
			out = append(out, d.Device)
		}
	}
	slices.SortFunc(out, func(a, b Device) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Device is one found device; ok is false when no scan answer located it.
func (c *Client) Device(id string) (Device, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.devices[id]
	if d == nil || !d.Addr.IsValid() {
		return Device{}, false
	}
	return d.Device, true
}

// Reachable says whether commands for the device go over the LAN now.
func (c *Client) Reachable(id string) bool {
	d, ok := c.Device(id)
	return ok && d.Reachable
}

// onScanLocked takes a scan answer, accepted only in the client's scan
// window, from an allowed address and for a known id. A new device is
// located at once; one located elsewhere is contested (guard.go).
func (c *Client) onScanLocked(a ScanAnswer, from netip.Addr) (string, func()) {
	now := c.cfg.Clock.Now()
	w := c.window
	if now.After(w.until) || (!w.anySource && !w.from[from]) {
		return c.dropLocked(&c.stats.Unsolicited, "unsolicited", from, "scan answer outside a scan's window or from an address not scanned")
	}
	id, ok := c.known[strings.ToUpper(a.Device)]
	if !ok && !c.listed {
		return c.keepEarlyLocked(a, from, now)
	}
	if !ok {
		c.stats.Unknown++
		return "unknown", c.unknownLineLocked(a, from)
	}
	var said func()
	if a.IP.IsValid() && a.IP != from {
		if ok, _, _ := c.rejects.allow(from, now); ok {
			said = func() {
				c.log.Debug().Str("device", id).Stringer("says", a.IP).Stringer("from", from).
					Msg("scan answer names another address than it came from; using the sender's")
			}
		}
	}
	d := c.deviceLocked(id)
	var event string
	var notice func()
	switch {
	case d.disputed[0].IsValid():
		c.stats.Disputed++
		event, notice = "disputed", c.disputeLineLocked(d, from)
	case d.Addr.IsValid() && d.Addr != from && !now.After(d.fresh):
		event, notice = "disputed", c.disputeLocked(d, d.Addr, from)
	case d.Addr.IsValid() && d.Addr != from:
		event, notice = c.contestLocked(d, a, from, now)
	default:
		event, notice = c.locateLocked(d, a, from, now)
	}
	return event, join(said, notice)
}

// deviceLocked is the known id's record, made on first use.
func (c *Client) deviceLocked(id string) *device {
	d := c.devices[id]
	if d == nil {
		d = &device{Device: Device{ID: id}, busy: make(chan struct{}, 1), waiters: map[chan answer]struct{}{}}
		d.pace = c.newPace()
		c.devices[id] = d
	}
	return d
}

// unknownLineLocked logs a scan answer for an id not in the cloud's list,
// once per id (at most maxUnknownLogged ids) and within the source's limit.
func (c *Client) unknownLineLocked(a ScanAnswer, from netip.Addr) func() {
	key := strings.ToUpper(a.Device)
	if c.unknown[key] || len(c.unknown) >= maxUnknownLogged {
		return nil
	}
	if ok, _, _ := c.rejects.allow(from, c.cfg.Clock.Now()); !ok {
		return nil
	}
	c.unknown[key] = true
	return func() {
		c.log.Debug().Str("device", a.Device).Str("sku", a.SKU).Stringer("addr", from).
			Msg("scan answer from a device not in the cloud's list: ignored")
	}
}

// locateLocked puts the device at the address its scan answer came from;
// a device that had that address loses it. A first find stays open to
// dispute until the scan window closes.
func (c *Client) locateLocked(d *device, a ScanAnswer, from netip.Addr, now time.Time) (string, func()) {
	before := d.Device
	var moved *device
	if !d.Addr.IsValid() {
		d.fresh = c.window.until
	}
	if d.Addr != from {
		if other := c.byAddr[from]; other != nil && other != d {
			other.Addr, other.Reachable = netip.Addr{}, false
			moved = other
		}
		if c.byAddr[d.Addr] == d {
			delete(c.byAddr, d.Addr)
		}
		d.Addr = from
		c.byAddr[from] = d
	}
	d.SKU, d.Reachable, d.Seen = a.SKU, true, now
	d.BLEVersionHard, d.BLEVersionSoft, d.WiFiVersionHard, d.WiFiVersionSoft =
		a.BLEVersionHard, a.BLEVersionSoft, a.WiFiVersionHard, a.WiFiVersionSoft
	event := "scan"
	if before.Addr.IsValid() && before.Addr != d.Addr {
		c.stats.Moved++
		event = "moved"
	}
	after := d.Device
	changed := before.Addr != after.Addr || before.Reachable != after.Reachable || before.SKU != after.SKU
	notice := c.deviceNotice(changed, after, moved)
	return event, func() {
		c.logFound(before, after, moved)
		if notice != nil {
			notice()
		}
	}
}

// join runs the non-nil functions in order; nil when all are nil.
func join(fs ...func()) func() {
	var out []func()
	for _, f := range fs {
		if f != nil {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return func() {
		for _, f := range out {
			f()
		}
	}
}

func (c *Client) logFound(before, now Device, lost *device) {
	switch {
	case !before.Addr.IsValid():
		c.log.Info().Str("device", now.ID).Str("sku", now.SKU).Stringer("addr", now.Addr).Msg("found on the LAN")
	case before.Addr != now.Addr:
		c.log.Info().Str("device", now.ID).Stringer("from", before.Addr).Stringer("to", now.Addr).Msg("moved on the LAN")
	case !before.Reachable:
		c.log.Info().Str("device", now.ID).Stringer("addr", now.Addr).Msg("reachable on the LAN again")
	}
	if lost != nil {
		c.log.Info().Str("device", lost.ID).Stringer("addr", now.Addr).Str("now", now.ID).
			Msg("another device answers at this device's address: address forgotten until its next scan answer")
	}
}

// deviceNotice is the OnDevice calls for what changed (nil for none).
func (c *Client) deviceNotice(changed bool, d Device, lost *device) func() {
	if c.cfg.OnDevice == nil || (!changed && lost == nil) {
		return nil
	}
	var other Device
	if lost != nil {
		other = lost.Device
	}
	return func() {
		if lost != nil {
			c.cfg.OnDevice(other)
		}
		if changed {
			c.cfg.OnDevice(d)
		}
	}
}

// onStatusLocked takes a status answer: accepted only from a located
// device's address. It makes the device reachable and wakes its waiters.
func (c *Client) onStatusLocked(s Status, from netip.Addr) (string, func()) {
	d := c.byAddr[from]
	if d == nil {
		return c.dropLocked(&c.stats.Spoofed, "spoofed", from, "status answer from an address no scan answer gave: dropped")
	}
	was := d.Reachable
	d.Reachable, d.Seen = true, c.cfg.Clock.Now()
	if !was {
		c.log.Info().Str("device", d.ID).Stringer("addr", d.Addr).Msg("reachable on the LAN again")
	}
	for ch := range d.waiters {
		done := clock.Busy(c.cfg.Clock, "lan: a status answer for its waiter")
		select {
		case ch <- answer{s: s, done: done}:
		default: // a waiter that is not reading has enough answers
			done()
		}
	}
	id, dev := d.ID, d.Device
	devNotice := c.deviceNotice(!was, dev, nil)
	onStatus := c.onStatus
	return "status", func() {
		if devNotice != nil {
			devNotice()
		}
		if onStatus != nil {
			onStatus(id, s)
		}
	}
}

// markUnreachable records that the device did not answer.
func (c *Client) markUnreachable(d *device) {
	c.mu.Lock()
	was := d.Reachable
	d.Reachable = false
	c.stats.NoAnswer++
	dev := d.Device
	c.mu.Unlock()
	if was {
		c.log.Info().Str("device", dev.ID).Stringer("addr", dev.Addr).
			Msg("no status answer on the LAN: using the cloud until its next scan or status answer")
		if c.cfg.OnDevice != nil {
			c.cfg.OnDevice(dev)
		}
	}
}

func (c *Client) newPace() *rate.Limiter {
	if c.cfg.Pace < 0 {
		return rate.NewLimiter(rate.Inf, 1)
	}
	return rate.NewLimiter(rate.Every(c.cfg.Pace), c.cfg.PaceBurst)
}
