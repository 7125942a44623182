// Package lansim simulates lights that offer the vendor's LAN interface,
// for tests, benchmarks and the demo. Each device listens on a loopback
// address of its own (on Linux all of 127/8 reaches this host) and speaks
// internal/lan's wire format. Devices can lose, delay or repeat datagrams,
// be switched from outside, go silent and move. A device may keep its state
// in the cloud simulator, so LAN and cloud changes show on both sides.
//
// It answers only the address a request came from and never scans. Only
// tests, the demo and cmd/lansim use it.
package lansim

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/lan"
)

// Store is where linked devices keep their state, such as *cloudsim.Sim.
type Store interface {
	Value(device, instance string) (any, bool)
	SetLocal(device, instance string, v any) error
}

// Options configure a simulator.
type Options struct {
	// ScanPort and CommandPort are the ports every device listens on
	// (production: 4001 and 4003); 0 picks free ones, shared by all.
	ScanPort, CommandPort int
	// ReplyPort is where answers go on the requester's address (the real
	// devices: 4002); 0 answers to the port the request came from.
	ReplyPort int
	// Cloud holds the state of devices added with Linked set.
	Cloud Store
	// Seed makes SetLoss reproducible.
	Seed   uint64
	Logger zerolog.Logger
	// Clock is told of the devices' work in hand, so a test clock counts a
	// request until its answer is sent or dropped; nil reports nothing. The
	// simulated delay runs on the system's time regardless.
	Clock clock.Clock
}

// Spec describes a simulated device.
type Spec struct {
	ID, SKU string
	// Addr is its own loopback address; invalid: the next free one from
	// 127.0.0.2.
	Addr netip.Addr
	// State is its initial status (unlinked devices).
	State lan.Status
	// Linked keeps the device's state in Options.Cloud under its ID.
	Linked bool
	// OmitIP leaves "ip" out of the scan answer, as some firmware does.
	OmitIP bool
}

// Received is one datagram a device took in.
type Received struct {
	At      time.Time
	From    netip.AddrPort
	Request lan.Request // Cmd empty: malformed
}

// Sim is a set of simulated LAN devices. Its methods are safe for
// concurrent use.
type Sim struct {
	opts Options
	log  zerolog.Logger

	mu        sync.Mutex
	scanPort  int
	cmdPort   int
	devices   map[string]*device
	order     []string
	nextAddr  byte
	onReceive func(id string, r Received)
	replyPort int
	closed    bool
}

// New starts the devices. If another test's simulator has taken a free
// port on one device's address, it starts over on new ports.
func New(opts Options, specs ...Spec) (*Sim, error) {
	for attempt := 0; ; attempt++ {
		s, err := start(opts, specs)
		if err == nil || attempt == 20 || !errors.Is(err, syscall.EADDRINUSE) || (opts.ScanPort != 0 && opts.CommandPort != 0) {
			return s, err
		}
	}
}

func start(opts Options, specs []Spec) (*Sim, error) {
	s := &Sim{opts: opts, log: opts.Logger.With().Str("component", "lansim").Logger(),
		scanPort: opts.ScanPort, cmdPort: opts.CommandPort, replyPort: opts.ReplyPort, devices: map[string]*device{}, nextAddr: 2,
	}
	for _, spec := range specs {
		if err := s.Add(spec); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// ScanPort and CommandPort are the ports the devices listen on (0 until
// the first device is added, when Options named none).
func (s *Sim) ScanPort() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scanPort
}

// CommandPort: see ScanPort.
func (s *Sim) CommandPort() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmdPort
}

// Add starts one more device (one the user just paired).
func (s *Sim) Add(spec Spec) error {
	if spec.ID == "" || spec.SKU == "" {
		return errors.New("lansim: a device needs an id and an sku")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("lansim: closed")
	}
	if _, dup := s.devices[spec.ID]; dup {
		return fmt.Errorf("lansim: device %s exists", spec.ID)
	}
	if spec.Linked && s.opts.Cloud == nil {
		return fmt.Errorf("lansim: device %s is linked but Options.Cloud is nil", spec.ID)
	}
	if !spec.Addr.IsValid() {
		spec.Addr = s.freeAddrLocked()
	}
	if !spec.Addr.IsLoopback() {
		return fmt.Errorf("lansim: device %s: %s is not a loopback address; the simulator stays on this host", spec.ID, spec.Addr)
	}
	d := &device{sim: s, spec: spec, state: spec.State}
	if err := s.bindLocked(d, spec.Addr); err != nil {
		return err
	}
	s.devices[spec.ID] = d
	s.order = append(s.order, spec.ID)
	d.start()
	return nil
}

func (s *Sim) freeAddrLocked() netip.Addr {
	for {
		a := netip.AddrFrom4([4]byte{127, 0, 0, s.nextAddr})
		s.nextAddr++
		taken := false
		for _, d := range s.devices {
			taken = taken || d.addr() == a
		}
		if !taken {
			return a
		}
	}
}

// bindLocked opens the device's two sockets on addr, choosing the shared
// ports on the first bind.
func (s *Sim) bindLocked(d *device, addr netip.Addr) error {
	scan, err := listen(addr, s.scanPort)
	if err != nil {
		return fmt.Errorf("lansim: device %s: scan port: %w", d.spec.ID, err)
	}
	cmd, err := listen(addr, s.cmdPort)
	if err != nil {
		scan.Close()
		return fmt.Errorf("lansim: device %s: command port: %w", d.spec.ID, err)
	}
	if s.scanPort == 0 {
		s.scanPort = port(scan)
	}
	if s.cmdPort == 0 {
		s.cmdPort = port(cmd)
	}
	d.scanConn, d.cmdConn = scan, cmd
	d.unlisten = []func(){clock.Listening(s.opts.Clock, localAddr(scan)), clock.Listening(s.opts.Clock, localAddr(cmd))}
	return nil
}

func listen(addr netip.Addr, p int) (*net.UDPConn, error) {
	return net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, uint16(p))))
}

func port(c *net.UDPConn) int { return c.LocalAddr().(*net.UDPAddr).Port }

// localAddr is the address a socket is bound to.
func localAddr(c *net.UDPConn) netip.AddrPort {
	ap := c.LocalAddr().(*net.UDPAddr).AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// Close stops every device and waits for them.
func (s *Sim) Close() error {
	s.mu.Lock()
	s.closed = true
	devs := make([]*device, 0, len(s.devices))
	for _, d := range s.devices {
		devs = append(devs, d)
	}
	s.mu.Unlock()
	for _, d := range devs {
		d.close()
	}
	return nil
}

// lookup finds a device or says which ids exist.
func (s *Sim) lookup(id string) (*device, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.devices[id]
	if d == nil {
		return nil, fmt.Errorf("lansim: no device %q; the simulator has %v", id, s.order)
	}
	return d, nil
}

// OnReceive calls fn for every datagram a device takes in (not those it
// loses or, turned off, never hears), from the device's goroutine, before
// it acts on it. Benchmarks time commands with it.
func (s *Sim) OnReceive(fn func(id string, r Received)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onReceive = fn
}

// SetReplyPort changes Options.ReplyPort (a test learns the client's port
// after it learnt the simulator's).
func (s *Sim) SetReplyPort(p int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replyPort = p
}

// Addr is the device's current address.
func (s *Sim) Addr(id string) (netip.Addr, error) {
	d, err := s.lookup(id)
	if err != nil {
		return netip.Addr{}, err
	}
	return d.addr(), nil
}

// Move puts the device on another loopback address, as a new DHCP lease
// would: it answers there from now on.
func (s *Sim) Move(id string, to netip.Addr) error {
	d, err := s.lookup(id)
	if err != nil {
		return err
	}
	if !to.IsLoopback() {
		return fmt.Errorf("lansim: move %s: %s is not a loopback address", id, to)
	}
	d.close()
	s.mu.Lock()
	defer s.mu.Unlock()
	d.mu.Lock()
	d.spec.Addr = to
	d.stopped = false
	d.mu.Unlock()
	if err := s.bindLocked(d, to); err != nil {
		return err
	}
	d.start()
	return nil
}

// linkedStatus is a linked device's status, read from the store.
func linkedStatus(st Store, id string) lan.Status {
	var s lan.Status
	if v, ok := intValue(st, id, capability.InstancePower); ok {
		s.On = v == 1
	}
	if v, ok := intValue(st, id, capability.InstanceBrightness); ok {
		s.Brightness, s.HasBrightness = int(v), true
	}
	if v, ok := intValue(st, id, capability.InstanceColorRGB); ok {
		s.Color, s.HasColor = lan.RGBOf(v), true
	}
	if v, ok := intValue(st, id, capability.InstanceColorTemperatureK); ok {
		s.Kelvin, s.HasKelvin = int(v), true
	}
	return s
}

func intValue(st Store, id, instance string) (int64, bool) {
	v, ok := st.Value(id, instance)
	if !ok {
		return 0, false
	}
	n, ok := v.(int64)
	return n, ok
}
