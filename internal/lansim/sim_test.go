package lansim_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"go.uber.org/goleak"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/clock/clocktest"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/lansim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The demo catalogue's H6076 light (white 2200–6500 K).
const demoLight = "AA:BB:CC:DD:EE:FF:10:02"

func udp(t *testing.T, addr string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// client is a lan.Client that knows every device of the simulator.
// Its timeout bounds how long a try waits for an answer that shows the
// command: tests set it short where they expect none.
func client(t *testing.T, sim *lansim.Sim, timeout time.Duration, ids ...string) *lan.Client {
	t.Helper()
	var targets []lan.Target
	for _, id := range ids {
		a, err := sim.Addr(id)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, lan.Target{Host: a.String(), Port: sim.ScanPort()})
	}
	found := make(chan string, 16)
	c, err := lan.New(lan.Config{Listen: "127.0.0.1:0", Targets: targets, CommandPort: sim.CommandPort(),
		ConfirmTimeout: timeout, OnDevice: func(d lan.Device) { found <- d.ID }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetKnown(ids)
	if err := c.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range ids {
		select {
		case <-found:
		case <-time.After(10 * time.Second):
			t.Fatal("the simulator's devices did not answer the scan")
		}
	}
	return c
}

func TestLinkedDeviceSharesTheCloudsState(t *testing.T) {
	cloud := cloudsim.New(cloudsim.Options{})
	sim, err := lansim.New(lansim.Options{Cloud: cloud}, lansim.Spec{ID: demoLight, SKU: "H6076", Linked: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	c := client(t, sim, 200*time.Millisecond, demoLight)
	ctx := context.Background()
	value := func(instance string) any {
		v, _ := cloud.Value(demoLight, instance)
		return v
	}

	// The LAN changes the cloud's state, as the real light reports it there.
	if _, err := c.Send(ctx, demoLight, lan.Turn(true), lan.Brightness(33), lan.White(3000)); err != nil {
		t.Fatal(err)
	}
	if value(capability.InstancePower) != int64(1) || value(capability.InstanceBrightness) != int64(33) ||
		value(capability.InstanceColorTemperatureK) != int64(3000) {
		t.Errorf("cloud after LAN commands: power %v, brightness %v, white %v", value(capability.InstancePower),
			value(capability.InstanceBrightness), value(capability.InstanceColorTemperatureK))
	}
	if _, err := c.Send(ctx, demoLight, lan.Color(lan.RGB{R: 1, G: 2, B: 3})); err != nil {
		t.Fatal(err)
	}
	if value(capability.InstanceColorRGB) != int64(0x010203) || value(capability.InstanceColorTemperatureK) != int64(0) {
		t.Errorf("cloud after a colour: colorRgb %v, colorTemperatureK %v (want 0 while a colour shows)",
			value(capability.InstanceColorRGB), value(capability.InstanceColorTemperatureK))
	}
	if n := len(cloud.Requests()); n != 0 {
		t.Errorf("LAN commands spent %d cloud requests", n)
	}

	// The cloud (the vendor's app) changes what the LAN reads.
	if err := cloud.SetValue(demoLight, capability.InstanceBrightness, int64(77)); err != nil {
		t.Fatal(err)
	}
	s, err := c.Status(ctx, demoLight)
	if err != nil || s.Brightness != 77 || s.Color != (lan.RGB{R: 1, G: 2, B: 3}) || !s.On {
		t.Errorf("LAN status after a cloud change: %+v, %v", s, err)
	}

	// A white outside this light's range (2200–6500 K) is ignored by it.
	if _, err := c.Send(ctx, demoLight, lan.White(9000)); !errors.Is(err, lan.ErrNotConfirmed) {
		t.Errorf("white 9000 K on a 2200–6500 K light: %v, want ErrNotConfirmed", err)
	}
	// A wall switch on a linked light goes to the cloud's state too.
	if err := sim.Switch(demoLight, func(s *lan.Status) { s.On = false }); err != nil {
		t.Fatal(err)
	}
	if value(capability.InstancePower) != int64(0) {
		t.Errorf("cloud power after the wall switch: %v", value(capability.InstancePower))
	}
}

func TestAnswersGoToTheReplyPort(t *testing.T) {
	sim, err := lansim.New(lansim.Options{}, lansim.Spec{ID: "AA", SKU: "H6008",
		State: lan.Status{On: true, Brightness: 5, HasBrightness: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	asker, answers := udp(t, "127.0.0.1:0"), udp(t, "127.0.0.1:0")
	sim.SetReplyPort(answers.LocalAddr().(*net.UDPAddr).Port)
	addr, _ := sim.Addr("AA")
	if addr != netip.MustParseAddr("127.0.0.2") {
		t.Errorf("first device at %s, want 127.0.0.2", addr)
	}
	to := netip.AddrPortFrom(addr, uint16(sim.CommandPort()))
	if _, err := asker.WriteToUDPAddrPort(lan.AppendStatusRequest(nil), to); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	answers.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, from, err := answers.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatal(err)
	}
	a, err := lan.DecodeAnswer(buf[:n])
	if err != nil || a.Cmd != lan.CmdStatus || a.Status.Brightness != 5 || from.Addr() != addr {
		t.Errorf("answer %+v from %s: %v", a, from, err)
	}
	// A scan to the command port is not answered there; garbage is logged.
	if _, err := asker.WriteToUDPAddrPort([]byte("garbage"), to); err != nil {
		t.Fatal(err)
	}
	if _, err := asker.WriteToUDPAddrPort(lan.AppendStatusRequest(nil), to); err != nil {
		t.Fatal(err)
	}
	if _, _, err := answers.ReadFromUDPAddrPort(buf); err != nil {
		t.Fatal(err)
	}
	if c := sim.Counts("AA"); c["malformed"] != 1 || c[lan.CmdStatus] != 2 {
		t.Errorf("counts %v", c)
	}
	if r := sim.Received("AA"); len(r) != 3 || r[0].Request.Cmd != lan.CmdStatus || r[1].Request.Cmd != "" {
		t.Errorf("received %+v", r)
	}
}

func TestTurnedOffDeviceIsSilent(t *testing.T) {
	sim, err := lansim.New(lansim.Options{}, lansim.Spec{ID: "AA", SKU: "H6008"})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	c := client(t, sim, 20*time.Millisecond, "AA")
	sim.SetOff("AA", true)
	c2 := context.Background()
	if _, err := c.Status(c2, "AA"); !errors.Is(err, lan.ErrNoAnswer) {
		t.Errorf("status of a device turned off: %v", err)
	}
	if n := len(sim.Received("AA")); n != 1 { // the scan before it went off
		t.Errorf("a device turned off took in %d datagrams", n-1)
	}
	sim.SetOff("AA", false)
	for { // one short try a read while marked unreachable; the answer comes
		_, err := c.Status(c2, "AA")
		if err == nil {
			break
		}
		if !errors.Is(err, lan.ErrNoAnswer) {
			t.Fatalf("status once on again: %v", err)
		}
	}
}

func TestSpecsAreChecked(t *testing.T) {
	for name, spec := range map[string]lansim.Spec{
		"off this host":    {ID: "AA", SKU: "H6008", Addr: netip.MustParseAddr("192.168.1.2")},
		"no id":            {SKU: "H6008"},
		"linked, no cloud": {ID: "AA", SKU: "H6008", Linked: true},
	} {
		if sim, err := lansim.New(lansim.Options{}, spec); err == nil {
			sim.Close()
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestLossyDeviceLosesItsShare: a device losing every datagram answers no
// status request; losing some, it answers some and not others, and the
// client's tries get most reads through.
func TestLossyDeviceLosesItsShare(t *testing.T) {
	sim, err := lansim.New(lansim.Options{Seed: 7}, lansim.Spec{ID: "AA", SKU: "H6008"})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	c := client(t, sim, 20*time.Millisecond, "AA")
	ctx := context.Background()
	if err := sim.SetLoss("AA", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Status(ctx, "AA"); !errors.Is(err, lan.ErrNoAnswer) {
		t.Fatalf("status of a device losing everything: %v, want ErrNoAnswer", err)
	}
	if err := sim.SetLoss("AA", 0.5); err != nil {
		t.Fatal(err)
	}
	answered := 0
	for range 40 {
		if _, err := c.Status(ctx, "AA"); err == nil {
			answered++
		}
	}
	if answered == 0 || answered == 40 {
		t.Errorf("%d of 40 status reads answered at half loss; want some and not all", answered)
	}
}

// TestDeviceWorkInHand: a datagram on its way to a device, and a delayed
// answer, are work in hand until taken in, answered or dropped.
func TestDeviceWorkInHand(t *testing.T) {
	clk := clocktest.NewFrozen(time.Unix(1_800_000_000, 0))
	first, moved := netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")
	sim, err := lansim.New(lansim.Options{Clock: clk}, lansim.Spec{ID: "AA", SKU: "H6008", Addr: first})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	to := func(a netip.Addr) netip.AddrPort { return netip.AddrPortFrom(a, uint16(sim.CommandPort())) }

	// A datagram the device has not taken in (the kernel still queues it,
	// or lost it) is on its way while the device listens there.
	clock.Sent(clk, to(first), []byte("on its way"))
	if clk.Idle() {
		t.Fatal("idle with a datagram on its way to the device")
	}
	if err := sim.Move("AA", moved); err != nil {
		t.Fatal(err)
	}
	if !clk.Idle() {
		t.Fatalf("the device moved, what was on its way to its old address still in hand: %v", clk.Holders())
	}
	clock.Sent(clk, to(first), []byte("to nobody"))
	if !clk.Idle() {
		t.Fatalf("a datagram to the device's old address is in hand: %v", clk.Holders())
	}

	// Switched off, the device takes a request in and drops it.
	requester := udp(t, "127.0.0.1:0")
	took := make(chan struct{}, 1)
	sim.OnReceive(func(string, lansim.Received) { took <- struct{}{} })
	send := func() {
		t.Helper()
		req := lan.AppendStatusRequest(nil)
		clock.Sent(clk, to(moved), req)
		if _, err := requester.WriteToUDPAddrPort(req, to(moved)); err != nil {
			t.Fatal(err)
		}
	}
	if err := sim.SetOff("AA", true); err != nil {
		t.Fatal(err)
	}
	send()
	clk.IdleWithin(t, 10*time.Second, "after a request to the device switched off")

	// Slow, it holds the request through its delay (an hour, on the
	// system's time); stopped, it drops the answer and its work.
	if err := sim.SetOff("AA", false); err != nil {
		t.Fatal(err)
	}
	if err := sim.SetDelay("AA", time.Hour); err != nil {
		t.Fatal(err)
	}
	send()
	select {
	case <-took:
	case <-time.After(10 * time.Second):
		t.Fatal("the device did not take the request in")
	}
	if clk.Idle() {
		t.Fatal("idle while the device holds a request to answer after its delay")
	}
	clock.Sent(clk, to(moved), []byte("on its way"))
	sim.Close()
	if !clk.Idle() {
		t.Fatalf("the device stopped, its work still in hand: %v", clk.Holders())
	}
}
