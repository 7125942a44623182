// Package lan speaks the vendor's local UDP interface. It finds lights by a
// scan, matches them to the cloud's devices by id, sends them commands
// (turn, brightness, colorwc) and reads their status, confirming each
// command with a status request. It knows capability values but not the
// registry, the scheduler or MQTT; the bridge decides what goes over the LAN.
//
// The network is treated as hostile (guard.go). The client sends only to
// its scan targets and to addresses that answered a scan, and accepts scan
// answers only just after its own scan and status answers only from a
// located device's address. Everything else is counted, dropped and logged
// at most once a second per source. A located device moves to a new address
// only when its known address stops answering, so another host claiming its
// id is refused. If two addresses claim one id before it is located, neither
// is trusted and the device stays on the cloud until the next restart.
package lan

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"cloud2mqtt/internal/clock"
)

// Config configures a Client. The zero value of every field but Logger is
// the production default.
type Config struct {
	// Listen is the address answers arrive at (LAN_LISTEN). Every request is
	// sent from this socket because devices answer to port 4002 of the sender.
	Listen string
	// Targets are where scans go (LAN_SCAN_TARGETS); default the group.
	Targets []Target
	// ScanPort is the port for targets that name none (4001) and CommandPort
	// the devices' port for commands and status requests (4003).
	ScanPort, CommandPort int
	// ConfirmTimeout is how long one try waits for a status answer (300 ms)
	// and Tries how many tries are made (3), so a silent device is given up
	// after about a second.
	ConfirmTimeout time.Duration
	Tries          int
	// Pace and PaceBurst space the datagrams to one device, because devices
	// drop bursts. The defaults (50 ms, 4) let a command and its status
	// request go out twice at once; a negative Pace turns pacing off.
	Pace      time.Duration
	PaceBurst int
	Logger    zerolog.Logger
	// OnDevice hears a device found, moved or changing reachability. It must
	// not block or call the client.
	OnDevice func(d Device)
	// Clock times everything the client waits for (nil: clock.Real). It is
	// told of the client's work in hand (work.go), so a test can jump it over
	// a silent device's timeouts without racing datagrams still on their way.
	Clock clock.Clock
}

// Timings no setting changes; tests jump Config.Clock over them.
const (
	// scanAnswerWindow is how long after a scan its answers are accepted.
	scanAnswerWindow = 3 * time.Second
	// conflictLogEvery spaces the warnings about a second address claiming a
	// device's id (per device); rejectLogEvery the lines about dropped
	// datagrams (per source, each counting those left out).
	conflictLogEvery = time.Minute
	rejectLogEvery   = time.Second
)

func (c Config) withDefaults() Config {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Targets == nil {
		c.Targets = []Target{{Host: Group}}
	}
	if c.ScanPort == 0 {
		c.ScanPort = ScanPort
	}
	if c.CommandPort == 0 {
		c.CommandPort = CommandPort
	}
	if c.ConfirmTimeout <= 0 {
		c.ConfirmTimeout = 300 * time.Millisecond
	}
	if c.Tries <= 0 {
		c.Tries = 3
	}
	if c.Pace == 0 {
		c.Pace = 50 * time.Millisecond
	}
	if c.PaceBurst <= 0 {
		c.PaceBurst = 4
	}
	c.Clock = clock.Or(c.Clock)
	return c
}

// Errors a caller decides on. ErrNotLocal and ErrNoAnswer mean "use the
// cloud"; ErrNoAnswer also marks the device unreachable until it answers
// again. ErrNotConfirmed means the device answers but does not show the
// command, so the cloud may still manage it.
var (
	ErrNotLocal     = errors.New("not reachable over the LAN")
	ErrNoAnswer     = errors.New("no status answer")
	ErrNotConfirmed = errors.New("status does not show the command")
	ErrClosed       = errors.New("lan client closed")
)

// Stats count what the client sent and what it dropped. Contested counts
// refused claims on a located device's id from another address, Moved the
// devices whose known address went silent, Early the scan answers kept
// until the first device list, and Disputed the answers refused for an id
// two addresses claimed before it was located.
type Stats struct {
	Sent, Received                                      uint64
	Malformed, Oversized, Unsolicited, Spoofed, Unknown uint64
	Confirmed, NotConfirmed, NoAnswer                   uint64
	Contested, Moved                                    uint64
	Early, Disputed                                     uint64
}

// Client is the bridge's end of the LAN interface. Its methods are safe for
// concurrent use.
type Client struct {
	cfg     Config
	log     zerolog.Logger
	conn    *net.UDPConn
	closed  chan struct{}
	closing sync.Once
	wg      sync.WaitGroup
	// unlisten ends the socket's clock.Listening.
	unlisten func()

	mu       sync.Mutex
	known    map[string]string // upper-case id → the caller's spelling
	devices  map[string]*device
	byAddr   map[netip.Addr]*device
	window   scanWindow
	scanned  time.Time               // when the last scan went out
	unknown  map[string]bool         // ids logged once
	listed   bool                    // SetKnown was called; until then scan answers are kept
	early    map[string]*earlyAnswer // the answers kept, by upper-case id (guard.go)
	rejects  rejectLog               // log lines of dropped datagrams, per source
	stats    Stats
	trace    func(event string)        // tests: every datagram's fate
	onStatus func(id string, s Status) // tests: every accepted status answer
	scanMsg  []byte
	stateMsg []byte
	failLog  *rate.Limiter // "receive failed" lines
}

type scanWindow struct {
	until     time.Time
	anySource bool
	from      map[netip.Addr]bool
}

// New binds the listening socket and starts reading. A port taken by
// another program is an error that says which and what to do.
func New(cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	ap, err := ParseListen(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("lan: %w", err)
	}
	network := "udp4"
	if ap.Addr().Is6() {
		network = "udp6"
	}
	lc := net.ListenConfig{Control: allowBroadcast}
	pc, err := lc.ListenPacket(context.Background(), network, ap.String())
	if err != nil {
		return nil, listenError(cfg.Listen, ap, err)
	}
	c := &Client{
		cfg: cfg, log: cfg.Logger.With().Str("component", "lan").Logger(),
		conn: pc.(*net.UDPConn), closed: make(chan struct{}),
		known: map[string]string{}, devices: map[string]*device{}, byAddr: map[netip.Addr]*device{},
		unknown: map[string]bool{}, early: map[string]*earlyAnswer{}, trace: func(string) {},
		rejects: rejectLog{every: rejectLogEvery},
		scanMsg: AppendScan(nil), stateMsg: AppendStatusRequest(nil),
		failLog: rate.NewLimiter(rate.Every(rejectLogEvery), 1),
	}
	c.unlisten = clock.Listening(cfg.Clock, c.Addr())
	c.wg.Add(1)
	go c.read()
	return c, nil
}

func listenError(listen string, ap netip.AddrPort, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("lan: LAN_LISTEN=%s: UDP port %d is in use by another program on this machine, most likely "+
			"another local integration of these lights (only one program per host can receive the devices' answers, "+
			"which always go to port %d): turn that integration's LAN control off, run the bridge on another host or "+
			"in a container with its own IP address, or set LAN_ENABLED=false to use the cloud only: %w",
			listen, ap.Port(), ListenPort, err)
	}
	return fmt.Errorf("lan: LAN_LISTEN=%s: cannot listen (use an address of this machine, or 0.0.0.0:%d): %w", listen, ListenPort, err)
}

// Addr is the address the client listens on (its port, when LAN_LISTEN
// asked for port 0).
func (c *Client) Addr() netip.AddrPort {
	ap := c.conn.LocalAddr().(*net.UDPAddr).AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// Close stops the client and waits for its reader.
func (c *Client) Close() error {
	var err error
	c.closing.Do(func() {
		close(c.closed)
		err = c.conn.Close()
		c.unlisten() // what was on its way here is lost with the socket
		c.wg.Wait()
	})
	return err
}

// Stats is a copy of the counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// readBuffer holds any UDP datagram whole, so one over MaxDatagram is seen
// and dropped as oversized rather than read truncated.
const readBuffer = 1 << 16

// read receives datagrams until Close. Each is work in hand until handle
// has handed it on.
func (c *Client) read() {
	defer c.wg.Done()
	at := c.Addr()
	buf := make([]byte, readBuffer)
	for {
		n, from, err := c.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			select {
			case <-c.closed:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if c.failLog.AllowN(c.cfg.Clock.Now(), 1) {
				c.log.Debug().Err(err).Msg("receive failed")
			}
			continue
		}
		done := clock.Arrived(c.cfg.Clock, at, buf[:n])
		c.handle(buf[:n], netip.AddrPortFrom(from.Addr().Unmap(), from.Port()))
		done()
	}
}

// handle decodes one datagram and hands it on. Callbacks and log lines run
// after the lock is released, in arrival order.
func (c *Client) handle(b []byte, from netip.AddrPort) {
	a, err := DecodeAnswer(b)
	var notify func()
	event := ""
	c.mu.Lock()
	c.stats.Received++
	switch {
	case errors.Is(err, ErrOversized):
		event, notify = c.dropLocked(&c.stats.Oversized, "oversized", from.Addr(), err.Error())
	case err != nil:
		event, notify = c.dropLocked(&c.stats.Malformed, "malformed", from.Addr(), err.Error())
	case a.Cmd == CmdScan:
		event, notify = c.onScanLocked(a.Scan, from.Addr())
	default:
		event, notify = c.onStatusLocked(a.Status, from.Addr())
	}
	trace := c.trace
	c.mu.Unlock()
	if notify != nil {
		notify()
	}
	trace(event)
}

// dropLocked counts a dropped datagram and returns its log line, if the
// source's log limit allows one.
func (c *Client) dropLocked(counter *uint64, event string, from netip.Addr, why string) (string, func()) {
	*counter++
	return event, c.rejectLineLocked(from, event, why)
}

// rejectLineLocked returns the debug line for a refused datagram, or nil
// if the source was logged within rejectLogEvery. The line counts the
// refusals left out since.
func (c *Client) rejectLineLocked(from netip.Addr, event, why string) func() {
	ok, left, shared := c.rejects.allow(from, c.cfg.Clock.Now())
	if !ok {
		return nil
	}
	return func() {
		ev := c.log.Debug().Str("from", sourceName(from, shared)).Str("dropped", event).Str("reason", why)
		if left > 0 {
			ev = ev.Uint64("not_logged", left)
		}
		ev.Msg("LAN datagram dropped")
	}
}
