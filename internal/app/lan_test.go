package app_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/lansim"
	"cloud2mqtt/internal/topic"
)

// Local control end to end: the simulated cloud, lights on the LAN simulator at
// loopback addresses (never a group address), a test broker, the whole daemon.
const (
	lanToggleLight = "AA:BB:CC:DD:EE:FF:10:01" // H619C: has a toggle the LAN lacks
	lanCloudLight  = "AA:BB:CC:DD:EE:FF:10:02" // H6076: not on the LAN
	lanQuietLight  = "AA:BB:CC:DD:EE:FF:10:03" // H6008: the LAN gives all the cloud reports
)

type lanHarness struct {
	*harness
	lan *lansim.Sim
	cc  lan.Config        // the LAN client's settings (the simulator's)
	ids map[string]string // device → topic id
}

func startLANHarness(t *testing.T, env map[string]string) *lanHarness {
	t.Helper()
	return startLANHarnessWith(t, env, nil)
}

// startLANHarnessWith is startLANHarness with more on the LAN: extra, when
// set, is called with the harness, the simulator and the client's settings before the
// daemon starts.
func startLANHarnessWith(t *testing.T, env map[string]string, extra func(h *harness, ls *lansim.Sim, cc *lan.Config)) *lanHarness {
	t.Helper()
	h := newLANHarness(t, env, extra)
	h.start()
	return h
}

// newLANHarness is startLANHarnessWith's harness, not started.
func newLANHarness(t *testing.T, env map[string]string, extra func(h *harness, ls *lansim.Sim, cc *lan.Config)) *lanHarness {
	t.Helper()
	e := map[string]string{"LAN_ENABLED": "true", "LAN_POLL_INTERVAL": "1s", "LAN_SCAN_INTERVAL": "10m", "POLL_INTERVAL": "2s", "HTTP_ADDR": "127.0.0.1:0"}
	for k, v := range env {
		e[k] = v
	}
	h := startHarness(t, harnessOptions{env: e, sim: cloudsim.Options{Catalogue: firstDevices(4)}, noStart: true})
	ls, err := lansim.New(lansim.Options{Cloud: h.sim, Clock: h.clock},
		lansim.Spec{ID: lanToggleLight, SKU: "H619C", Linked: true},
		lansim.Spec{ID: lanQuietLight, SKU: "H6008", Linked: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ls.Close() })
	cc := lan.Config{Listen: "127.0.0.1:0", ScanPort: ls.ScanPort(), CommandPort: ls.CommandPort()}
	for _, id := range []string{lanToggleLight, lanQuietLight} {
		a, err := ls.Addr(id)
		if err != nil {
			t.Fatal(err)
		}
		cc.Targets = append(cc.Targets, lan.Target{Host: a.String()})
	}
	if extra != nil {
		extra(h, ls, &cc)
	}
	h.main.LANClient = &cc
	lh := &lanHarness{harness: h, lan: ls, cc: cc, ids: map[string]string{}}
	for _, d := range h.sim.Devices() {
		lh.ids[d.Device] = topic.DeviceID(d.SKU, d.Device)
	}
	return lh
}

func (h *lanHarness) stateTopic(dev string) string { return "cloud2mqtt/" + h.ids[dev] + "/state" }

// waitConnection waits for the device's state to say how it is reached.
func (h *lanHarness) waitConnection(dev, want string) map[string]any {
	h.t.Helper()
	return h.watch.waitJSON(wait, h.stateTopic(dev), func(m map[string]any) bool { return m["connection"] == want })
}

// cloudRequests counts the cloud's requests of an endpoint for a device
// since the log was reset.
func cloudRequests(sim *cloudsim.Sim, endpoint, dev string) (n int, instances []string) {
	for _, r := range sim.Requests() {
		if r.Endpoint == endpoint && r.Device == dev {
			n++
			instances = append(instances, r.Instance)
		}
	}
	return n, instances
}

func (h *lanHarness) received(dev, cmd string) int { return h.lan.Counts(dev)[cmd] }

func TestLocalControl(t *testing.T) {
	t.Parallel()
	h := startLANHarness(t, nil)
	w := h.watch

	// Found by unicast scan and matched to the cloud's list.
	h.waitConnection(lanToggleLight, "local")
	h.waitConnection(lanQuietLight, "local")
	h.waitConnection(lanCloudLight, "cloud")
	w.until(wait, "bridge/devices showing the local addresses", func() bool {
		p, _ := w.get("cloud2mqtt/bridge/devices")
		var list []struct {
			Device string `json:"device"`
			Local  *struct {
				Address   string `json:"address"`
				Reachable bool   `json:"reachable"`
			} `json:"local"`
		}
		if json.Unmarshal([]byte(p), &list) != nil {
			return false
		}
		ok := 0
		for _, d := range list {
			a, _ := h.lan.Addr(d.Device)
			switch {
			case d.Device == lanCloudLight && d.Local == nil:
				ok++
			case d.Local != nil && d.Local.Reachable && a.IsValid() && d.Local.Address == a.String():
				ok++
			}
		}
		return ok == 3
	})

	w.waitJSON(wait, "cloud2mqtt/bridge/info", func(m map[string]any) bool {
		l, _ := m["lan"].(map[string]any)
		return l != nil && l["enabled"] == true && l["found"] == 2.0 && l["reachable"] == 2.0
	})

	t.Run("the status page says local or cloud", func(t *testing.T) {
		resp, err := http.Get(h.main.HTTPURL() + "/api/devices")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var page struct{ Devices []struct{ ID, Path string } }
		if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{h.ids[lanToggleLight]: "local", h.ids[lanQuietLight]: "local", h.ids[lanCloudLight]: "cloud"}
		for _, d := range page.Devices {
			if w, ok := want[d.ID]; ok && d.Path != w {
				t.Errorf("/api/devices: %s path %q, want %q", d.ID, d.Path, w)
			}
			delete(want, d.ID)
		}
		if len(want) != 0 {
			t.Errorf("/api/devices lacks %v", want)
		}
	})

	t.Run("commands go over the LAN, not to the cloud", func(t *testing.T) {
		h.sim.ResetLog()
		id := h.ids[lanQuietLight]
		h.publish("cloud2mqtt/"+id+"/set", `{"powerSwitch":1,"brightness":40,"colorRgb":"#ff8800"}`)
		w.waitJSON(wait, h.stateTopic(lanQuietLight), func(m map[string]any) bool {
			return m["powerSwitch"] == 1.0 && m["brightness"] == 40.0 && m["colorRgb"] == float64(0xff8800)
		})
		h.publish("cloud2mqtt/"+id+"/set/colorTemperatureK", `4000`)
		w.waitJSON(wait, h.stateTopic(lanQuietLight), func(m map[string]any) bool { return m["colorTemperatureK"] == 4000.0 })
		for _, cmd := range []string{lan.CmdTurn, lan.CmdBrightness, lan.CmdColor} {
			if h.received(lanQuietLight, cmd) == 0 {
				t.Errorf("no %s datagram arrived at the device", cmd)
			}
		}
		if n, inst := cloudRequests(h.sim, cloud.EndpointControl, lanQuietLight); n != 0 {
			t.Errorf("%d cloud control requests for a local light (%v), want none", n, inst)
		}
		if st, _ := h.lan.State(lanQuietLight); !st.On || st.Kelvin != 4000 || st.Brightness != 40 {
			t.Errorf("the device shows %+v", st)
		}
	})

	t.Run("a change at the device shows within a LAN poll, no cloud state read of local lights", func(t *testing.T) {
		h.sim.ResetLog()
		polls := h.received(lanQuietLight, lan.CmdStatus)
		if err := h.lan.Switch(lanQuietLight, func(s *lan.Status) { s.Brightness, s.HasBrightness = 77, true }); err != nil {
			t.Fatal(err)
		}
		// Within a LAN poll (a second) on the clock, jumped a quarter of a
		// second at a time.
		changed := h.clock.Now()
		h.jumpUntil(wait, 250*time.Millisecond, "the change at the device on MQTT", func() bool {
			p, _ := w.get(h.stateTopic(lanQuietLight))
			var m map[string]any
			return json.Unmarshal([]byte(p), &m) == nil && m["brightness"] == 77.0
		})
		if took := h.clock.Now().Sub(changed); took > 3*time.Second {
			t.Errorf("the change at the device showed %v after it was made (on the clock), want within a LAN poll", took.Round(time.Millisecond))
		}
		// A window: three LAN polls of the local lights, and the cloud
		// light read by the cloud meanwhile (the clock jumping half a
		// second at a time: LAN polls every second, cloud reads every 3).
		h.jumpUntil(wait, 500*time.Millisecond, "three LAN polls and a cloud read of the cloud light", func() bool {
			n, _ := cloudRequests(h.sim, cloud.EndpointState, lanCloudLight)
			return h.received(lanQuietLight, lan.CmdStatus) >= polls+3 && n > 0
		})
		for _, dev := range []string{lanQuietLight, lanToggleLight} {
			if n, _ := cloudRequests(h.sim, cloud.EndpointState, dev); n != 0 {
				t.Errorf("%s: %d cloud state reads in the window, want none (the LAN reads it; its toggle every LAN_SCAN_INTERVAL)", dev, n)
			}
		}
	})

	t.Run("scenes and toggles still reach the cloud", func(t *testing.T) {
		// A scene of the light, as bridge/devices lists it.
		var scene string
		w.until(wait, "the light's scenes in bridge/devices", func() bool {
			p, _ := w.get("cloud2mqtt/bridge/devices")
			var list []struct {
				Device       string `json:"device"`
				Capabilities []struct {
					Instance   string `json:"instance"`
					Parameters struct {
						Options []struct {
							Name string `json:"name"`
						} `json:"options"`
					} `json:"parameters"`
				} `json:"capabilities"`
			}
			_ = json.Unmarshal([]byte(p), &list)
			for _, d := range list {
				for _, c := range d.Capabilities {
					if d.Device == lanToggleLight && c.Instance == "lightScene" && len(c.Parameters.Options) > 0 {
						scene = c.Parameters.Options[0].Name
					}
				}
			}
			return scene != ""
		})
		h.sim.ResetLog()
		h.publish("cloud2mqtt/"+h.ids[lanToggleLight]+"/set/lightScene", scene)
		h.publish("cloud2mqtt/"+h.ids[lanToggleLight]+"/set/gradientToggle", `1`)
		w.until(wait, "the scene's and the toggle's cloud control requests", func() bool {
			_, inst := cloudRequests(h.sim, cloud.EndpointControl, lanToggleLight)
			all := strings.Join(inst, ",")
			return strings.Contains(all, "lightScene") && strings.Contains(all, "gradientToggle")
		})
	})

	t.Run("garbage, oversized and spoofed datagrams change nothing", func(t *testing.T) {
		before, _ := w.get(h.stateTopic(lanQuietLight))
		stats := h.main.LAN().Stats()
		to := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(h.main.LAN().Addr()))
		c, err := net.DialUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.9:0")), to)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		spoof := lan.AppendStatus(nil, lan.Status{On: false, Brightness: 3, HasBrightness: true})
		for _, p := range [][]byte{[]byte("garbage"), []byte(`{"msg":`), make([]byte, 4000), spoof,
			lan.AppendScanAnswer(nil, lan.ScanAnswer{Device: lanQuietLight, SKU: "H6008", IP: netip.MustParseAddr("127.0.0.9")})} {
			if _, err := c.Write(p); err != nil {
				t.Fatal(err)
			}
		}
		w.until(wait, "the datagrams counted as dropped", func() bool {
			s := h.main.LAN().Stats()
			return s.Malformed >= stats.Malformed+2 && s.Oversized > stats.Oversized && s.Spoofed > stats.Spoofed
		})
		// The next LAN poll leaves the state as it was.
		polls := h.received(lanQuietLight, lan.CmdStatus)
		h.jumpUntil(wait, 500*time.Millisecond, "a LAN poll", func() bool { return h.received(lanQuietLight, lan.CmdStatus) > polls })
		if after, _ := w.get(h.stateTopic(lanQuietLight)); after != before {
			t.Errorf("state changed:\n%s\n%s", before, after)
		}
		if a, _ := h.lan.Addr(lanQuietLight); func() bool {
			for _, d := range h.main.LAN().Devices() {
				if d.ID == lanQuietLight {
					return d.Addr != a
				}
			}
			return true
		}() {
			t.Errorf("a forged scan answer moved the light")
		}
	})

	t.Run("a silent device's command goes through the cloud within 3 s", func(t *testing.T) {
		h.sim.ResetLog()
		if err := h.lan.SetOff(lanToggleLight, true); err != nil {
			t.Fatal(err)
		}
		// Not jumped: the LAN's tries (three of 300 ms) and the cloud's
		// answer in the time they take.
		sent := h.clock.Now()
		h.publish("cloud2mqtt/"+h.ids[lanToggleLight]+"/set/brightness", `23`)
		var took time.Duration
		w.until(wait, "the brightness through the cloud", func() bool {
			_, inst := cloudRequests(h.sim, cloud.EndpointControl, lanToggleLight)
			took = h.clock.Now().Sub(sent)
			return strings.Contains(strings.Join(inst, ","), "brightness")
		})
		if took > 3*time.Second {
			t.Errorf("the cloud got the command %s after it was sent (on the clock), want within 3 s", took)
		}
		w.waitJSON(wait, h.stateTopic(lanToggleLight), func(m map[string]any) bool {
			return m["brightness"] == 23.0 && m["connection"] == "cloud"
		})
		if v, _ := h.sim.Value(lanToggleLight, "brightness"); fmt.Sprint(v) != "23" {
			t.Errorf("the cloud has brightness %v", v)
		}
		// The next command goes to the cloud at once.
		h.publish("cloud2mqtt/"+h.ids[lanToggleLight]+"/set/brightness", `24`)
		w.until(wait, "the next brightness through the cloud", func() bool {
			n, _ := cloudRequests(h.sim, cloud.EndpointControl, lanToggleLight)
			return n >= 2
		})
		w.until(wait, "the cloud at the last value (none lost)", func() bool {
			v, _ := h.sim.Value(lanToggleLight, "brightness")
			return fmt.Sprint(v) == "24"
		})
		// Back on the LAN: found local again by its next status answer.
		if err := h.lan.SetOff(lanToggleLight, false); err != nil {
			t.Fatal(err)
		}
		h.waitConnection(lanToggleLight, "local")
	})

	t.Run("cloud stopped: local lights still switch and stay available", func(t *testing.T) {
		h.cloud.CloseClientConnections()
		h.cloud.Close()
		id := h.ids[lanQuietLight]
		for _, v := range []string{"0", "1"} {
			h.publish("cloud2mqtt/"+id+"/set/powerSwitch", v)
			w.waitJSON(wait, h.stateTopic(lanQuietLight), func(m map[string]any) bool { return fmt.Sprint(m["powerSwitch"]) == v })
			if st, _ := h.lan.State(lanQuietLight); st.On != (v == "1") {
				t.Errorf("device on=%v after %s", st.On, v)
			}
		}
		if a, _ := w.get("cloud2mqtt/" + id + "/availability"); a != "online" {
			t.Errorf("availability %q with the cloud stopped, want online", a)
		}
	})
}

// TestLocalControlWithoutTheCloud: with STATE_DIR, a start while the cloud
// fails every request (the device list comes from the state directory)
// still finds the local lights, switches and reads them, and keeps them
// available.
func TestLocalControlWithoutTheCloud(t *testing.T) {
	t.Parallel()
	h := startLANHarness(t, map[string]string{"STATE_DIR": t.TempDir()})
	w := h.watch
	h.waitConnection(lanQuietLight, "local")
	h.stop()
	h.sim.Faults().FailFraction(cloudsim.AnyEndpoint, 1, 503)
	h.main = h.newMain(h.main.Config)
	h.main.LANClient = &h.cc
	h.start() // ready: the device list comes from the state directory
	// Found on the LAN again by the start's scan (a command before that
	// goes to the cloud, as it would for any light not found yet).
	w.until(wait, "the light found on the LAN", func() bool {
		for _, d := range h.main.LAN().Devices() {
			if d.ID == lanQuietLight && d.Reachable {
				return true
			}
		}
		return false
	})

	id := h.ids[lanQuietLight]
	for _, v := range []string{"0", "1"} {
		h.publish("cloud2mqtt/"+id+"/set/powerSwitch", v)
		w.waitJSON(wait, h.stateTopic(lanQuietLight), func(m map[string]any) bool {
			return fmt.Sprint(m["powerSwitch"]) == v && m["connection"] == "local"
		})
		if st, _ := h.lan.State(lanQuietLight); st.On != (v == "1") {
			t.Errorf("device on=%v after %s", st.On, v)
		}
	}
	if err := h.lan.Switch(lanQuietLight, func(s *lan.Status) { s.Brightness, s.HasBrightness = 12, true }); err != nil {
		t.Fatal(err)
	}
	w.waitJSON(wait, h.stateTopic(lanQuietLight), func(m map[string]any) bool { return m["brightness"] == 12.0 })
	if a, _ := w.get("cloud2mqtt/" + id + "/availability"); a != "online" {
		t.Errorf("local light's availability %q with the cloud failing, want online", a)
	}
	if n, _ := cloudRequests(h.sim, cloud.EndpointControl, lanQuietLight); n != 0 {
		t.Errorf("%d cloud control requests for the local light", n)
	}
}
