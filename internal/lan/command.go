package lan

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"cloud2mqtt/internal/clock"
)

// Scan sends the scan to every target and opens the window in which
// answers are accepted. It does not wait for answers: they arrive at the
// reader (OnDevice, Devices). Targets that could not be resolved or sent
// to are returned joined; the others were scanned.
func (c *Client) Scan(ctx context.Context) error {
	r, errs := resolve(ctx, c.cfg.Targets, c.cfg.ScanPort, localBroadcasts)
	c.mu.Lock()
	now := c.cfg.Clock.Now()
	if now.After(c.window.until) {
		c.window = scanWindow{from: map[netip.Addr]bool{}}
	}
	c.window.until = now.Add(scanAnswerWindow)
	c.scanned = now
	c.window.anySource = c.window.anySource || r.anySource
	for _, d := range r.dests {
		c.window.from[d.Addr()] = true
	}
	c.mu.Unlock()
	for _, d := range r.dests {
		if err := c.send(d, c.scanMsg); err != nil {
			errs = append(errs, fmt.Errorf("lan: scan %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// Discover scans and waits for answers (the -check's scan), then lists the
// devices found: for wait at most, less once every known device answered.
func (c *Client) Discover(ctx context.Context, wait time.Duration) ([]Device, error) {
	err := c.Scan(ctx)
	t := c.cfg.Clock.NewTimer(wait)
	defer t.Stop()
	tick := c.cfg.Clock.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !c.allFound() {
		select {
		case <-t.C():
			return c.Devices(), err
		case <-ctx.Done():
			return c.Devices(), err
		case <-c.closed:
			return c.Devices(), err
		case <-tick.C():
		}
	}
	return c.Devices(), err
}

// allFound says whether every known device has answered a scan.
func (c *Client) allFound() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	found := 0
	for _, d := range c.devices {
		if d.Addr.IsValid() {
			found++
		}
	}
	return len(c.known) > 0 && found >= len(c.known)
}

// RunScans scans at once and then at every whole multiple of interval
// since the zero time (on the clock) until ctx ends, logging failures; the
// caller owns the goroutine. An interval under 1 s is 1 s. Whole multiples
// of the interval fall on the poller's read grid whenever the grid divides
// the interval (it does at the defaults): the rounds share the wake-ups of
// the cloud reads instead of adding their own.
func (c *Client) RunScans(ctx context.Context, interval time.Duration) {
	every := max(interval, time.Second)
	t := c.cfg.Clock.NewTimer(every)
	defer t.Stop()
	for {
		if err := c.Scan(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn().Err(err).Msg("LAN scan incomplete")
		}
		t.ResetAt(nextMultiple(c.cfg.Clock.Now(), every))
		select {
		case <-ctx.Done():
			return
		case <-c.closed:
			return
		case <-t.C():
		}
	}
}

// RunPolls reads every found device's status at every whole multiple of
// interval since the zero time (on the clock, as RunScans) until ctx ends,
// the devices of a round at once; the caller owns the goroutine. An
// interval under 100 ms is 100 ms. read does one device's read with
// Status; the router's takes the registry's sequence number before calling
// Status, so that a read sent before a command cannot overwrite the
// command's value. A device that does not answer is marked unreachable by
// Status (one try while it already is, so a silent device costs one
// datagram a round).
func (c *Client) RunPolls(ctx context.Context, interval time.Duration, read func(ctx context.Context, id string)) {
	every := max(interval, 100*time.Millisecond)
	t := c.cfg.Clock.NewTimer(every)
	defer t.Stop()
	for {
		t.ResetAt(nextMultiple(c.cfg.Clock.Now(), every))
		select {
		case <-ctx.Done():
			return
		case <-c.closed:
			return
		case <-t.C():
		}
		var wg sync.WaitGroup
		for _, d := range c.Devices() {
			wg.Go(func() { read(ctx, d.ID) })
		}
		wg.Wait()
	}
}

// nextMultiple is the first whole multiple of every since the zero time
// after now (strictly: a round that ran at one is not run again).
func nextMultiple(now time.Time, every time.Duration) time.Time {
	return clock.Ceil(now.Add(time.Nanosecond), every)
}

// located is a found device's record, or ErrNotLocal.
func (c *Client) located(id string) (*device, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.devices[id]
	if d == nil || !d.Addr.IsValid() {
		return nil, false, fmt.Errorf("lan: %s: %w (no scan answer)", id, ErrNotLocal)
	}
	return d, d.Reachable, nil
}

// Status reads the device's status: a status request and its answer, up to
// Tries tries of ConfirmTimeout each (one while the device is marked
// unreachable). No answer marks it unreachable and returns ErrNoAnswer.
func (c *Client) Status(ctx context.Context, id string) (Status, error) {
	d, reachable, err := c.located(id)
	if err != nil {
		return Status{}, err
	}
	tries := c.cfg.Tries
	if !reachable {
		tries = 1
	}
	s, ok, err := c.ask(ctx, d, tries)
	if err != nil || ok {
		return s, err
	}
	c.markUnreachable(d)
	return Status{}, fmt.Errorf("lan: read %s: %w in %d tries", id, ErrNoAnswer, tries)
}

// Send sends the commands to the device, then a status request, and
// returns the status that shows them all. A try that gets no answer, or
// only answers that do not show the commands, sends them again (they set
// absolute values, so a repeat is harmless). ErrNotLocal: the device is
// not found or marked unreachable, nothing was sent; ErrNoAnswer: no answer
// in Tries tries, the device is now marked unreachable; ErrNotConfirmed:
// answers came but none showed the commands (the last one is returned).
// One device's commands are sent one Send at a time.
func (c *Client) Send(ctx context.Context, id string, cmds ...Command) (Status, error) {
	if len(cmds) == 0 {
		return Status{}, errors.New("lan: send: no command")
	}
	msgs := make([][]byte, len(cmds))
	for i, cmd := range cmds {
		if err := cmd.Validate(); err != nil {
			return Status{}, err
		}
		msgs[i] = AppendCommand(nil, cmd)
	}
	d, reachable, err := c.located(id)
	if err != nil {
		return Status{}, err
	}
	if !reachable {
		return Status{}, fmt.Errorf("lan: %s: %w (marked unreachable after an unanswered request)", id, ErrNotLocal)
	}
	select {
	case d.busy <- struct{}{}:
		defer func() { <-d.busy }()
	case <-ctx.Done():
		return Status{}, ctx.Err()
	case <-c.closed:
		return Status{}, ErrClosed
	}
	if !c.Reachable(id) { // the Send before this one found it silent
		return Status{}, fmt.Errorf("lan: %s: %w (marked unreachable after an unanswered request)", id, ErrNotLocal)
	}
	answers, done := c.listen(d)
	defer done()
	var last Status
	answered := false
	for range c.cfg.Tries {
		for _, m := range msgs {
			if _, err := c.paced(ctx, d, m); err != nil {
				return Status{}, err
			}
		}
		s, got, ok, err := c.confirm(ctx, d, answers, cmds)
		if err != nil {
			return Status{}, err
		}
		if got {
			last, answered = s, true
		}
		if ok {
			c.count(&c.stats.Confirmed)
			return s, nil
		}
	}
	if answered {
		c.count(&c.stats.NotConfirmed)
		return last, fmt.Errorf("lan: %s %v: %w", id, cmds, ErrNotConfirmed)
	}
	c.markUnreachable(d)
	return Status{}, fmt.Errorf("lan: %s %v: %w in %d tries", id, cmds, ErrNoAnswer, c.cfg.Tries)
}

func (c *Client) count(n *uint64) {
	c.mu.Lock()
	*n++
	c.mu.Unlock()
}

// listen registers for the device's status answers until done is called.
func (c *Client) listen(d *device) (<-chan Status, func()) {
	ch := make(chan Status, 8)
	c.mu.Lock()
	d.waiters[ch] = struct{}{}
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		delete(d.waiters, ch)
		c.mu.Unlock()
	}
}

// confirm asks for the status and waits one ConfirmTimeout for an answer
// that shows the commands. An answer that does not (a device still busy
// with the command, or an answer to an older request) is asked again once
// a fifth of the timeout later, twice at most; got says whether any answer
// came, s is the last one.
func (c *Client) confirm(ctx context.Context, d *device, answers <-chan Status, cmds []Command) (s Status, got, ok bool, err error) {
	if _, err := c.paced(ctx, d, c.stateMsg); err != nil {
		return Status{}, false, false, err
	}
	t := c.cfg.Clock.NewTimer(c.cfg.ConfirmTimeout)
	defer t.Stop()
	var again <-chan time.Time
	var againT clock.Timer
	defer func() {
		if againT != nil {
			againT.Stop()
		}
	}()
	asked := 1
	for {
		select {
		case s = <-answers:
			got = true
			if s.Shows(cmds...) {
				return s, true, true, nil
			}
			if again == nil && asked < 3 {
				if againT == nil {
					againT = c.cfg.Clock.NewTimer(c.cfg.ConfirmTimeout / 5)
				} else {
					againT.Reset(c.cfg.ConfirmTimeout / 5)
				}
				again = againT.C()
			}
		case <-again:
			again = nil
			asked++
			if _, err := c.paced(ctx, d, c.stateMsg); err != nil {
				return s, got, false, err
			}
		case <-t.C():
			return s, got, false, nil
		case <-ctx.Done():
			return s, got, false, ctx.Err()
		case <-c.closed:
			return s, got, false, ErrClosed
		}
	}
}

// await waits one ConfirmTimeout for any answer; ok false when none came.
func (c *Client) await(ctx context.Context, answers <-chan Status) (Status, bool, error) {
	t := c.cfg.Clock.NewTimer(c.cfg.ConfirmTimeout)
	defer t.Stop()
	select {
	case s := <-answers:
		return s, true, nil
	case <-t.C():
		return Status{}, false, nil
	case <-ctx.Done():
		return Status{}, false, ctx.Err()
	case <-c.closed:
		return Status{}, false, ErrClosed
	}
}

// paced sends one datagram to the device's command port within its pace.
func (c *Client) paced(ctx context.Context, d *device, msg []byte) (netip.AddrPort, error) {
	if err := clock.Wait(ctx, c.cfg.Clock, d.pace); err != nil {
		return netip.AddrPort{}, err
	}
	c.mu.Lock()
	addr := d.Addr
	c.mu.Unlock()
	if !addr.IsValid() {
		return netip.AddrPort{}, fmt.Errorf("lan: %s: %w (its address went to another device)", d.ID, ErrNotLocal)
	}
	dest := netip.AddrPortFrom(addr, uint16(c.cfg.CommandPort))
	return dest, c.send(dest, msg)
}

func (c *Client) send(dest netip.AddrPort, msg []byte) error {
	select {
	case <-c.closed:
		return ErrClosed
	default:
	}
	_, err := c.conn.WriteToUDPAddrPort(msg, dest)
	if err == nil {
		c.count(&c.stats.Sent)
	}
	return err
}
