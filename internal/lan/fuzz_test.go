package lan

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock/clocktest"
)

var answerSeeds = []string{
	`{"msg":{"cmd":"scan","data":{"ip":"192.168.1.23","device":"1F:80:C5:32:32:36:72:4E","sku":"H6076","bleVersionHard":"3.01.01","bleVersionSoft":"1.04.06","wifiVersionHard":"1.00.10","wifiVersionSoft":"1.02.11"}}}`,
	`{"msg":{"cmd":"scan","data":{"device":"AA:BB","sku":"H6008"}}}`,
	`{"msg":{"cmd":"devStatus","data":{"onOff":1,"brightness":40,"color":{"r":255,"g":136,"b":0},"colorTemInKelvin":0}}}`,
	`{"msg":{"cmd":"devStatus","data":{"onOff":true,"colorTemInKelvin":9000}}}`,
	`{"msg":{"cmd":"devStatus","data":{"onOff":1,"brightness":null}}}`,
	`{"msg":{"cmd":"turn","data":{"value":1}}}`,
	`{"msg":null}`,
	``,
}

// FuzzDecodeAnswer: no datagram crashes the decoder, every refusal is a
// malformed or oversized one, and what it accepts encodes to a datagram it
// reads back the same.
func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAnswer(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrOversized) {
				t.Fatalf("error wraps neither ErrMalformed nor ErrOversized: %v", err)
			}
			return
		}
		var again Answer
		switch a.Cmd {
		case CmdScan:
			again, err = DecodeAnswer(AppendScanAnswer(nil, a.Scan))
		case CmdStatus:
			again, err = DecodeAnswer(AppendStatus(nil, a.Status))
		default:
			t.Fatalf("accepted cmd %q", a.Cmd)
		}
		if err != nil || again != a {
			t.Fatalf("round trip: %+v -> %+v, %v", a, again, err)
		}
		if a.Cmd == CmdStatus {
			s := a.Status
			if s.Brightness < 0 || s.Brightness > 100 || (s.Kelvin != 0 && (s.Kelvin < MinKelvin || s.Kelvin > MaxKelvin)) {
				t.Fatalf("out of range accepted: %+v", s)
			}
			// What a device reports is what the LAN's table can set again
			// (a white of 0, "a colour shows", excepted).
			for inst, v := range s.Values() {
				if inst == capability.InstanceColorTemperatureK && v == int64(0) {
					continue
				}
				if _, ok := CommandFor(inst, v); !ok {
					t.Fatalf("status %+v reports %s %v, which no command sets", s, inst, v)
				}
			}
		}
	})
}

// FuzzDecodeRequest: the device side (the simulator) is as robust, and
// every command it accepts is valid and encodes back to itself.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range append(answerSeeds,
		`{"msg":{"cmd":"scan","data":{"account_topic":"reserve"}}}`,
		`{"msg":{"cmd":"devStatus","data":{}}}`,
		`{"msg":{"cmd":"brightness","data":{"value":40}}}`,
		`{"msg":{"cmd":"colorwc","data":{"color":{"r":255,"g":136,"b":0},"colorTemInKelvin":0}}}`,
	) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRequest(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrOversized) {
				t.Fatalf("error wraps neither ErrMalformed nor ErrOversized: %v", err)
			}
			return
		}
		if r.Command.Cmd == "" {
			return
		}
		if err := r.Command.Validate(); err != nil {
			t.Fatalf("accepted an invalid command: %v", err)
		}
		again, err := DecodeRequest(AppendCommand(nil, r.Command))
		if err != nil || again.Command != r.Command {
			t.Fatalf("round trip: %+v -> %+v, %v", r.Command, again.Command, err)
		}
	})
}

// FuzzClientDatagram: whatever arrives, from a found device's address or
// from anywhere else, the client neither crashes nor lets a stranger move
// or revive a device.
func FuzzClientDatagram(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	// A frozen clock: the scan's window stays open however long the fuzzing.
	clk := clocktest.NewFrozen(time.Unix(1_800_000_000, 0))
	c, err := New(Config{Listen: "127.0.0.1:0", Targets: []Target{{Host: "127.0.0.2"}}, Clock: clk})
	if err != nil {
		f.Fatal(err)
	}
	defer c.Close()
	device := netip.MustParseAddr("127.0.0.2")
	stranger := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.66"), 4003)
	c.SetKnown([]string{"AA:BB"})
	if err := c.Scan(context.Background()); err != nil {
		f.Fatal(err)
	}
	c.handle(AppendScanAnswer(nil, ScanAnswer{Device: "AA:BB", SKU: "H6008"}), netip.AddrPortFrom(device, 4001))
	f.Fuzz(func(t *testing.T, b []byte, fromDevice bool) {
		c.mu.Lock()
		c.devices["AA:BB"].Reachable = false
		c.mu.Unlock()
		from := stranger
		if fromDevice {
			from = netip.AddrPortFrom(device, 4003)
		}
		c.handle(b, from)
		d, ok := c.Device("AA:BB")
		if !ok || d.Addr != device {
			t.Fatalf("device after a datagram from %s: %+v, %v", from, d, ok)
		}
		if d.Reachable && !fromDevice {
			t.Fatalf("a stranger's datagram made the device reachable: %q", b)
		}
	})
}

// FuzzFirstScan: whatever arrives before the device list, the early
// answers stay bounded and the device is never located at another
// address than its own.
func FuzzFirstScan(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Add(AppendScanAnswer(nil, ScanAnswer{Device: "aa:bb", SKU: "H6008"}), false) // the forger
	// A frozen clock: the scan's window stays open however long the fuzzing.
	clk := clocktest.NewFrozen(time.Unix(1_800_000_000, 0))
	light, other := netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.66")
	c, err := New(Config{Listen: "127.0.0.1:0", Targets: []Target{{Host: light.String()}, {Host: other.String()}}, Clock: clk})
	if err != nil {
		f.Fatal(err)
	}
	defer c.Close()
	if err := c.Scan(context.Background()); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte, fromDevice bool) {
		c.mu.Lock() // a fresh start: no list yet, nothing found
		c.listed, c.early, c.known = false, map[string]*earlyAnswer{}, map[string]string{}
		c.devices, c.byAddr = map[string]*device{}, map[netip.Addr]*device{}
		c.mu.Unlock()
		c.handle(AppendScanAnswer(nil, ScanAnswer{Device: "AA:BB", SKU: "H6008"}), netip.AddrPortFrom(light, 4001))
		from := netip.AddrPortFrom(other, 4001)
		if fromDevice {
			from = netip.AddrPortFrom(light, 4003)
		}
		c.handle(b, from)
		c.mu.Lock()
		kept := len(c.early)
		c.mu.Unlock()
		if kept > maxEarly {
			t.Fatalf("%d ids kept before the list, more than %d", kept, maxEarly)
		}
		c.SetKnown([]string{"AA:BB"})
		d, ok := c.Device("AA:BB")
		a, err := DecodeAnswer(b)
		claimed := err == nil && a.Cmd == CmdScan && strings.EqualFold(a.Scan.Device, "AA:BB")
		switch {
		case ok && d.Addr != light:
			t.Fatalf("located at %s after %q from %s", d.Addr, b, from)
		case !fromDevice && claimed && ok:
			t.Fatalf("located at %s though %s answered in its name too", d.Addr, other)
		case (fromDevice || !claimed) && !ok:
			t.Fatalf("not located after its own answer and %q from %s", b, from)
		}
	})
}
