package lan_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/clock/clocktest"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/lansim"
)

// firstScan is a fresh install: a lamp, a forger answering scans in the
// lamp's name, and a client that scans both and has no device list yet.
type firstScan struct {
	clk     *clocktest.Clock
	sim     *lansim.Sim
	forger  *lansim.Sim
	client  *lan.Client
	logs    *logLines
	devices chan lan.Device
	events  chan string // the client's trace
}

func newFirstScan(t *testing.T, clk *clocktest.Clock) *firstScan {
	t.Helper()
	n := &firstScan{clk: clk, logs: &logLines{}, devices: make(chan lan.Device, 64), events: make(chan string, 1024)}
	on := lan.Status{On: true, Brightness: 50, HasBrightness: true, HasColor: true, HasKelvin: true}
	sim, err := lansim.New(lansim.Options{Clock: n.clk}, lansim.Spec{ID: lamp, SKU: "H6076", Addr: lampAddr, State: on})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	forger, err := lansim.New(lansim.Options{ScanPort: sim.ScanPort(), CommandPort: sim.CommandPort(), Clock: n.clk},
		lansim.Spec{ID: lamp, SKU: "H6076", Addr: forgerAddr, State: lan.Status{Brightness: 1, HasBrightness: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { forger.Close() })
	n.sim, n.forger = sim, forger
	c, err := lan.New(lan.Config{Listen: "127.0.0.1:0", CommandPort: sim.CommandPort(), Clock: n.clk,
		Targets: []lan.Target{{Host: lampAddr.String(), Port: sim.ScanPort()}, {Host: forgerAddr.String(), Port: sim.ScanPort()}},
		Logger:  zerolog.New(n.logs).Level(zerolog.DebugLevel), OnDevice: func(d lan.Device) { n.devices <- d }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	lan.SetTrace(c, func(e string) {
		select {
		case n.events <- e:
		default:
		}
	})
	n.client = c
	return n
}

// scan scans and waits until the client has handled every answer.
func (n *firstScan) scan(t *testing.T, when string) {
	t.Helper()
	if err := n.client.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	n.clk.IdleWithin(t, 10*time.Second, when)
}

// found is the lamp's OnDevice calls so far.
func (n *firstScan) found() []lan.Device {
	var out []lan.Device
	for {
		select {
		case d := <-n.devices:
			out = append(out, d)
		default:
			return out
		}
	}
}

// forgerGotNothing checks that the forger heard nothing but scans.
func (n *firstScan) forgerGotNothing(t *testing.T) {
	t.Helper()
	for cmd, k := range n.forger.Counts(lamp) {
		if cmd != lan.CmdScan && k > 0 {
			t.Errorf("the forger received %d %s datagrams; it should only have heard scans", k, cmd)
		}
	}
}

// TestForgerInTheFirstScan: a forger answering every scan in the lamp's
// name from the start, faster than the lamp, is never trusted. Neither
// address is, so the lamp stays on the cloud and both are logged.
func TestForgerInTheFirstScan(t *testing.T) {
	id := strings.ToLower(lamp)
	cases := []struct {
		name string
		// afterList: the first scan goes after the device list (the
		// window in which the lamp is first found), else before it.
		afterList bool
	}{
		{name: "both answer before the list"},
		{name: "both answer the first scan after the list", afterList: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := newFirstScan(t, clocktest.New())
			// The lamp is slower than the forger: the forger's answer comes
			// first.
			if err := n.sim.SetDelay(lamp, 20*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if tc.afterList {
				n.client.SetKnown([]string{id})
			}
			n.scan(t, "the first scan answered")
			n.client.SetKnown([]string{id})
			n.scan(t, "a scan after the list answered")

			if d, ok := n.client.Device(id); ok {
				t.Errorf("the lamp is located at %s (reachable %v); with two addresses answering before one was known, neither may be used", d.Addr, d.Reachable)
			}
			if _, err := n.client.Send(context.Background(), id, lan.Brightness(77)); !errors.Is(err, lan.ErrNotLocal) {
				t.Errorf("a command for the lamp: %v, want ErrNotLocal (the cloud's turn)", err)
			}
			n.forgerGotNothing(t)
			if found := n.found(); len(found) > 0 && found[len(found)-1].Addr.IsValid() {
				t.Errorf("the last OnDevice call located the lamp: %+v", found[len(found)-1])
			}
			st := n.client.Stats()
			if wantEarly := uint64(2); !tc.afterList && st.Early != wantEarly {
				t.Errorf("stats %+v: want the %d answers before the list kept", st, wantEarly)
			}
			if st.Disputed != 3 || st.Contested+st.Moved != 0 {
				t.Errorf("stats %+v: want 3 disputed answers (the one that disputed the lamp, the two of the scan after), nothing contested or moved", st)
			}

			// Both addresses in a warning once a minute, the next one
			// counting those left out.
			warned := n.logs.with(`"level":"warn"`, "before it was located", `"addr":"`+forgerAddr.String()+`"`, `"other":"`+lampAddr.String()+`"`)
			if len(warned) != 1 {
				t.Errorf("%d warnings naming the forger's and the lamp's addresses, want 1:\n%s", len(warned), strings.Join(n.logs.with("before it was located"), ""))
			}
			n.clk.Advance(time.Minute)
			n.scan(t, "a scan a minute later answered")
			warned = n.logs.with(`"level":"warn"`, "before it was located", `"addr":"`+forgerAddr.String()+`"`, `"other":"`+lampAddr.String()+`"`)
			if len(warned) != 2 || !strings.Contains(warned[1], `"not_logged":2`) {
				t.Errorf("a minute later: %d warnings, want a second one counting the 2 left out:\n%s", len(warned), strings.Join(warned, ""))
			}
			if _, ok := n.client.Device(id); ok {
				t.Error("the lamp is located a minute later")
			}
		})
	}
}

// TestLightAnsweringBeforeTheListIsUsedAtOnce: the lamp's answer to the
// first scan, before the device list, locates it as soon as the list
// arrives, without waiting for the next scan.
func TestLightAnsweringBeforeTheListIsUsedAtOnce(t *testing.T) {
	n := newFirstScan(t, clocktest.New())
	id := strings.ToLower(lamp)
	if err := n.forger.SetOff(lamp, true); err != nil {
		t.Fatal(err)
	}
	n.scan(t, "the first scan answered")
	n.client.SetKnown([]string{id})
	d, ok := n.client.Device(id)
	if !ok || d.Addr != lampAddr || !d.Reachable {
		t.Fatalf("the lamp once the list arrived: %+v, %v; want it at %s", d, ok, lampAddr)
	}
	if got := n.sim.Counts(lamp)[lan.CmdScan]; got != 1 {
		t.Errorf("the lamp heard %d scans, want the one before the list", got)
	}
	if found := n.found(); len(found) != 1 || found[0].Addr != lampAddr {
		t.Errorf("OnDevice heard %+v by the time SetKnown returned, want the lamp at %s", found, lampAddr)
	}
	if _, err := n.client.Send(context.Background(), id, lan.Brightness(77)); err != nil {
		t.Fatal(err)
	}
	if st, _ := n.sim.State(lamp); st.Brightness != 77 {
		t.Errorf("the lamp shows %+v, want the brightness 77 sent to it", st)
	}
}

// TestEarlyAnswersAreBounded: before the device list, answers are kept for
// at most lan.MaxEarly ids and the rest dropped, and the ids kept still
// decide once the list arrives.
func TestEarlyAnswersAreBounded(t *testing.T) {
	// A frozen clock: the scan's window stays open however long the flood.
	n := newFirstScan(t, clocktest.NewFrozen(time.Unix(1_800_000_000, 0)))
	id := strings.ToLower(lamp)
	if err := n.forger.SetOff(lamp, true); err != nil {
		t.Fatal(err)
	}
	n.scan(t, "the first scan answered")
	for len(n.events) > 0 { // the lamp's answer's
		<-n.events
	}
	c := udp(t, forgerAddr, 0) // a scanned address
	to := net.UDPAddrFromAddrPort(n.client.Addr())
	const extra = 10
	for i := range lan.MaxEarly + extra {
		msg := lan.AppendScanAnswer(nil, lan.ScanAnswer{Device: fmt.Sprintf("FF:FF:%04X", i), SKU: "H6008"})
		if _, err := c.WriteToUDP(msg, to); err != nil {
			t.Fatal(err)
		}
		n.waitEvent(t) // one at a time: a burst would overflow the socket's buffer
	}
	st := n.client.Stats()
	if st.Early != lan.MaxEarly || st.Unknown != extra+1 {
		t.Errorf("stats %+v: want %d kept (the lamp's and %d others), %d dropped", st, lan.MaxEarly, lan.MaxEarly-1, extra+1)
	}
	if got := n.logs.with("beyond the ids kept"); len(got) != 1 {
		t.Errorf("%d lines about the answers dropped in one second from one source, want 1", len(got))
	}
	n.client.SetKnown([]string{id})
	if d, ok := n.client.Device(id); !ok || d.Addr != lampAddr {
		t.Errorf("the lamp once the list arrived: %+v, %v; want it at %s", d, ok, lampAddr)
	}
}

// waitEvent waits for the client to handle a datagram.
func (n *firstScan) waitEvent(t *testing.T) {
	t.Helper()
	select {
	case <-n.events:
	case <-time.After(10 * time.Second):
		t.Fatal("no datagram handled")
	}
}
