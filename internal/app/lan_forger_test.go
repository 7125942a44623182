package app_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/lansim"
)

// The forger of issues 28 and 40: something at 127.0.0.99 answering the
// scans in a local light's name (with the multicast group among
// LAN_SCAN_TARGETS every address on the LAN hears them; the tests scan it
// by unicast), its status its own.
const (
	lanForgerAddr       = "127.0.0.99"
	lanForgedBrightness = 3
)

// newLANForger starts the forger on the simulator's ports and adds it to
// the scan targets (before the daemon starts).
func newLANForger(t *testing.T, h *harness, ls *lansim.Sim, cc *lan.Config) *lansim.Sim {
	t.Helper()
	f, err := lansim.New(lansim.Options{ScanPort: ls.ScanPort(), CommandPort: ls.CommandPort(), Clock: h.clock},
		lansim.Spec{ID: lanQuietLight, SKU: "H6008", Addr: netip.MustParseAddr(lanForgerAddr),
			State: lan.Status{On: false, Brightness: lanForgedBrightness, HasBrightness: true, HasColor: true, HasKelvin: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	cc.Targets = append(cc.Targets, lan.Target{Host: lanForgerAddr})
	return f
}

// startWithListHeld starts the daemon with the cloud's device list held
// back (a fresh install whose cloud answers slowly): the LAN's first scan
// goes out and is answered before the list arrives. Once the LAN client
// holds early answers (scan answers for devices it does not know yet,
// lan.Stats.Early), then is called (when set) and the list goes; it
// returns when the daemon is ready.
func (h *lanHarness) startWithListHeld(early uint64, then func()) {
	h.t.Helper()
	release := h.sim.Faults().Hang(cloud.EndpointDevices)
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.main.Run(ctx) }()
	h.t.Cleanup(h.stop)
	// The list's request is work in hand while it hangs: the daemon is not
	// idle until it is let go, so this waits for the count.
	h.watch.until(wait, "the first scan's answers, held until the device list", func() bool {
		r := h.main.LAN()
		return r != nil && r.Stats().Early >= early
	})
	if then != nil {
		then()
	}
	release()
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	if err := h.main.WaitReady(wctx); err != nil {
		h.t.Fatalf("bridge not ready: %v", err)
	}
}

// forgerGotNothing checks that the bridge sent the forger nothing but
// scans, and that MQTT never showed its values.
func (h *lanHarness) forgerGotNothing(forger *lansim.Sim) {
	h.t.Helper()
	if c := forger.Counts(lanQuietLight); c[lan.CmdBrightness]+c[lan.CmdTurn]+c[lan.CmdColor]+c[lan.CmdStatus] != 0 {
		h.t.Errorf("the bridge sent the forger %v; it should only have heard the scans", c)
	}
	for _, m := range h.watch.messages() {
		if m.topic != h.stateTopic(lanQuietLight) {
			continue
		}
		var st map[string]any
		if json.Unmarshal([]byte(m.payload), &st) == nil && st["brightness"] == float64(lanForgedBrightness) {
			h.t.Errorf("MQTT showed the forger's value: %s", m.payload)
		}
	}
}

// warnings are the log's warnings with the message part and both addresses
// (addr and other, in either order).
func (h *lanHarness) warnings(part string, a, b string) []map[string]any {
	return h.logLines(func(l map[string]any) bool {
		msg, _ := l["message"].(string)
		pair := (l["addr"] == a && l["other"] == b) || (l["addr"] == b && l["other"] == a)
		return l["level"] == "warn" && strings.Contains(msg, part) && pair
	})
}

// TestLANForgerInTheFirstScan: a forger answers every scan from the start,
// faster than the light, and the device list comes after the first scan. With
// two addresses for one id before either is known, neither is trusted: the light
// stays on the cloud, both addresses are logged, and the forger gets nothing.
func TestLANForgerInTheFirstScan(t *testing.T) {
	t.Parallel()
	var forger *lansim.Sim
	h := newLANHarness(t, nil, func(h *harness, ls *lansim.Sim, cc *lan.Config) {
		forger = newLANForger(t, h, ls, cc)
		// The light is slower than the forger: its answers come second.
		if err := ls.SetDelay(lanQuietLight, 20*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	})
	h.startWithListHeld(3, nil) // the two lights' answers and the forger's
	w := h.watch
	h.waitConnection(lanToggleLight, "local")
	// The next scan (LAN_SCAN_INTERVAL, 10 min): the forger and the light
	// answer again, after the list.
	scans := h.received(lanQuietLight, lan.CmdScan)
	h.jumpUntil(wait, time.Minute, "the next LAN scan answered", func() bool {
		return h.received(lanQuietLight, lan.CmdScan) > scans && forger.Counts(lanQuietLight)[lan.CmdScan] > scans
	})
	if st := h.waitConnection(lanQuietLight, "cloud"); st["brightness"] == float64(lanForgedBrightness) {
		t.Errorf("the light's state shows the forger's brightness: %v", st)
	}
	for _, d := range h.main.LAN().Devices() {
		if d.ID == lanQuietLight {
			t.Errorf("the light is located at %s; with two addresses answering for it, neither may be used", d.Addr)
		}
	}

	// Its commands go to the cloud.
	h.sim.ResetLog()
	h.publish("cloud2mqtt/"+h.ids[lanQuietLight]+"/set/brightness", `40`)
	w.until(wait, "the brightness through the cloud", func() bool {
		_, inst := cloudRequests(h.sim, cloud.EndpointControl, lanQuietLight)
		return strings.Contains(strings.Join(inst, ","), "brightness")
	})
	w.waitJSON(wait, h.stateTopic(lanQuietLight), func(m map[string]any) bool { return m["brightness"] == 40.0 })
	h.forgerGotNothing(forger)

	// Both addresses logged: when the list arrived, and at the next scan
	// (the rescan when the list arrived fell within the minute).
	real, _ := h.lan.Addr(lanQuietLight)
	if got := h.warnings("two addresses", real.String(), lanForgerAddr); len(got) != 2 {
		t.Errorf("%d warnings naming the light's and the forger's addresses over 10 minutes, want 2 (one a minute at most, one per scan)", len(got))
	}
	if st := h.main.LAN().Stats(); st.Disputed == 0 {
		t.Errorf("stats %+v: the disputed answers are not counted", st)
	}
}

// TestLANForgerCannotTakeOverALight: the light answered the first scan alone and
// the forger turns up later in its name. The light keeps its address, commands
// and reads, MQTT shows only its values, and the conflict is logged.
func TestLANForgerCannotTakeOverALight(t *testing.T) {
	t.Parallel()
	var forger *lansim.Sim
	h := newLANHarness(t, nil, func(h *harness, ls *lansim.Sim, cc *lan.Config) {
		forger = newLANForger(t, h, ls, cc)
		if err := forger.SetOff(lanQuietLight, true); err != nil {
			t.Fatal(err)
		}
	})
	// The two lights' answers; from then on the light's scan answers are
	// lost: it is found by the one it gave before the list.
	h.startWithListHeld(2, func() {
		if err := h.lan.SetScanMute(lanQuietLight, true); err != nil {
			t.Fatal(err)
		}
	})
	w := h.watch
	h.waitConnection(lanQuietLight, "local")
	if err := h.lan.SetScanMute(lanQuietLight, false); err != nil {
		t.Fatal(err)
	}
	if err := forger.SetOff(lanQuietLight, false); err != nil {
		t.Fatal(err)
	}
	// The next scan is LAN_SCAN_INTERVAL (10 min) away.
	h.jumpUntil(wait, time.Minute, "the forger's scan answer refused", func() bool { return h.main.LAN().Stats().Contested >= 1 })

	id := h.ids[lanQuietLight]
	h.publish("cloud2mqtt/"+id+"/set/brightness", `40`)
	w.waitJSON(wait, h.stateTopic(lanQuietLight), func(m map[string]any) bool {
		return m["brightness"] == 40.0 && m["connection"] == "local"
	})
	polls := h.received(lanQuietLight, lan.CmdStatus)
	h.jumpUntil(wait, 500*time.Millisecond, "two more LAN polls of the light", func() bool { return h.received(lanQuietLight, lan.CmdStatus) >= polls+2 })

	if st, _ := h.lan.State(lanQuietLight); st.Brightness != 40 {
		t.Errorf("the light shows %+v, want the brightness 40 sent to it", st)
	}
	h.forgerGotNothing(forger)
	real, _ := h.lan.Addr(lanQuietLight)
	for _, d := range h.main.LAN().Devices() {
		if d.ID == lanQuietLight && d.Addr != real {
			t.Errorf("the light is at %s, want its own address %s", d.Addr, real)
		}
	}
	warned := h.logLines(func(l map[string]any) bool {
		msg, _ := l["message"].(string)
		return l["level"] == "warn" && strings.Contains(msg, "two addresses answer") && l["addr"] == real.String() && l["other"] == lanForgerAddr
	})
	if len(warned) != 1 {
		t.Errorf("%d warnings naming the light's and the forger's addresses, want 1", len(warned))
	}
}
