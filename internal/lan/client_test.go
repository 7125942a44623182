package lan_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"cloud2mqtt/internal/clock/clocktest"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/lansim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every test here runs on loopback addresses of this host only.
const (
	lamp   = "1F:80:C5:32:32:36:72:4E"
	strip  = "AA:BB:CC:DD:EE:FF:00:11"
	others = "99:99:99:99:99:99:99:99" // on the LAN, not in the cloud's list
)

var (
	lampAddr   = netip.MustParseAddr("127.0.0.2")
	stripAddr  = netip.MustParseAddr("127.0.0.3")
	othersAddr = netip.MustParseAddr("127.0.0.4")
	spareAddr  = netip.MustParseAddr("127.0.0.5") // scanned, nobody there
	moveAddr   = netip.MustParseAddr("127.0.0.7")
	trapAddr   = netip.MustParseAddr("127.0.0.9") // never scanned
)

type testNet struct {
	clk     *clocktest.Clock // the client's: cfg.Clock, else a running one
	sim     *lansim.Sim
	client  *lan.Client
	events  chan string     // the client's trace
	devices chan lan.Device // OnDevice
	status  chan string     // SetOnStatus: the device's id
}

// newNet starts three simulated lights and a client that scans them (and
// two spare addresses) by unicast, knowing the lamp and the strip.
func newNet(t *testing.T, cfg lan.Config) *testNet {
	t.Helper()
	on := lan.Status{On: true, Brightness: 50, HasBrightness: true, Color: lan.RGB{R: 255}, HasColor: true, HasKelvin: true}
	sim, err := lansim.New(lansim.Options{},
		lansim.Spec{ID: lamp, SKU: "H6076", Addr: lampAddr, State: on},
		lansim.Spec{ID: strip, SKU: "H6163", Addr: stripAddr, State: on, OmitIP: true},
		lansim.Spec{ID: others, SKU: "H6008", Addr: othersAddr, State: on},
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	n := &testNet{sim: sim, events: make(chan string, 1024), devices: make(chan lan.Device, 64), status: make(chan string, 1024)}
	if cfg.Clock == nil {
		cfg.Clock = clocktest.New()
	}
	n.clk = cfg.Clock.(*clocktest.Clock)
	cfg.Listen = "127.0.0.1:0"
	for _, a := range []netip.Addr{lampAddr, stripAddr, othersAddr, spareAddr, moveAddr, forgerAddr} {
		cfg.Targets = append(cfg.Targets, lan.Target{Host: a.String(), Port: sim.ScanPort()})
	}
	cfg.CommandPort = sim.CommandPort()
	if cfg.ConfirmTimeout == 0 {
		cfg.ConfirmTimeout = time.Second // generous: these tests wait for answers that come
	}
	cfg.OnDevice = func(d lan.Device) { n.devices <- d }
	c, err := lan.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	lan.SetOnStatus(c, func(id string, _ lan.Status) { n.status <- id })
	lan.SetTrace(c, func(e string) {
		select {
		case n.events <- e:
		default:
		}
	})
	sim.SetReplyPort(int(c.Addr().Port())) // as the real devices: to the listening port
	n.client = c
	c.SetKnown([]string{strings.ToLower(lamp), strip}) // matching ignores case
	return n
}

// found scans and waits until both known lights are located.
func (n *testNet) found(t *testing.T) {
	t.Helper()
	if err := n.client.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	for seen := map[string]bool{}; len(seen) < 2; {
		d := n.nextDevice(t)
		seen[d.ID] = true
	}
}

// settle closes the scan window that found the lights, so a later answer
// from another address is a claim the guard weighs, not a dispute.
func (n *testNet) settle() { n.clk.Advance(lan.ScanAnswerWindow + time.Millisecond) }

func (n *testNet) nextDevice(t *testing.T) lan.Device {
	t.Helper()
	select {
	case d := <-n.devices:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no device event")
	}
	return lan.Device{}
}

// waitEvent waits for the client to handle a datagram that way.
func (n *testNet) waitEvent(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-n.events:
			if e == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %q datagram", want)
		}
	}
}

func TestScanFindsKnownDevicesByUnicast(t *testing.T) {
	n := newNet(t, lan.Config{})
	n.found(t)
	n.waitEvent(t, "unknown") // the third light answered too, and was ignored

	got := n.client.Devices()
	if len(got) != 2 {
		t.Fatalf("found %v, want the lamp and the strip only", got)
	}
	byID := map[string]lan.Device{}
	for _, d := range got {
		byID[d.ID] = d
	}
	if d := byID[strings.ToLower(lamp)]; d.Addr != lampAddr || d.SKU != "H6076" || !d.Reachable || d.WiFiVersionSoft == "" {
		t.Errorf("lamp (known in lower case): %+v", d)
	}
	if d := byID[strip]; d.Addr != stripAddr || !d.Reachable { // its answer names no ip: the sender's is used
		t.Errorf("strip: %+v", d)
	}
	if st := n.client.Stats(); st.Unknown == 0 {
		t.Errorf("stats %+v: the unknown light's answer is not counted", st)
	}
}

// TestDiscoverEndsWhenEveryKnownDeviceAnswered: -check's scan waits for
// answers, but not a moment longer once every known light has answered.
func TestDiscoverEndsWhenEveryKnownDeviceAnswered(t *testing.T) {
	n := newNet(t, lan.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	found, err := n.client.Discover(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("Discover waited past every known device's answer")
	}
	if len(found) != 2 {
		t.Errorf("found %v, want the lamp and the strip", found)
	}
}

func TestCommandsGoAsDatagramsAndAreConfirmed(t *testing.T) {
	n := newNet(t, lan.Config{})
	n.found(t)
	id := strings.ToLower(lamp)
	steps := []struct {
		cmds  []lan.Command
		check func(lan.Status) bool
	}{
		{[]lan.Command{lan.Turn(false)}, func(s lan.Status) bool { return !s.On }},
		{[]lan.Command{lan.Turn(true), lan.Brightness(40)}, func(s lan.Status) bool { return s.On && s.Brightness == 40 }},
		{[]lan.Command{lan.Color(lan.RGB{R: 255, G: 136})}, func(s lan.Status) bool { return s.Color == lan.RGB{R: 255, G: 136} && s.Kelvin == 0 }},
		{[]lan.Command{lan.White(2700)}, func(s lan.Status) bool { return s.Kelvin == 2700 }},
	}
	for _, step := range steps {
		got, err := n.client.Send(context.Background(), id, step.cmds...)
		if err != nil {
			t.Fatalf("%v: %v", step.cmds, err)
		}
		dev, _ := n.sim.State(lamp)
		if !step.check(got) || !step.check(dev) {
			t.Errorf("%v: confirmed %+v, the device shows %+v", step.cmds, got, dev)
		}
	}
	counts := n.sim.Counts(lamp)
	if counts[lan.CmdTurn] != 2 || counts[lan.CmdBrightness] != 1 || counts[lan.CmdColor] != 2 || counts[lan.CmdStatus] < 4 {
		t.Errorf("the lamp received %v", counts)
	}
	if c := n.sim.Counts(strip); c[lan.CmdTurn]+c[lan.CmdStatus] != 0 {
		t.Errorf("the strip received %v; nothing was for it", c)
	}
	if st := n.client.Stats(); st.Confirmed != 4 {
		t.Errorf("stats %+v, want 4 confirmed", st)
	}
}

func TestLostCommandIsSentAgain(t *testing.T) {
	n := newNet(t, lan.Config{ConfirmTimeout: 300 * time.Millisecond, Tries: 5})
	n.found(t)
	if err := n.sim.DropNext(strip, 1); err != nil { // the command itself
		t.Fatal(err)
	}
	if _, err := n.client.Send(context.Background(), strip, lan.Brightness(7)); err != nil {
		t.Fatal(err)
	}
	// The device lost the first; what it shows came from a repeat.
	if c := n.sim.Counts(strip)[lan.CmdBrightness]; c < 1 {
		t.Errorf("the strip took in %d brightness commands, want the repeat after the lost one", c)
	}
	if s, _ := n.sim.State(strip); s.Brightness != 7 {
		t.Errorf("strip shows %+v", s)
	}
}

func TestSilentDeviceGoesToTheCloudUntilItAnswers(t *testing.T) {
	n := newNet(t, lan.Config{ConfirmTimeout: 20 * time.Millisecond})
	n.found(t)
	if err := n.sim.SetOff(strip, true); err != nil {
		t.Fatal(err)
	}
	_, err := n.client.Send(context.Background(), strip, lan.Turn(false))
	if !errors.Is(err, lan.ErrNoAnswer) {
		t.Fatalf("Send to a silent device: %v, want ErrNoAnswer", err)
	}
	if d := n.nextDevice(t); d.ID != strip || d.Reachable {
		t.Errorf("device event %+v, want the strip unreachable", d)
	}
	sent := n.client.Stats().Sent
	if _, err := n.client.Send(context.Background(), strip, lan.Turn(false)); !errors.Is(err, lan.ErrNotLocal) {
		t.Errorf("next Send: %v, want ErrNotLocal at once", err)
	}
	if got := n.client.Stats().Sent; got != sent {
		t.Errorf("%d datagrams sent to a device marked unreachable", got-sent)
	}
	if n.client.Reachable(strip) {
		t.Error("Reachable(strip) after no answer")
	}

	// Back on: one status read finds it again.
	if err := n.sim.SetOff(strip, false); err != nil {
		t.Fatal(err)
	}
	n.client.SetKnown([]string{strip}) // the list may change meanwhile; the strip keeps its address
	// The short timeout is for silence; a busy machine may need longer for an answer.
	if _, err := statusEventually(n, strip); err != nil {
		t.Fatal(err)
	}
	if d := n.nextDevice(t); d.ID != strip || !d.Reachable {
		t.Errorf("device event %+v, want the strip reachable", d)
	}
	if _, err := n.client.Send(context.Background(), strip, lan.Turn(false)); err != nil && !errors.Is(err, lan.ErrNoAnswer) {
		t.Errorf("Send after it answered: %v", err)
	}
}

// statusEventually reads until an answer comes (each read is one short try
// while the device is marked unreachable).
func statusEventually(n *testNet, id string) (lan.Status, error) {
	for range 100 {
		s, err := n.client.Status(context.Background(), id)
		if err == nil || !errors.Is(err, lan.ErrNoAnswer) {
			return s, err
		}
	}
	return lan.Status{}, errors.New("no status answer in 100 reads")
}

func TestSlowAndRepeatedAnswers(t *testing.T) {
	n := newNet(t, lan.Config{})
	n.found(t)
	n.sim.SetDelay(strip, 30*time.Millisecond)
	n.sim.SetDuplicate(strip, true)
	for _, b := range []int{10, 20, 30} {
		if _, err := n.client.Send(context.Background(), strip, lan.Brightness(b)); err != nil {
			t.Fatalf("brightness %d: %v", b, err)
		}
	}
	if s, _ := n.sim.State(strip); s.Brightness != 30 {
		t.Errorf("strip shows %+v", s)
	}
}

// udp opens a socket on a loopback address for a test's own datagrams.
func udp(t *testing.T, addr netip.Addr, port int) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, uint16(port))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestForgedAndBrokenDatagramsChangeNothing(t *testing.T) {
	n := newNet(t, lan.Config{})
	n.found(t)
	to := net.UDPAddrFromAddrPort(n.client.Addr())
	if to.IP.IsUnspecified() {
		to.IP = net.IPv4(127, 0, 0, 1)
	}
	forger := udp(t, trapAddr, 0)
	send := func(msg []byte) {
		if _, err := forger.WriteToUDP(msg, to); err != nil {
			t.Fatal(err)
		}
	}
	status := lan.AppendStatus(nil, lan.Status{On: false, Brightness: 1, HasBrightness: true})
	scan := lan.AppendScanAnswer(nil, lan.ScanAnswer{Device: strip, SKU: "H6163", IP: trapAddr})

	send(status)
	n.waitEvent(t, "spoofed")
	send([]byte("garbage"))
	n.waitEvent(t, "malformed")
	send([]byte(`{"msg":{"cmd":"devStatus","data":{"onOff":1,"pad":"` + strings.Repeat("x", 3000) + `"}}}`))
	n.waitEvent(t, "oversized")
	send(scan) // inside the scan's window, but from an address not scanned
	n.waitEvent(t, "unsolicited")

	if d, _ := n.client.Device(strip); d.Addr != stripAddr || !d.Reachable {
		t.Errorf("strip after forged datagrams: %+v", d)
	}
	select {
	case id := <-n.status:
		t.Errorf("a forged status answer was accepted (%s)", id)
	default:
	}
	st := n.client.Stats()
	if st.Spoofed != 1 || st.Malformed != 1 || st.Oversized != 1 || st.Unsolicited != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestSendsOnlyToScanTargetsAndAnsweringAddresses(t *testing.T) {
	n := newNet(t, lan.Config{ConfirmTimeout: 20 * time.Millisecond, Tries: 1})
	cmdPort := n.sim.CommandPort()
	trap := udp(t, trapAddr, cmdPort)
	spare := udp(t, spareAddr, cmdPort)
	spareScan := udp(t, spareAddr, n.sim.ScanPort())
	n.found(t)
	n.settle()

	// The strip goes silent and a "device" at the spare address answers the
	// scan in its name, giving the trap's address as its own.
	if err := n.sim.SetOff(strip, true); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	spareScan.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := spareScan.ReadFromUDPAddrPort(buf); err != nil { // the first scan's, which the strip answered
		t.Fatal(err)
	}
	if err := n.client.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, from, err := spareScan.ReadFromUDPAddrPort(buf); err != nil {
		t.Fatal(err)
	} else {
		msg := lan.AppendScanAnswer(nil, lan.ScanAnswer{Device: strip, SKU: "H6163", IP: trapAddr})
		if _, err := spareScan.WriteToUDPAddrPort(msg, from); err != nil {
			t.Fatal(err)
		}
	}
	if d := n.nextDevice(t); d.ID != strip || d.Addr != spareAddr {
		t.Fatalf("device event %+v, want the strip moved to the sender's address %s", d, spareAddr)
	}
	if _, err := n.client.Status(context.Background(), strip); !errors.Is(err, lan.ErrNoAnswer) {
		t.Fatalf("Status: %v", err)
	}
	spare.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, _, err := spare.ReadFromUDPAddrPort(buf); err != nil || !strings.Contains(string(buf[:n]), lan.CmdStatus) {
		t.Errorf("the status request did not reach the address that answered: %q, %v", buf[:n], err)
	}
	trap.SetReadDeadline(time.Now()) // whatever was sent has arrived: loopback delivers at once
	if n, _, err := trap.ReadFromUDPAddrPort(buf); err == nil {
		t.Errorf("the trap address, named in a scan answer but never answering, received %q", buf[:n])
	}
	// The client no longer listens to the strip's old address.
	if d, _ := n.client.Device(strip); d.Addr != spareAddr {
		t.Errorf("strip: %+v", d)
	}
}

// jumpWhileWaiting jumps clk by d whenever something waits on it, until
// stop is called, so waits for a silent address pass at once. Use it only
// while nothing else waits on the clock.
func jumpWhileWaiting(clk *clocktest.Clock, d time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for clk.WaitPending(ctx, 1) == nil {
			clk.Advance(d)
		}
	}()
	return func() { cancel(); <-done }
}

// TestDeviceMovesToANewAddress: a light answering a scan from a new
// address moves there once its known address stops answering.
func TestDeviceMovesToANewAddress(t *testing.T) {
	clk := clocktest.New()
	n := newNet(t, lan.Config{Clock: clk})
	n.found(t)
	n.settle()
	if err := n.sim.Move(strip, moveAddr); err != nil {
		t.Fatal(err)
	}
	stop := jumpWhileWaiting(clk, time.Second)
	if err := n.client.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	for {
		if d := n.nextDevice(t); d.ID == strip && d.Addr == moveAddr {
			break
		}
	}
	stop()
	if _, err := n.client.Send(context.Background(), strip, lan.Brightness(99)); err != nil {
		t.Fatal(err)
	}
	if s, _ := n.sim.State(strip); s.Brightness != 99 {
		t.Errorf("strip shows %+v", s)
	}
}

func TestPollsShowChangesMadeAtTheDevice(t *testing.T) {
	n := newNet(t, lan.Config{})
	n.found(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.client.RunPolls(ctx, 20*time.Millisecond, func(ctx context.Context, id string) { _, _ = n.client.Status(ctx, id) })
	}()
	defer func() { cancel(); <-done }()

	// The wall switch: the lamp goes off; the next poll tells.
	n.sim.Switch(lamp, func(s *lan.Status) { s.On = false })
	for {
		select {
		case id := <-n.status:
			if id != strings.ToLower(lamp) {
				continue
			}
			if s, err := n.client.Status(context.Background(), id); err == nil && !s.On {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no poll answer showed the lamp off")
		}
	}
}

func TestListenPortTakenSaysWhatToDo(t *testing.T) {
	taken := udp(t, netip.MustParseAddr("127.0.0.1"), 0)
	port := taken.LocalAddr().(*net.UDPAddr).Port
	_, err := lan.New(lan.Config{Listen: "127.0.0.1:" + strconv.Itoa(port)})
	if err == nil {
		t.Fatal("New on a taken port succeeded")
	}
	for _, want := range []string{"LAN_LISTEN=127.0.0.1:" + strconv.Itoa(port), "UDP port " + strconv.Itoa(port), "another local integration", "LAN_ENABLED=false"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestPaceIsOnTheClock: a device's datagrams are paced on Config.Clock, so
// on a frozen clock the fifth and sixth wait until the clock moves.
func TestPaceIsOnTheClock(t *testing.T) {
	clk := clocktest.NewFrozen(time.Unix(1_800_000_000, 0))
	n := newNet(t, lan.Config{Clock: clk})
	n.found(t)
	id := strings.ToLower(lamp)
	for _, b := range []int{10, 20} { // a command and its status request each: 4 datagrams
		if _, err := n.client.Send(context.Background(), id, lan.Brightness(b)); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := n.client.Send(context.Background(), id, lan.Brightness(30))
		done <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, what := range []string{"command", "status request"} {
		if err := clk.WaitPending(ctx, 1); err != nil { // the pace's timer
			t.Fatalf("the %s did not wait for the pace: %v", what, err)
		}
		if err := clk.WaitIdle(ctx); err != nil { // a wait on the clock alone: a test may jump it
			t.Fatalf("the %s's pace: %v", what, err)
		}
		if what == "command" { // the two before were confirmed: the lamp has them
			if c := n.sim.Counts(lamp)[lan.CmdBrightness]; c != 2 {
				t.Fatalf("the lamp took in %d brightness commands while the third waited, want 2", c)
			}
		}
		clk.Advance(50 * time.Millisecond)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the third command was not confirmed")
	}
	if s, _ := n.sim.State(lamp); s.Brightness != 30 {
		t.Errorf("lamp shows %+v", s)
	}
}
