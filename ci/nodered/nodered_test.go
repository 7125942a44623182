//go:build nodered

// Package nodered_test runs deploy/node-red/flows.json in a real, headless
// Node-RED against the real bridge binary, a real mosquitto and the
// simulated cloud, and checks what a Node-RED user would see: device states
// arrive in the flow as JSON objects, the flow's formatter names the device,
// and the flow's inject nodes change the simulated device.
//
// It needs Node-RED and mosquitto, so it is compiled only with -tags
// nodered, and CLOUD2MQTT_NODE_RED must name Node-RED's red.js (.ci/run
// installs Node-RED and sets both):
//
//	CLOUD2MQTT_NODE_RED=/tmp/cloud2mqtt-ci/node-red/node_modules/node-red/red.js \
//	    go test -tags nodered -race -count=1 -v ./ci/nodered/
//
// With -race the bridge binary is built with the race detector too.
package nodered_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/mqtttest"
	"cloud2mqtt/internal/topic"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// EnvNodeRED names Node-RED's red.js; without it the test is skipped.
const EnvNodeRED = "CLOUD2MQTT_NODE_RED"

const (
	apiKey = "nodered-e2e-key-83c1d0"
	// The device the flow's inject nodes command: the demo catalogue's
	// first light, "Living Room Strip".
	stripDevice = "AA:BB:CC:DD:EE:FF:10:01"
	stripSKU    = "H619C"
	stripName   = "Living Room Strip"
	wait        = 30 * time.Second
)

func TestNodeREDFlow(t *testing.T) {
	redJS := os.Getenv(EnvNodeRED)
	if redJS == "" {
		t.Fatalf("set %s to Node-RED's red.js (.ci/run installs Node-RED and sets it); the nodered tag needs it", EnvNodeRED)
	}
	if _, err := os.Stat(redJS); err != nil {
		t.Fatalf("%s=%s: %v (install with: npm install --prefix DIR node-red@4.1.8)", EnvNodeRED, redJS, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH: %v", err)
	}
	root := moduleRoot(t)
	id := topic.DeviceID(stripSKU, stripDevice)
	stateTopic := "cloud2mqtt/" + id + "/state"

	// The broker Node-RED users run, and the simulated cloud with the strip
	// on at 20 % so that both of the flow's commands are changes.
	broker := mqtttest.Start(t, mqtttest.WithKind(mqtttest.Mosquitto))
	sim := cloudsim.New(cloudsim.Options{APIKey: apiKey})
	for inst, v := range map[string]any{"powerSwitch": 1, "brightness": 20} {
		if err := sim.SetValue(stripDevice, inst, v); err != nil {
			t.Fatalf("the demo catalogue no longer has the flow's device %s (%s): %v", stripName, stripDevice, err)
		}
	}
	cloudSrv := httptest.NewServer(sim)
	t.Cleanup(cloudSrv.Close)

	box := newInbox(t, broker.URL(), "cloud2mqtt/#", "ci/nodered/#")

	// The bridge, built and run as a user runs it: configured by the
	// environment only.
	bin := filepath.Join(t.TempDir(), "bridge")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command(goTool(t), append(args, "./cmd/bridge")...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/bridge: %v\n%s", err, out)
	}
	bridgeCmd := exec.Command(bin)
	bridgeCmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"CLOUD_BASE_URL=" + cloudSrv.URL,
		"CLOUD_API_KEY=" + apiKey,
		"MQTT_URL=" + broker.URL(),
		"MQTT_CLIENT_ID=cloud2mqtt-nodered-e2e",
		"POLL_INTERVAL=5s",
		"LOG_FORMAT=json",
		"LOG_LEVEL=debug",
	}
	bridge := startProc(t, "bridge", bridgeCmd)
	box.waitFrom(0, wait, "the bridge online", func(m mqtttest.Message) bool {
		return m.Topic == "cloud2mqtt/bridge/state" && m.Payload == "online"
	}, bridge)
	box.waitFrom(0, wait, "the strip's state from the bridge", func(m mqtttest.Message) bool {
		return m.Topic == stateTopic && jsonValue(m.Payload, "brightness") == "20"
	}, bridge)

	// Node-RED, headless, with a copy of the flow pointed at the broker and
	// probes that republish what the flow's nodes produced.
	userDir := t.TempDir()
	port := mqtttest.FreePort(t)
	writeFlow(t, filepath.Join(root, "deploy", "node-red", "flows.json"), filepath.Join(userDir, "flows.json"), broker.Addr())
	writeSettings(t, filepath.Join(userDir, "settings.js"), port)
	nrCmd := exec.Command(node, redJS, "--settings", filepath.Join(userDir, "settings.js"), "--userDir", userDir, "flows.json")
	nrCmd.Dir = userDir
	nodeRED := startProc(t, "node-red", nrCmd)
	admin := "http://127.0.0.1:" + strconv.Itoa(port)
	version := waitSettings(t, admin, nodeRED)
	t.Logf("Node-RED %s running the flow on %s", version, admin)

	// 1. States reach the flow as JSON objects (the MQTT node's
	// auto-detect); the bridge's own plain "online" reaches it as a string
	// and the flow's formatter skips it.
	box.waitFrom(0, wait, "the strip's state in Node-RED as a JSON object", func(m mqtttest.Message) bool {
		s, ok := probe(m)
		return ok && s.Topic == stateTopic && s.Type == "object" && s.Payload["brightness"] == float64(20)
	}, nodeRED, bridge)
	box.waitFrom(0, wait, "the bridge's plain online state in Node-RED as a string", func(m mqtttest.Message) bool {
		s, ok := probe(m)
		return ok && s.Topic == "cloud2mqtt/bridge/state" && s.Type == "string"
	}, nodeRED, bridge)
	for _, m := range box.all {
		if s, ok := probe(m); ok && strings.HasPrefix(s.Topic, "cloud2mqtt/") && strings.HasSuffix(s.Topic, "/state") && s.Topic != "cloud2mqtt/bridge/state" && s.Type != "object" {
			t.Errorf("Node-RED got %s as %s, want a JSON object: %s", s.Topic, s.Type, m.Payload)
		}
	}

	// 2. The flow's "off" button: the cloud gets powerSwitch=0, the state
	// follows, and the flow's formatter shows it under the device's name.
	mark := box.mark()
	inject(t, admin, "c2m_cmd_off")
	waitControl(t, sim, map[string]int64{"powerSwitch": 0}, nodeRED, bridge)
	box.waitFrom(mark, wait, "the strip's state showing off", func(m mqtttest.Message) bool {
		return m.Topic == stateTopic && jsonValue(m.Payload, "powerSwitch") == "0"
	}, bridge)
	box.waitFrom(mark, wait, "the flow's formatted line showing off", func(m mqtttest.Message) bool {
		return m.Topic == "ci/nodered/formatted" && strings.HasPrefix(m.Payload, stripName+": powerSwitch=0 ")
	}, nodeRED)

	// 3. The flow's "on, 50 %" button.
	mark = box.mark()
	inject(t, admin, "c2m_cmd_on")
	waitControl(t, sim, map[string]int64{"powerSwitch": 1, "brightness": 50}, nodeRED, bridge)
	box.waitFrom(mark, wait, "the strip's state showing on at 50", func(m mqtttest.Message) bool {
		return m.Topic == stateTopic && jsonValue(m.Payload, "powerSwitch") == "1" && jsonValue(m.Payload, "brightness") == "50"
	}, bridge)
	box.waitFrom(mark, wait, "the flow's formatted line showing on at 50", func(m mqtttest.Message) bool {
		return m.Topic == "ci/nodered/formatted" && strings.HasPrefix(m.Payload, stripName+": powerSwitch=1 ") &&
			strings.Contains(m.Payload, " brightness=50 ")
	}, nodeRED)

	for _, m := range box.all {
		if m.Topic == "ci/nodered/error" || strings.HasSuffix(m.Topic, "/error") {
			t.Errorf("an error was published on %s: %s", m.Topic, m.Payload)
		}
	}

	// Both shut down cleanly; the bridge says it is offline.
	mark = box.mark()
	if err := nodeRED.stop(); err != nil {
		t.Errorf("Node-RED did not stop cleanly: %v\n%s", err, nodeRED.tail())
	}
	if err := bridge.stop(); err != nil {
		t.Errorf("the bridge did not stop cleanly: %v\n%s", err, bridge.tail())
	}
	box.waitFrom(mark, wait, "the bridge offline after SIGTERM", func(m mqtttest.Message) bool {
		return m.Topic == "cloud2mqtt/bridge/state" && m.Payload == "offline"
	})
	if strings.Contains(bridge.out.String(), apiKey) {
		t.Errorf("the bridge's log contains the API key")
	}
}

// waitControl waits until the simulated cloud has applied every value to
// the strip.
func waitControl(t *testing.T, sim *cloudsim.Sim, want map[string]int64, procs ...*proc) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		var missing []string
		log := sim.ControlLog()
		for inst, v := range want {
			found := false
			for _, r := range log {
				if r.Device == stripDevice && r.Instance == inst && r.Code == 200 && capability.Equal(capability.NormalizeValue(r.Value), v) {
					found = true
				}
			}
			if !found {
				missing = append(missing, fmt.Sprintf("%s=%d", inst, v))
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var out strings.Builder
			for _, p := range procs {
				out.WriteString(p.tail())
			}
			t.Fatalf("the cloud never received %v from the flow's command; control log: %+v\n%s", missing, log, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// probeMsg is what the probe function added to the flow republishes on
// ci/nodered/seen for every message of the flow's "device states" node.
type probeMsg struct {
	Topic   string         `json:"topic"`
	Type    string         `json:"type"`
	Payload map[string]any `json:"-"`
	Raw     any            `json:"payload"`
}

func probe(m mqtttest.Message) (probeMsg, bool) {
	if m.Topic != "ci/nodered/seen" {
		return probeMsg{}, false
	}
	var p probeMsg
	if json.Unmarshal([]byte(m.Payload), &p) != nil {
		return probeMsg{}, false
	}
	p.Payload, _ = p.Raw.(map[string]any)
	return p, true
}

// jsonValue is the JSON text of one member of a JSON object payload, or "".
func jsonValue(payload, member string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(payload), &m) != nil {
		return ""
	}
	return string(m[member])
}

// writeFlow copies the flow, points its broker at addr and adds the probes:
// a function after "device states" that republishes each message with its
// payload's JavaScript type on ci/nodered/seen, one after "format state"
// that republishes the formatted line on ci/nodered/formatted, and one
// after "command errors" on ci/nodered/error.
func writeFlow(t *testing.T, src, dst, addr string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("read the flow: %v", err)
	}
	var nodes []map[string]any
	if err := json.Unmarshal(b, &nodes); err != nil {
		t.Fatalf("%s is not a Node-RED flow (a JSON array of nodes): %v", src, err)
	}
	host, port, _ := net.SplitHostPort(addr)
	byID := map[string]map[string]any{}
	brokers := 0
	for _, n := range nodes {
		id, _ := n["id"].(string)
		byID[id] = n
		if n["type"] == "mqtt-broker" {
			brokers++
			n["broker"], n["port"] = host, port
		}
	}
	if brokers != 1 {
		t.Fatalf("the flow has %d mqtt-broker config nodes, want 1", brokers)
	}
	for _, id := range []string{"c2m_tab", "c2m_broker", "c2m_state_in", "c2m_format", "c2m_error_in", "c2m_cmd_on", "c2m_cmd_off"} {
		if byID[id] == nil {
			t.Fatalf("the flow has no node %q (the test drives it by id; update the test with the flow)", id)
		}
	}
	addWire := func(from, to string) {
		wires, _ := byID[from]["wires"].([]any)
		if len(wires) == 0 {
			t.Fatalf("node %s has no output", from)
		}
		out, _ := wires[0].([]any)
		wires[0] = append(out, to)
	}
	fn := func(id, name, code string) map[string]any {
		return map[string]any{
			"id": id, "type": "function", "z": "c2m_tab", "name": name, "func": code,
			"outputs": 1, "timeout": 0, "noerr": 0, "initialize": "", "finalize": "", "libs": []any{},
			"x": 700, "y": 500, "wires": []any{[]any{"ci_probe_out"}},
		}
	}
	nodes = append(nodes,
		fn("ci_probe_seen", "ci: payload type", `const p = msg.payload;
const type = p === null ? 'null' : Array.isArray(p) ? 'array' : Buffer.isBuffer(p) ? 'buffer' : typeof p;
return { topic: 'ci/nodered/seen', payload: JSON.stringify({ topic: msg.topic, type: type, payload: p }) };`),
		fn("ci_probe_formatted", "ci: formatted", `return { topic: 'ci/nodered/formatted', payload: String(msg.payload) };`),
		fn("ci_probe_error", "ci: error", `return { topic: 'ci/nodered/error', payload: JSON.stringify({ topic: msg.topic, payload: msg.payload }) };`),
		map[string]any{
			"id": "ci_probe_out", "type": "mqtt out", "z": "c2m_tab", "name": "ci: probe out", "topic": "",
			"qos": "1", "retain": "false", "broker": "c2m_broker", "x": 900, "y": 500, "wires": []any{},
		},
	)
	addWire("c2m_state_in", "ci_probe_seen")
	addWire("c2m_format", "ci_probe_formatted")
	addWire("c2m_error_in", "ci_probe_error")
	out, err := json.MarshalIndent(nodes, "", "    ")
	if err != nil {
		t.Fatalf("encode the flow: %v", err)
	}
	if err := os.WriteFile(dst, out, 0o600); err != nil {
		t.Fatalf("write the flow: %v", err)
	}
}

// writeSettings writes a headless Node-RED's settings: no editor, the admin
// API (for POST /inject/<id>) on loopback without auth, no telemetry, no
// module installs, credentials unencrypted in the throw-away userDir.
func writeSettings(t *testing.T, path string, port int) {
	t.Helper()
	s := fmt.Sprintf(`module.exports = {
    uiHost: "127.0.0.1",
    uiPort: %d,
    flowFile: "flows.json",
    credentialSecret: false,
    disableEditor: true,
    httpAdminRoot: "/",
    httpNodeRoot: false,
    telemetry: { enabled: false, updateNotification: false },
    externalModules: { autoInstall: false, palette: { allowInstall: false }, modules: { allowInstall: false } },
    functionExternalModules: false,
    logging: { console: { level: "info", metrics: false, audit: false } }
};
`, port)
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatalf("write Node-RED settings: %v", err)
	}
}

// waitSettings polls the admin API until Node-RED answers and returns its version.
func waitSettings(t *testing.T, admin string, nodeRED *proc) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(admin + "/settings")
		if err == nil {
			var s struct {
				Version string `json:"version"`
			}
			err = json.NewDecoder(resp.Body).Decode(&s)
			_ = resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK {
				return s.Version
			}
			err = fmt.Errorf("GET /settings: %s: %w", resp.Status, err)
		}
		if nodeRED.exited() {
			t.Fatalf("Node-RED exited before serving its admin API: %v\n%s", err, nodeRED.tail())
		}
		if time.Now().After(deadline) {
			t.Fatalf("Node-RED's admin API did not answer within 60s: %v\n%s", err, nodeRED.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// inject presses an inject node's button, as the editor does.
func inject(t *testing.T, admin, id string) {
	t.Helper()
	resp, err := http.Post(admin+"/inject/"+id, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("POST /inject/%s: %v", id, err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /inject/%s: %s: %s", id, resp.Status, body)
	}
}

// inbox keeps every message a test client received, in order.
type inbox struct {
	t   *testing.T
	c   *mqtttest.Client
	all []mqtttest.Message
}

func newInbox(t *testing.T, url string, filters ...string) *inbox {
	c := mqtttest.NewClient(t, url, mqtttest.ClientOptions{ClientID: "nodered-e2e-watcher"})
	for _, f := range filters {
		c.Subscribe(f, 1)
	}
	return &inbox{t: t, c: c}
}

func (b *inbox) mark() int { return len(b.all) }

// waitFrom returns the first message from index from on that satisfies
// pred, reading more as they arrive; after timeout it fails the test with
// what it saw and the processes' output.
func (b *inbox) waitFrom(from int, timeout time.Duration, what string, pred func(mqtttest.Message) bool, procs ...*proc) mqtttest.Message {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	for i := from; ; i++ {
		for i >= len(b.all) {
			m, ok := b.c.Next(time.Until(deadline))
			if !ok {
				var seen strings.Builder
				for _, m := range b.all[from:] {
					fmt.Fprintf(&seen, "  %s %.200s\n", m.Topic, m.Payload)
				}
				var out strings.Builder
				for _, p := range procs {
					out.WriteString(p.tail())
				}
				b.t.Fatalf("timed out after %s waiting for %s; saw:\n%s%s", timeout, what, seen.String(), out.String())
			}
			b.all = append(b.all, m)
		}
		if pred(b.all[i]) {
			return b.all[i]
		}
	}
}

// proc is a child process whose output is kept for failure messages.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *mqtttest.SyncBuffer
	done chan struct{}
	err  error
}

func startProc(t *testing.T, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, out: &mqtttest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { _ = p.stop() })
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits up to 15 s (then kills); it returns the
// process's exit error, nil for a clean exit.
func (p *proc) stop() error {
	if !p.exited() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s: still running 15s after SIGTERM; killed", p.name)
	}
	return p.err
}

// tail is the last part of the process's output, for failure messages.
func (p *proc) tail() string {
	s := p.out.String()
	if len(s) > 6000 {
		s = "..." + s[len(s)-6000:]
	}
	return fmt.Sprintf("--- %s output:\n%s\n", p.name, s)
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found above the test's directory: %v", err)
	}
	return root
}

// goTool is the go command that runs this test.
func goTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if out, err := exec.Command("/usr/local/go/bin/go", "version").CombinedOutput(); err == nil && bytes.HasPrefix(out, []byte("go version")) {
		return "/usr/local/go/bin/go"
	}
	t.Fatal("the go command is not on PATH")
	return ""
}
