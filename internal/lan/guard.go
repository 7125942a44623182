package lan

// The guards against the rest of the network: a scan answer in a device's
// name cannot take over its address, a device two addresses claim before
// it is located stays on the cloud, and no source can log faster than a
// line a second.

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// claim is a scan answer that named a located device from another address.
type claim struct {
	from   netip.Addr
	answer ScanAnswer
}

// contestLocked takes a scan answer for a device located at another
// address. The device moves only if its known address stays silent to a
// status probe; a claim against an answering address, or during a probe,
// is refused, counted and logged.
func (c *Client) contestLocked(d *device, a ScanAnswer, from netip.Addr, now time.Time) (string, func()) {
	if !d.probing && !d.Seen.After(c.scanned) && d.probed.Before(c.scanned) {
		d.probing, d.probed = true, now
		c.wg.Add(1) // the reader holds the group: Close is still waiting for it
		cl := claim{from: from, answer: a}
		return "probing", func() {
			tk := newTask(c.cfg.Clock, "lan: a probe of "+d.ID) // while the scan answer is in hand
			go c.probe(d, cl, tk)
		}
	}
	c.stats.Contested++
	return "contested", c.conflictLineLocked(d, from)
}

// probe asks the device's known address for its status. An answer keeps
// the device there; silence moves it to the claiming address.
func (c *Client) probe(d *device, cl claim, tk *task) {
	defer c.wg.Done()
	defer tk.end()
	_, answered, err := c.ask(withTask(context.Background(), tk), d, c.cfg.Tries)
	c.mu.Lock()
	d.probing = false
	if err != nil || c.devices[d.ID] != d || !d.Addr.IsValid() {
		// Closed, forgotten (SetKnown), disputed, or its address went to
		// another device meanwhile: the next scan decides afresh.
		c.mu.Unlock()
		return
	}
	var event string
	var notice func()
	if answered {
		c.stats.Contested++
		event, notice = "contested", c.conflictLineLocked(d, cl.from)
	} else {
		event, notice = c.locateLocked(d, cl.answer, cl.from, c.cfg.Clock.Now())
	}
	trace := c.trace
	c.mu.Unlock()
	if notice != nil {
		notice()
	}
	trace(event)
}

// ask sends up to tries status requests to the device's known address and
// returns the first answer; answered is false when none came.
func (c *Client) ask(ctx context.Context, d *device, tries int) (s Status, answered bool, err error) {
	in, done := c.listen(d)
	defer done()
	for range tries {
		dest, err := c.paced(ctx, d, in, c.stateMsg)
		if err != nil {
			return Status{}, false, err
		}
		s, ok, err := c.await(ctx, in)
		if err != nil {
			return Status{}, false, err
		}
		if ok {
			return s, true, nil
		}
		c.log.Debug().Str("device", d.ID).Stringer("addr", dest).Msg("no status answer yet")
	}
	return Status{}, false, nil
}

// warnLocked says whether a warning about the device may be logged now
// and how many were left out since the last one.
func (c *Client) warnLocked(d *device) (ok bool, left uint64) {
	now := c.cfg.Clock.Now()
	if !d.conflictAt.IsZero() && now.Sub(d.conflictAt) < conflictLogEvery {
		d.conflictsLeft++
		return false, 0
	}
	left = d.conflictsLeft
	d.conflictAt, d.conflictsLeft = now, 0
	return true, left
}

// conflictLineLocked is the warning about a refused claim, or nil when the
// device had one in the last conflictLogEvery; it counts those left out.
func (c *Client) conflictLineLocked(d *device, other netip.Addr) func() {
	ok, left := c.warnLocked(d)
	if !ok {
		return nil
	}
	id, kept := d.ID, d.Addr
	return func() {
		ev := c.log.Warn().Str("device", id).Stringer("addr", kept).Stringer("other", other)
		if left > 0 {
			ev = ev.Uint64("not_logged", left)
		}
		ev.Msg("two addresses answer LAN scans for this light: keeping addr, which still answers its status requests, " +
			"and ignoring other (a second device with the same id, or something on the network answering in its name: " +
			"find out what is at the other address; listing the lights' own addresses in LAN_SCAN_TARGETS instead of the " +
			"multicast group accepts answers from those addresses only)")
	}
}

// The first scan window. Scan answers that come before the first device
// list are kept until it decides. When two addresses answer for an id that
// has no known address yet, nothing says which is the device, so neither
// is trusted and the device stays on the cloud.

// maxEarly bounds the ids kept before the first device list, because a
// network can answer in any number of names; the scan sent with the list
// finds the rest.
const maxEarly = 256

// earlyAnswer is a scan answer for an id that came before the first
// device list.
type earlyAnswer struct {
	answer ScanAnswer
	from   netip.Addr
	at     time.Time
	// other is the first other address that answered in the id's name;
	// when valid, the id is disputed.
	other netip.Addr
}

// keepEarlyLocked keeps a scan answer that came before the first device
// list (onScanLocked checked its window and source).
func (c *Client) keepEarlyLocked(a ScanAnswer, from netip.Addr, now time.Time) (string, func()) {
	key := strings.ToUpper(a.Device)
	e := c.early[key]
	switch {
	case e == nil && len(c.early) >= maxEarly:
		return c.dropLocked(&c.stats.Unknown, "unknown", from,
			"scan answer before the device list, beyond the ids kept until it arrives: dropped (a scan after the list finds the device)")
	case e == nil:
		c.early[key] = &earlyAnswer{answer: a, from: from, at: now}
	case e.from == from:
		e.answer, e.at = a, now
	case !e.other.IsValid():
		e.other = from
	}
	c.stats.Early++
	return "early", nil
}

// takeEarlyLocked applies the answers kept before the first device list:
// an id claimed by one address is located there, by two is disputed.
func (c *Client) takeEarlyLocked() func() {
	keys := make([]string, 0, len(c.early))
	for k := range c.early {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the log's order
	var notices []func()
	for _, k := range keys {
		e := c.early[k]
		id, ok := c.known[k]
		if !ok {
			continue
		}
		d := c.deviceLocked(id)
		if e.other.IsValid() {
			notices = append(notices, c.disputeLocked(d, e.from, e.other))
			continue
		}
		_, n := c.locateLocked(d, e.answer, e.from, e.at)
		notices = append(notices, n)
	}
	c.early = nil
	return join(notices...)
}

// disputeLocked marks the device disputed by addresses a and b. It loses
// its address and is not located again until the client is made anew or
// SetKnown forgets it.
func (c *Client) disputeLocked(d *device, a, b netip.Addr) func() {
	before := d.Device
	if c.byAddr[d.Addr] == d {
		delete(c.byAddr, d.Addr)
	}
	d.Addr, d.Reachable = netip.Addr{}, false
	d.disputed = [2]netip.Addr{a, b}
	c.stats.Disputed++
	notice := c.deviceNotice(before.Addr.IsValid(), d.Device, nil)
	return join(notice, c.disputeLineLocked(d, b))
}

// disputeLineLocked is the warning about a disputed device (from: the
// address that answered now), or nil within the device's warning limit.
func (c *Client) disputeLineLocked(d *device, from netip.Addr) func() {
	ok, left := c.warnLocked(d)
	if !ok {
		return nil
	}
	id, pair := d.ID, d.disputed
	return func() {
		ev := c.log.Warn().Str("device", id).Stringer("addr", pair[0]).Stringer("other", pair[1])
		if from != pair[0] && from != pair[1] {
			ev = ev.Stringer("also", from)
		}
		if left > 0 {
			ev = ev.Uint64("not_logged", left)
		}
		ev.Msg("two addresses answered LAN scans for this light before it was located: using neither, the light stays on " +
			"the cloud until the bridge restarts (a second device with the same id, or something on the network answering " +
			"in its name: find out what is at both addresses; listing the lights' own addresses in LAN_SCAN_TARGETS instead " +
			"of the multicast group accepts answers from those addresses only)")
	}
}

// maxSources bounds the sources the log limit remembers; a flood from more
// (spoofed) addresses shares one line among the rest.
const maxSources = 1024

// rejectLog limits the lines about refused datagrams to one per source per
// rejectLogEvery, each counting those left out. Guarded by Client.mu.
type rejectLog struct {
	every time.Duration
	by    map[netip.Addr]*rejectSource // the invalid Addr: every source beyond maxSources
	swept time.Time
}

type rejectSource struct {
	last time.Time
	left uint64
}

// allow says whether a line about this source may be logged now and how
// many were left out; shared means it is counted with the sources beyond
// maxSources.
func (r *rejectLog) allow(from netip.Addr, now time.Time) (ok bool, left uint64, shared bool) {
	if r.by == nil {
		r.by = map[netip.Addr]*rejectSource{}
	}
	s := r.by[from]
	if s == nil {
		if len(r.by) >= maxSources && now.Sub(r.swept) >= r.every {
			r.sweep(now)
		}
		if len(r.by) >= maxSources {
			from = netip.Addr{}
			s = r.by[from]
		}
		if s == nil {
			s = &rejectSource{}
			r.by[from] = s
		}
	}
	shared = !from.IsValid()
	if !s.last.IsZero() && now.Sub(s.last) < r.every {
		s.left++
		return false, 0, shared
	}
	left = s.left
	s.last, s.left = now, 0
	return true, left, shared
}

// sweep forgets the sources whose limit has passed and that owe no count.
func (r *rejectLog) sweep(now time.Time) {
	r.swept = now
	for a, s := range r.by {
		if s.left == 0 && now.Sub(s.last) >= r.every {
			delete(r.by, a)
		}
	}
}

// sourceName is a source address for the log.
func sourceName(a netip.Addr, shared bool) string {
	if shared {
		return a.String() + " (and others: too many sources to count each)"
	}
	return a.String()
}
