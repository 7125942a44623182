package lansim

import (
	"errors"
	"maps"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/lan"
)

// receivedLimit bounds a device's log of received datagrams.
const receivedLimit = 10000

// device is one simulated light: its sockets, state and faults, guarded by
// mu (the sockets are replaced only by Move, between close and start).
type device struct {
	sim *Sim
	wg  sync.WaitGroup

	scanConn, cmdConn *net.UDPConn
	unlisten          []func() // the sockets' clock.Listening

	mu        sync.Mutex
	spec      Spec
	state     lan.Status
	stopped   bool
	quit      chan struct{} // closed when stopped: delayed acts are dropped
	off       bool
	loss      float64
	dropNext  int
	delay     time.Duration
	duplicate bool
	scanMute  bool
	rng       *rand.Rand
	received  []Received
	counts    map[string]int
}

func (d *device) addr() netip.Addr {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.spec.Addr
}

func (d *device) start() {
	d.mu.Lock()
	if d.rng == nil {
		d.rng = rand.New(rand.NewPCG(d.sim.opts.Seed, uint64(len(d.spec.ID))<<32|uint64(d.spec.Addr.As4()[3])))
		d.counts = map[string]int{}
	}
	d.quit = make(chan struct{})
	d.mu.Unlock()
	d.wg.Add(2)
	go d.read(d.scanConn, true)
	go d.read(d.cmdConn, false)
}

// close stops the readers, drops the delayed acts and waits for them all.
func (d *device) close() {
	d.mu.Lock()
	d.stopped = true
	select {
	case <-d.quit: // closed twice
	default:
		close(d.quit)
	}
	d.mu.Unlock()
	d.scanConn.Close()
	d.cmdConn.Close()
	for _, stop := range d.unlisten { // what was on its way is lost with the sockets
		stop()
	}
	d.wg.Wait()
}

// readBuffer holds any UDP datagram whole, so that it is reported
// (clock.Arrived) as it was sent; DecodeRequest refuses one too long.
const readBuffer = 1 << 16

func (d *device) read(conn *net.UDPConn, scanSide bool) {
	defer d.wg.Done()
	at := localAddr(conn)
	buf := make([]byte, readBuffer)
	for {
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		done := clock.Arrived(d.sim.opts.Clock, at, buf[:n])
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		d.receive(conn, append([]byte(nil), buf[:n]...), from, scanSide, done)
	}
}

// receive takes one datagram in, unless the device is off or loses it, and
// acts on it now or after the delay; done ends its work in hand.
func (d *device) receive(conn *net.UDPConn, b []byte, from netip.AddrPort, scanSide bool, done func()) {
	later := false
	defer func() {
		if !later {
			done()
		}
	}()
	at := time.Now()
	req, err := lan.DecodeRequest(b)
	d.mu.Lock()
	switch {
	case d.off || d.stopped:
		d.mu.Unlock()
		return
	case d.dropNext > 0:
		d.dropNext--
		d.mu.Unlock()
		return
	case d.loss > 0 && d.rng.Float64() < d.loss:
		d.mu.Unlock()
		return
	}
	r := Received{At: at, From: from, Request: req}
	if len(d.received) >= receivedLimit {
		d.received = d.received[1:]
	}
	d.received = append(d.received, r)
	cmd := req.Cmd
	if err != nil {
		cmd = "malformed"
	}
	d.counts[cmd]++
	delay, id, quit := d.delay, d.spec.ID, d.quit
	d.mu.Unlock()

	d.sim.mu.Lock()
	hook := d.sim.onReceive
	d.sim.mu.Unlock()
	if hook != nil {
		hook(id, r)
	}
	if err != nil {
		d.sim.log.Debug().Err(err).Str("device", id).Msg("malformed datagram ignored")
		return
	}
	if delay <= 0 {
		d.act(conn, req, from, scanSide)
		return
	}
	d.wg.Add(1)
	later = true
	go func() {
		defer d.wg.Done()
		defer done()
		t := time.NewTimer(delay) // the system's time: the device's own slowness
		defer t.Stop()
		select {
		case <-t.C:
			d.act(conn, req, from, scanSide)
		case <-quit: // stopped or moved meanwhile: dropped
		}
	}()
}

// act answers or applies a request: scans on the scan port, the rest on
// the command port, as the devices do.
func (d *device) act(conn *net.UDPConn, req lan.Request, from netip.AddrPort, scanSide bool) {
	switch {
	case scanSide && req.Cmd == lan.CmdScan:
		d.mu.Lock()
		if d.scanMute {
			d.mu.Unlock()
			return
		}
		a := lan.ScanAnswer{Device: d.spec.ID, SKU: d.spec.SKU, BLEVersionHard: "3.01.01", BLEVersionSoft: "1.04.06",
			WiFiVersionHard: "1.00.10", WiFiVersionSoft: "1.02.11"}
		if !d.spec.OmitIP {
			a.IP = d.spec.Addr
		}
		d.mu.Unlock()
		d.answer(conn, from, lan.AppendScanAnswer(nil, a))
	case scanSide:
	case req.Cmd == lan.CmdStatus:
		d.answer(conn, from, lan.AppendStatus(nil, d.status()))
	case req.Command.Cmd != "":
		d.apply(req.Command)
	}
}

func (d *device) answer(conn *net.UDPConn, to netip.AddrPort, msg []byte) {
	d.mu.Lock()
	if d.off || d.stopped {
		d.mu.Unlock()
		return
	}
	dup := d.duplicate
	d.mu.Unlock()
	d.sim.mu.Lock()
	p := d.sim.replyPort
	d.sim.mu.Unlock()
	if p != 0 {
		to = netip.AddrPortFrom(to.Addr(), uint16(p))
	}
	clk := d.sim.opts.Clock
	for range 1 + btoi(dup) {
		clock.Sent(clk, to, msg)
		if _, err := conn.WriteToUDPAddrPort(msg, to); err != nil {
			clock.Arrived(clk, to, msg)() // not sent: not on its way
			d.sim.log.Debug().Err(err).Str("device", d.spec.ID).Msg("answer not sent")
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// status is what the device would answer now.
func (d *device) status() lan.Status {
	d.mu.Lock()
	linked, id, st := d.spec.Linked, d.spec.ID, d.state
	d.mu.Unlock()
	if linked {
		return linkedStatus(d.sim.opts.Cloud, id)
	}
	return st
}

// apply carries a command out: on the device's own state, or through the
// linked store (whose validation may refuse it, as a device ignores a
// white outside its range).
func (d *device) apply(c lan.Command) {
	d.mu.Lock()
	linked, id := d.spec.Linked, d.spec.ID
	if !linked {
		d.state = applied(d.state, c)
	}
	d.mu.Unlock()
	if !linked {
		return
	}
	var err error
	switch {
	case c.Cmd == lan.CmdTurn:
		err = d.sim.opts.Cloud.SetLocal(id, capability.InstancePower, int64(c.Value))
	case c.Cmd == lan.CmdBrightness:
		err = d.sim.opts.Cloud.SetLocal(id, capability.InstanceBrightness, int64(c.Value))
	case c.Kelvin == 0:
		err = d.sim.opts.Cloud.SetLocal(id, capability.InstanceColorRGB, c.Color.Int())
	default:
		err = d.sim.opts.Cloud.SetLocal(id, capability.InstanceColorTemperatureK, int64(c.Kelvin))
	}
	if err != nil {
		d.sim.log.Debug().Err(err).Str("device", id).Stringer("command", c).Msg("command ignored")
	}
}

// applied is a status after a command, as a light shows it: a colour
// reports the temperature as 0, a white keeps the last colour.
func applied(s lan.Status, c lan.Command) lan.Status {
	switch c.Cmd {
	case lan.CmdTurn:
		s.On = c.Value == 1
	case lan.CmdBrightness:
		s.Brightness, s.HasBrightness = c.Value, true
	case lan.CmdColor:
		if c.Kelvin == 0 {
			s.Color, s.HasColor = c.Color, true
			s.Kelvin, s.HasKelvin = 0, true
		} else {
			s.Kelvin, s.HasKelvin = c.Kelvin, true
		}
	}
	return s
}

// State is the device's status now.
func (s *Sim) State(id string) (lan.Status, error) {
	d, err := s.lookup(id)
	if err != nil {
		return lan.Status{}, err
	}
	return d.status(), nil
}

// Switch changes the device from outside, as the vendor's app or a wall
// switch would; f edits its status.
func (s *Sim) Switch(id string, f func(*lan.Status)) error {
	d, err := s.lookup(id)
	if err != nil {
		return err
	}
	before := d.status()
	after := before
	f(&after)
	d.mu.Lock()
	linked := d.spec.Linked
	if !linked {
		d.state = after
	}
	d.mu.Unlock()
	if !linked {
		return nil
	}
	st := s.opts.Cloud
	var errs []error
	if after.On != before.On {
		errs = append(errs, st.SetLocal(id, capability.InstancePower, int64(btoi(after.On))))
	}
	if after.HasBrightness && after.Brightness != before.Brightness {
		errs = append(errs, st.SetLocal(id, capability.InstanceBrightness, int64(after.Brightness)))
	}
	if after.HasColor && after.Color != before.Color {
		errs = append(errs, st.SetLocal(id, capability.InstanceColorRGB, after.Color.Int()))
	}
	if after.HasKelvin && after.Kelvin != before.Kelvin && after.Kelvin != 0 {
		errs = append(errs, st.SetLocal(id, capability.InstanceColorTemperatureK, int64(after.Kelvin)))
	}
	return errors.Join(errs...)
}

// with runs f on a device's fault settings.
func (s *Sim) with(id string, f func(d *device)) error {
	d, err := s.lookup(id)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	f(d)
	return nil
}

// SetOff turns the device off at the wall (true: it hears nothing and
// answers nothing) or on again.
func (s *Sim) SetOff(id string, off bool) error {
	return s.with(id, func(d *device) { d.off = off })
}

// SetLoss makes the device lose a fraction (0–1) of the datagrams sent to
// it, drawn from Options.Seed.
func (s *Sim) SetLoss(id string, p float64) error {
	return s.with(id, func(d *device) { d.loss = p })
}

// DropNext makes the device lose the next n datagrams sent to it.
func (s *Sim) DropNext(id string, n int) error {
	return s.with(id, func(d *device) { d.dropNext = n })
}

// SetDelay makes the device act on each datagram that long after it
// arrives (answers included); stopped or moved meanwhile, it drops it.
func (s *Sim) SetDelay(id string, delay time.Duration) error {
	return s.with(id, func(d *device) { d.delay = delay })
}

// SetScanMute makes the device take scans in without answering them (its
// answers lost on the way) while it still answers everything else, or
// answer them again.
func (s *Sim) SetScanMute(id string, mute bool) error {
	return s.with(id, func(d *device) { d.scanMute = mute })
}

// SetDuplicate makes the device send every answer twice.
func (s *Sim) SetDuplicate(id string, dup bool) error {
	return s.with(id, func(d *device) { d.duplicate = dup })
}

// Received is the device's log of datagrams taken in, oldest first.
func (s *Sim) Received(id string) []Received {
	var out []Received
	_ = s.with(id, func(d *device) { out = append(out, d.received...) })
	return out
}

// Counts is how many datagrams of each command the device took in
// ("malformed" for those it could not read).
func (s *Sim) Counts(id string) map[string]int {
	var out map[string]int
	_ = s.with(id, func(d *device) { out = maps.Clone(d.counts) })
	return out
}
