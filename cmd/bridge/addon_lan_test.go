package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/lansim"
	"cloud2mqtt/internal/mqtttest"
	"cloud2mqtt/internal/topic"
)

// appLight is a light of the demo account that offers the LAN interface
// (H6008), and appLightAddr its address: loopback, never a group address.
const appLight = "AA:BB:CC:DD:EE:FF:10:03"

var appLightAddr = netip.MustParseAddr("127.0.0.213")

// TestAppModeLocalControl runs the daemon as the Supervisor starts the app
// with local control on: the options file turns on lan_enabled and names
// the light's address in lan_scan_targets, a stand-in Supervisor gives the
// broker, the cloud is the simulator. The light must be found on the LAN
// (its state says "connection":"local") and a command on its set topic must
// switch it with a LAN datagram and no cloud control request.
//
// The light listens on the protocol's command port (4003, which the bridge
// always sends commands to) on an address of its own; its scan port is free.
func TestAppModeLocalControl(t *testing.T) {
	b := mqtttest.Start(t)
	host, port, _ := net.SplitHostPort(b.Addr())
	sup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"result":"ok","data":{"host":%q,"port":%s,"ssl":false,"username":"","password":"","protocol":"3.1.1"}}`, host, port)
	}))
	defer sup.Close()

	catalogue := cloudsim.DemoCatalogue()
	catalogue.Devices = catalogue.Devices[:4]
	sim := cloudsim.New(cloudsim.Options{Catalogue: catalogue})
	cloudSrv := httptest.NewServer(sim)
	defer cloudSrv.Close()
	light, err := lansim.New(lansim.Options{Cloud: sim, CommandPort: lan.CommandPort},
		lansim.Spec{ID: appLight, SKU: "H6008", Linked: true, Addr: appLightAddr})
	if errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("%s:%d is taken by another program: the test needs the LAN's command port on that loopback address (%v)", appLightAddr, lan.CommandPort, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer light.Close()

	dir := t.TempDir()
	options, err := json.Marshal(map[string]any{
		"cloud_api_key":     sim.APIKey(),
		"cloud_base_url":    cloudSrv.URL,
		"poll_interval":     "30s",
		"cloud_daily_limit": 0,
		"lan_enabled":       true,
		"lan_scan_targets":  netip.AddrPortFrom(appLightAddr, uint16(light.ScanPort())).String(),
		"lan_listen":        "127.0.0.1:0",
		"lan_poll_interval": "1s",
		"log_level":         "debug",
		"mqtt_base_topic":   "c2m-lan-app",
		"state_dir":         filepath.Join(dir, "state"),
	})
	if err != nil {
		t.Fatal(err)
	}
	optionsFile := filepath.Join(dir, "options.json")
	if err := os.WriteFile(optionsFile, options, 0o600); err != nil {
		t.Fatal(err)
	}
	// The sidebar's listener (ingress) on a free port, for a stand-in
	// Supervisor on a loopback address of its own.
	ingressAddr := freeTCPAddr(t)
	environ := []string{"SUPERVISOR_TOKEN=sup-token", "SUPERVISOR_API=" + sup.URL, "ADDON_OPTIONS_FILE=" + optionsFile,
		"ADDON_INGRESS_ADDR=" + ingressAddr, "ADDON_INGRESS_PEER=" + ingressPeer.String()}

	var id string
	for _, d := range sim.Devices() {
		if d.Device == appLight {
			id = topic.DeviceID(d.SKU, d.Device)
		}
	}
	if id == "" {
		t.Fatalf("the demo account has no light %s", appLight)
	}
	base := topic.New("c2m-lan-app")
	stateTopic := base.State(id)
	watcher := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{})
	watcher.Subscribe(stateTopic, 1)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &syncWriter{w: &strings.Builder{}}
	done := make(chan int, 1)
	go func() { done <- run(ctx, nil, environ, io.Discard, logs) }()
	stop := func() int {
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(30 * time.Second):
			t.Fatal("the daemon did not stop within 30s of its context")
			return -1
		}
	}
	defer func() {
		if t.Failed() {
			t.Logf("the daemon's log:\n%s", logs.String())
		}
	}()

	// waitState waits for the light's state to satisfy ok.
	waitState := func(what string, ok func(map[string]any) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			m, got := watcher.Next(time.Until(deadline))
			if !got {
				stop()
				t.Fatalf("within 30s, no state of the light with %s", what)
			}
			var st map[string]any
			if m.Topic == stateTopic && json.Unmarshal([]byte(m.Payload), &st) == nil && ok(st) {
				return
			}
		}
	}
	waitState(`"connection":"local"`, func(st map[string]any) bool { return st["connection"] == "local" })

	// The Supervisor's watchdog and the sidebar reach the daemon on the
	// ingress port from the Supervisor's address; nobody else does.
	if code := ingressGet(t, ingressPeer, ingressAddr, "/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz on the ingress port from the Supervisor's address: %d, want 200 (the watchdog restarts the app)", code)
	}
	if code := ingressGet(t, netip.MustParseAddr("127.0.0.1"), ingressAddr, "/api/devices"); code != http.StatusForbidden {
		t.Errorf("GET /api/devices on the ingress port from another address: %d, want 403", code)
	}

	sim.ResetLog()
	if err := light.Switch(appLight, func(s *lan.Status) { s.On = false }); err != nil {
		t.Fatal(err)
	}
	waitState("power off (read over the LAN)", func(st map[string]any) bool { return st["powerSwitch"] == 0.0 })
	turns := light.Counts(appLight)[lan.CmdTurn]
	watcher.Publish(base.Set(id), `{"powerSwitch":1}`, false, 1)
	waitState("power on", func(st map[string]any) bool { return st["powerSwitch"] == 1.0 })
	if st, _ := light.State(appLight); !st.On {
		t.Errorf("the light is %+v after the command, want on", st)
	}
	if n := light.Counts(appLight)[lan.CmdTurn]; n <= turns {
		t.Errorf("no turn datagram reached the light (%d before, %d after)", turns, n)
	}
	for _, r := range sim.Requests() {
		if r.Endpoint == cloud.EndpointControl {
			t.Errorf("a cloud control request (%s %s) for a light switched over the LAN", r.Device, r.Instance)
		}
	}
	if code := stop(); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// ingressPeer is the stand-in Supervisor's address (its ingress proxy and
// watchdog).
var ingressPeer = netip.MustParseAddr("127.0.0.214")

// freeTCPAddr is a loopback address with a port free a moment ago.
func freeTCPAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// ingressGet asks addr for path from the address from, and returns the
// status code.
func ingressGet(t *testing.T, from netip.Addr, addr, path string) int {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: from.AsSlice()}}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s from %s: %v", path, from, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// syncWriter lets the test read what the daemon writes.
type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}
