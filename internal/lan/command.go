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
// answers are accepted; answers arrive through OnDevice. Targets that could
// not be resolved or sent to are returned as joined errors.
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

// Discover scans, waits up to wait (less once every known device answered)
// and lists the devices found; -check uses it.
func (c *Client) Discover(ctx context.Context, wait time.Duration) ([]Device, error) {
	err := c.Scan(ctx)
	t := c.cfg.Clock.NewTimer(wait)
	defer t.Stop()
	tick := c.cfg.Clock.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !c.allFound() {
		tick.Done() // the last tick's check is made
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
// (at least 1 s) until ctx ends. Aligning to whole multiples lets the scans
// share the poller's wake-ups instead of adding their own.
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

// RunPolls calls read for every found device at every whole multiple of
// interval (at least 100 ms) until ctx ends, a round's devices at once.
// A device already unreachable gets one try, so a silent one costs one
// datagram a round.
func (c *Client) RunPolls(ctx context.Context, interval time.Duration, read func(ctx context.Context, id string)) {
	every := max(interval, 100*time.Millisecond)
	t := c.cfg.Clock.NewTimer(every)
	defer t.Stop()
	var round []*task // the last round's reads: in hand until the next round is set
	for {
		t.ResetAt(nextMultiple(c.cfg.Clock.Now(), every))
		for _, tk := range round {
			tk.end()
		}
		round = round[:0]
		select {
		case <-ctx.Done():
			return
		case <-c.closed:
			return
		case <-t.C():
		}
		var wg sync.WaitGroup
		for _, d := range c.Devices() {
			tk := newTask(c.cfg.Clock, "lan: a poll of "+d.ID)
			round = append(round, tk)
			wg.Go(func() { read(withTask(ctx, tk), d.ID) })
		}
		if len(round) > 0 {
			t.Done() // the reads hold the round's work now
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

// Status reads the device's status, with one try while it is marked
// unreachable. No answer marks it unreachable and returns ErrNoAnswer.
func (c *Client) Status(ctx context.Context, id string) (Status, error) {
	ctx, end := c.working(ctx, "lan: a status read of "+id)
	defer end()
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

// Send sends the commands and a status request, and returns the status
// that shows them all. An unconfirmed try is repeated, which is harmless
// because commands set absolute values. It returns ErrNotLocal when nothing
// was sent, ErrNoAnswer when the device stayed silent and ErrNotConfirmed
// (with the last status) when no answer showed the commands.
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
	ctx, end := c.working(ctx, "lan: a command to "+id)
	defer end()
	if err := c.acquire(ctx, d); err != nil {
		return Status{}, err
	}
	defer func() { <-d.busy }()
	if !c.Reachable(id) { // the Send before this one found it silent
		return Status{}, fmt.Errorf("lan: %s: %w (marked unreachable after an unanswered request)", id, ErrNotLocal)
	}
	in, done := c.listen(d)
	defer done()
	var last Status
	answered := false
	for range c.cfg.Tries {
		for _, m := range msgs {
			if _, err := c.paced(ctx, d, in, m); err != nil {
				return Status{}, err
			}
		}
		s, got, ok, err := c.confirm(ctx, d, in, cmds)
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

// working is ctx carrying the task that waits let go of: the caller's, or
// one held for this call until end is called.
func (c *Client) working(ctx context.Context, what string) (_ context.Context, end func()) {
	if taskOf(ctx) != nil {
		return ctx, func() {}
	}
	tk := newTask(c.cfg.Clock, what)
	return withTask(ctx, tk), tk.end
}

// acquire takes the device's turn (d.busy) for a Send. While another Send
// has it, the caller's task is let go: that Send may be waiting on the clock.
func (c *Client) acquire(ctx context.Context, d *device) error {
	select {
	case d.busy <- struct{}{}:
		return nil
	default:
	}
	tk := taskOf(ctx)
	tk.wait()
	defer tk.wake()
	select {
	case d.busy <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closed:
		return ErrClosed
	}
}

func (c *Client) count(n *uint64) {
	c.mu.Lock()
	*n++
	c.mu.Unlock()
}

// inbox holds a waiter's status answers. Those that come while it paces are
// moved to kept, so their work in hand does not stop a test's clock.
type inbox struct {
	ch   chan answer
	kept []Status
}

// inboxSize bounds the answers a waiter holds (ch) or keeps: one that is
// not reading has enough of them.
const inboxSize = 8

// pop takes the oldest kept answer.
func (in *inbox) pop() (Status, bool) {
	if len(in.kept) == 0 {
		return Status{}, false
	}
	a := in.kept[0]
	in.kept = in.kept[1:]
	return a, true
}

// listen registers for the device's status answers until done is called;
// the answers not taken by then are let go.
func (c *Client) listen(d *device) (*inbox, func()) {
	in := &inbox{ch: make(chan answer, inboxSize)}
	c.mu.Lock()
	d.waiters[in.ch] = struct{}{}
	c.mu.Unlock()
	return in, func() {
		c.mu.Lock()
		delete(d.waiters, in.ch)
		c.mu.Unlock()
		for {
			select {
			case a := <-in.ch:
				a.done()
			default:
				return
			}
		}
	}
}

// confirm asks for the status and waits one ConfirmTimeout for an answer
// that shows the commands. A device may still be busy or answering an older
// request, so a non-matching answer is asked again up to twice.
func (c *Client) confirm(ctx context.Context, d *device, in *inbox, cmds []Command) (s Status, got, ok bool, err error) {
	if _, err := c.paced(ctx, d, in, c.stateMsg); err != nil {
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
	// heard takes an answer in: true when it shows the commands.
	heard := func(a Status) bool {
		s, got = a, true
		if s.Shows(cmds...) {
			return true
		}
		if again == nil && asked < 3 {
			if againT == nil {
				againT = c.cfg.Clock.NewTimer(c.cfg.ConfirmTimeout / 5)
			} else {
				againT.Reset(c.cfg.ConfirmTimeout / 5)
			}
			again = againT.C()
		}
		return false
	}
	// The caller's task is let go while waiting and taken again before what
	// woke it (an answer, a timer's value) is let go.
	tk := taskOf(ctx)
	for {
		for a, ok := in.pop(); ok; a, ok = in.pop() {
			if heard(a) {
				return s, true, true, nil
			}
		}
		tk.wait()
		select {
		case a := <-in.ch:
			tk.wake()
			a.done()
			if heard(a.s) {
				return s, true, true, nil
			}
		case <-again:
			tk.wake()
			again = nil
			asked++
			againT.Done()
			if _, err := c.paced(ctx, d, in, c.stateMsg); err != nil {
				return s, got, false, err
			}
		case <-t.C():
			tk.wake()
			return s, got, false, nil
		case <-ctx.Done():
			tk.wake()
			return s, got, false, ctx.Err()
		case <-c.closed:
			tk.wake()
			return s, got, false, ErrClosed
		}
	}
}

// await waits one ConfirmTimeout for any answer; ok false when none came.
// The caller's task is let go meanwhile, as in confirm.
func (c *Client) await(ctx context.Context, in *inbox) (Status, bool, error) {
	if a, ok := in.pop(); ok {
		return a, true, nil
	}
	t := c.cfg.Clock.NewTimer(c.cfg.ConfirmTimeout)
	defer t.Stop()
	tk := taskOf(ctx)
	tk.wait()
	select {
	case a := <-in.ch:
		tk.wake()
		a.done()
		return a.s, true, nil
	case <-t.C():
		tk.wake()
		return Status{}, false, nil
	case <-ctx.Done():
		tk.wake()
		return Status{}, false, ctx.Err()
	case <-c.closed:
		tk.wake()
		return Status{}, false, ErrClosed
	}
}

// paced sends one datagram to the device's command port within its pace.
func (c *Client) paced(ctx context.Context, d *device, in *inbox, msg []byte) (netip.AddrPort, error) {
	if err := c.pace(ctx, d, in); err != nil {
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

// pace waits for the device's pace. It lets go of the caller's task while
// waiting so a test can jump the clock, and keeps answers that come meanwhile.
func (c *Client) pace(ctx context.Context, d *device, in *inbox) (err error) {
	now := c.cfg.Clock.Now()
	r := d.pace.ReserveN(now, 1) // OK: the burst is at least 1
	delay := r.DelayFrom(now)
	if delay <= 0 {
		return nil
	}
	t := c.cfg.Clock.NewTimer(delay)
	tk := taskOf(ctx)
	tk.wait()
	for paced := false; !paced && err == nil; {
		select {
		case <-t.C():
			paced = true
		case a := <-in.ch:
			tk.wake()
			if len(in.kept) < inboxSize {
				in.kept = append(in.kept, a.s)
			}
			a.done()
			tk.wait()
		case <-ctx.Done():
			err = ctx.Err()
		case <-c.closed:
			err = ErrClosed
		}
	}
	tk.wake()
	t.Stop()
	if err != nil {
		r.CancelAt(c.cfg.Clock.Now())
	}
	return err
}

// send writes one datagram, reported to the clock before it goes.
func (c *Client) send(dest netip.AddrPort, msg []byte) error {
	select {
	case <-c.closed:
		return ErrClosed
	default:
	}
	clock.Sent(c.cfg.Clock, dest, msg)
	if _, err := c.conn.WriteToUDPAddrPort(msg, dest); err != nil {
		clock.Arrived(c.cfg.Clock, dest, msg)() // not sent: not on its way
		return err
	}
	c.count(&c.stats.Sent)
	return nil
}
