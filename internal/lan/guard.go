package lan

// What guards the client against the rest of the network (docs/lan.md,
// "What is guarded"): a device's address is not taken over by whatever
// answers a scan in its name, and nothing a stranger sends can make the
// log grow faster than a line a second per source address.

import (
	"context"
	"net/netip"
	"time"
)

// claim is a scan answer that named a located device from another address.
type claim struct {
	from   netip.Addr
	answer ScanAnswer
}

// contestLocked takes a scan answer for a device located at another
// address. The device moves only when its known address no longer
// answers: unless that address answered since this scan went out (or was
// probed for it already), a status request goes there first, from a
// goroutine of the client's (probe), and the claim waits for its outcome.
// A claim while a probe is under way, or against an address that answers,
// is refused: counted (Contested) and logged once a conflictLogEvery.
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

// probe asks the device's known address for its status (Tries tries of
// ConfirmTimeout): an answer keeps the device there and refuses the claim;
// silence moves it to the claiming address, which answered the scan.
func (c *Client) probe(d *device, cl claim, tk *task) {
	defer c.wg.Done()
	defer tk.end()
	_, answered, err := c.ask(withTask(context.Background(), tk), d, c.cfg.Tries)
	c.mu.Lock()
	d.probing = false
	if err != nil || c.devices[d.ID] != d || !d.Addr.IsValid() {
		// Closed, forgotten (SetKnown), or its address went to another
		// device meanwhile: the next scan decides afresh.
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

// ask sends status requests to the device's known address, up to tries
// tries of ConfirmTimeout each, and returns the first answer; answered is
// false when none came.
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

// conflictLineLocked is the warning about a refused claim, or nil when the
// device had one in the last conflictLogEvery; it counts those left out.
func (c *Client) conflictLineLocked(d *device, other netip.Addr) func() {
	now := c.cfg.Clock.Now()
	if !d.conflictAt.IsZero() && now.Sub(d.conflictAt) < conflictLogEvery {
		d.conflictsLeft++
		return nil
	}
	left := d.conflictsLeft
	d.conflictAt, d.conflictsLeft = now, 0
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

// maxSources bounds the source addresses the datagram log limit
// remembers: a flood from more addresses (spoofed ones) shares one line a
// rejectLogEvery among the rest.
const maxSources = 1024

// rejectLog limits the log lines about refused datagrams: one per source
// address each rejectLogEvery, at any level, each counting the ones left
// out since the last. Guarded by Client.mu.
type rejectLog struct {
	every time.Duration
	by    map[netip.Addr]*rejectSource // the invalid Addr: every source beyond maxSources
	swept time.Time
}

type rejectSource struct {
	last time.Time
	left uint64
}

// allow says whether a line about a datagram from this source may be
// logged now, and how many were left out before it; shared says the source
// is counted with every source beyond maxSources.
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
