package lan_test

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/clock/clocktest"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/lansim"
)

// forgerAddr is the attacker's own address on the LAN, scanned by unicast.
var forgerAddr = netip.MustParseAddr("127.0.0.99")

// logLines collects a client's log lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(p))
	return len(p), nil
}

// with lists the lines that contain every one of the strings.
func (l *logLines) with(subs ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
next:
	for _, line := range l.lines {
		for _, s := range subs {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		out = append(out, line)
	}
	return out
}

// startForger starts a simulated device at forgerAddr on the simulator's
// ports, answering scans in the lamp's name with a status of its own.
func startForger(t *testing.T, n *testNet) *lansim.Sim {
	t.Helper()
	f, err := lansim.New(lansim.Options{ScanPort: n.sim.ScanPort(), CommandPort: n.sim.CommandPort(), ReplyPort: int(n.client.Addr().Port())},
		lansim.Spec{ID: lamp, SKU: "H6076", Addr: forgerAddr, State: lan.Status{On: false, Brightness: 1, HasBrightness: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestForgerCannotTakeOverALight: something answering every scan in a
// known light's name does not get its commands while the light's known
// address answers; the conflict is logged once a minute with both addresses.
func TestForgerCannotTakeOverALight(t *testing.T) {
	logs := &logLines{}
	clk := clocktest.New()
	n := newNet(t, lan.Config{Logger: zerolog.New(logs), Clock: clk})
	n.found(t) // the real lamp, before the forger turns up
	n.settle()
	forger := startForger(t, n)
	id := strings.ToLower(lamp)

	const scans = 3
	for range scans {
		if err := n.client.Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
		n.waitEvent(t, "contested")
	}
	if d, _ := n.client.Device(id); d.Addr != lampAddr || !d.Reachable {
		t.Fatalf("lamp after the forger's answers: %+v, want it at %s", d, lampAddr)
	}
	if _, err := n.client.Send(context.Background(), id, lan.Brightness(77)); err != nil {
		t.Fatal(err)
	}
	st, err := n.client.Status(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if real, _ := n.sim.State(lamp); st.Brightness != 77 || real.Brightness != 77 {
		t.Errorf("status read %+v, the lamp shows %+v: want the lamp's brightness 77", st, real)
	}
	if c := forger.Counts(lamp); c[lan.CmdBrightness]+c[lan.CmdTurn]+c[lan.CmdColor] != 0 {
		t.Errorf("the forger received commands: %v", c)
	}
	if got := n.client.Stats(); got.Contested != scans || got.Moved != 0 {
		t.Errorf("stats %+v: want %d contested, none moved", got, scans)
	}
	warned := logs.with(`"level":"warn"`, "two addresses answer", lampAddr.String(), forgerAddr.String())
	if len(warned) != 1 {
		t.Errorf("%d conflict warnings naming both addresses over %d scans, want 1 a minute:\n%s", len(warned), scans, strings.Join(logs.with("two addresses"), ""))
	}

	// A minute later the forger's next claim is logged again, with the
	// count of those left out.
	clk.Advance(time.Minute)
	if err := n.client.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	n.waitEvent(t, "contested")
	warned = logs.with(`"level":"warn"`, "two addresses answer", lampAddr.String(), forgerAddr.String())
	if len(warned) != 2 || !strings.Contains(warned[1], `"not_logged":`+strconv.Itoa(scans-1)) {
		t.Errorf("a minute later: %d conflict warnings, want a second one counting the %d left out:\n%s", len(warned), scans-1, strings.Join(warned, ""))
	}
	if d, _ := n.client.Device(id); d.Addr != lampAddr {
		t.Errorf("lamp after the forger's answer a minute later: %+v", d)
	}
}

// TestMovedLightIsFollowedWithinOneScan: a light whose old address went
// silent (a new DHCP lease) is followed at the first scan it answers at
// its new address, a forger or not.
func TestMovedLightIsFollowedWithinOneScan(t *testing.T) {
	n := newNet(t, lan.Config{ConfirmTimeout: 100 * time.Millisecond})
	n.found(t)
	n.settle()
	if err := n.sim.Move(strip, moveAddr); err != nil {
		t.Fatal(err)
	}
	if err := n.client.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	n.waitEvent(t, "moved")
	if d, _ := n.client.Device(strip); d.Addr != moveAddr || !d.Reachable {
		t.Fatalf("strip after one scan: %+v, want it at %s", d, moveAddr)
	}
	if _, err := n.client.Send(context.Background(), strip, lan.Brightness(12)); err != nil {
		t.Fatal(err)
	}
	if s, _ := n.sim.State(strip); s.Brightness != 12 {
		t.Errorf("strip shows %+v", s)
	}
	if got := n.client.Stats(); got.Moved != 1 || got.Contested != 0 {
		t.Errorf("stats %+v: want one move, nothing contested", got)
	}
}

// TestDatagramFloodLogsOnceASecondPerSource: every refused datagram is
// counted, but a flood logs one line a second per source.
func TestDatagramFloodLogsOnceASecondPerSource(t *testing.T) {
	logs := &logLines{}
	// A frozen clock: however long the flood takes on a loaded machine,
	// it all comes within one second of the log limit.
	clk := clocktest.NewFrozen(time.Unix(1_700_000_000, 0))
	n := newNet(t, lan.Config{Logger: zerolog.New(logs).Level(zerolog.DebugLevel), Clock: clk})
	n.found(t)
	to := net.UDPAddrFromAddrPort(n.client.Addr())
	sources := []netip.Addr{trapAddr, netip.MustParseAddr("127.0.0.10")}
	flood := [][]byte{
		[]byte("garbage"),
		[]byte(`{"msg":{"cmd":"devStatus","data":{"onOff":1,"pad":"` + strings.Repeat("x", 3000) + `"}}}`),
		lan.AppendStatus(nil, lan.Status{On: false}),
		lan.AppendScanAnswer(nil, lan.ScanAnswer{Device: strip, SKU: "H6163"}),
	}
	const each = 250
	for _, src := range sources {
		c := udp(t, src, 0)
		for i := range each * len(flood) {
			if _, err := c.WriteToUDP(flood[i%len(flood)], to); err != nil {
				t.Fatal(err)
			}
			// One at a time: a burst would overflow the socket's buffer,
			// and a datagram the kernel drops is no test of the log.
			n.waitDropped(t)
		}
	}
	st := n.client.Stats()
	if st.Malformed+st.Oversized+st.Spoofed+st.Unsolicited != uint64(each*len(flood)*len(sources)) {
		t.Fatalf("stats %+v: not every datagram counted", st)
	}
	for _, src := range sources {
		if got := logs.with("LAN datagram dropped", `"from":"`+src.String()+`"`); len(got) != 1 {
			t.Errorf("%d lines about %d datagrams from %s in one second, want 1", len(got), each*len(flood), src)
		}
	}

	clk.Advance(time.Second)
	c := udp(t, sources[0], 0)
	if _, err := c.WriteToUDP([]byte("garbage"), to); err != nil {
		t.Fatal(err)
	}
	n.waitDropped(t)
	left := each*len(flood) - 1
	if got := logs.with("LAN datagram dropped", `"from":"`+sources[0].String()+`"`, `"not_logged":`+strconv.Itoa(left)); len(got) != 1 {
		t.Errorf("a second later: want one line counting the %d left out; lines:\n%s", left, strings.Join(logs.with("LAN datagram dropped"), ""))
	}
}

// waitDropped waits for the client to drop a datagram.
func (n *testNet) waitDropped(t *testing.T) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-n.events:
			switch e {
			case "malformed", "oversized", "spoofed", "unsolicited":
				return
			}
		case <-deadline:
			t.Fatal("no datagram dropped")
		}
	}
}
