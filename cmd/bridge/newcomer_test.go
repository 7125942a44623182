package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/testkit"
)

// The newcomer's first hour (issue 30): each mistake a new user makes with
// the README in hand, with what -check says of it and what the daemon says
// when started anyway. A message that changes fails here.

// runsOn is what a case's daemon does: exits with a code, or keeps
// running (-1) after it has said the message.
const runsOn = -1

type newcomerCase struct {
	name string
	// env is laid over a working setup: the simulated cloud's address and
	// key, the embedded broker on a free loopback port. A value "" unsets
	// the variable. {port} is a loopback port the case holds taken,
	// {closed} one nothing listens on.
	env map[string]string
	// check is what -check prints (each a line's start or a part of it);
	// checkLines counts the lines that must start with check[0] (0: any).
	// checkPasses: -check exits 0 (only ok and warn lines), else 1.
	check       []string
	checkLines  int
	checkPasses bool
	// daemon is what the daemon says (stderr), exit its exit code.
	daemon []string
	exit   int
}

func newcomerCases() []newcomerCase {
	return []newcomerCase{
		{name: "a doubled letter", env: map[string]string{"POLL_INTERVALL": "30s"},
			// The other checks still run.
			check:  []string{"warn configuration: POLL_INTERVALL is not a setting of cloud2mqtt and is ignored: did you mean POLL_INTERVAL?", "\nok   cloud: the API key works"},
			daemon: []string{"POLL_INTERVALL is not a setting of cloud2mqtt and is ignored: did you mean POLL_INTERVAL?"}, exit: runsOn, checkPasses: true},
		{name: "the key under a wrong name", env: map[string]string{"CLOUD_API_KEY": "", "CLOUD_APIKEY": "k-31337"},
			check: []string{"FAIL configuration: CLOUD_API_KEY is empty",
				"warn configuration: CLOUD_APIKEY is not a setting of cloud2mqtt and is ignored: did you mean CLOUD_API_KEY?"},
			daemon: []string{"  CLOUD_API_KEY is empty", "  CLOUD_APIKEY is not a setting of cloud2mqtt and is ignored: did you mean CLOUD_API_KEY?"}, exit: exitConfig},
		{name: "another program's name", env: map[string]string{"MQTT_USER": "me"},
			check:  []string{"warn configuration: MQTT_USER is not a setting of cloud2mqtt and is ignored: did you mean MQTT_USERNAME?"},
			daemon: []string{"MQTT_USER is not a setting of cloud2mqtt and is ignored: did you mean MQTT_USERNAME?"}, exit: runsOn, checkPasses: true},
		{name: "no underscore", env: map[string]string{"LOGLEVEL": "debug"},
			check:  []string{"warn configuration: LOGLEVEL is not a setting of cloud2mqtt and is ignored: did you mean LOG_LEVEL?"},
			daemon: []string{"LOGLEVEL is not a setting of cloud2mqtt and is ignored: did you mean LOG_LEVEL?"}, exit: runsOn, checkPasses: true},
		{name: "a spelling", env: map[string]string{"HTTP_ADRESS": "127.0.0.1:8080"},
			check:  []string{"warn configuration: HTTP_ADRESS is not a setting of cloud2mqtt and is ignored: did you mean HTTP_ADDR?"},
			daemon: []string{"HTTP_ADRESS is not a setting of cloud2mqtt and is ignored: did you mean HTTP_ADDR?"}, exit: runsOn, checkPasses: true},
		{name: "the broker as host and port", env: map[string]string{"MQTT_HOST": "192.168.1.10", "MQTT_PORT": "1883"},
			check: []string{"warn configuration: MQTT_HOST is not a setting of cloud2mqtt and is ignored: did you mean MQTT_URL? (the host and port go in the URL, like tcp://192.168.1.10:1883)",
				"warn configuration: MQTT_PORT is not a setting of cloud2mqtt and is ignored: did you mean MQTT_URL?"},
			daemon: []string{"MQTT_HOST is not a setting of cloud2mqtt and is ignored: did you mean MQTT_URL?"}, exit: runsOn, checkPasses: true},
		{name: "a file saved on Windows", env: map[string]string{"POLL_INTERVAL": "60s\r"},
			check:      []string{"FAIL configuration: POLL_INTERVAL ends in a carriage return (\\r): the file it is set in has Windows line endings (CRLF); save it with Unix line endings (LF), for example sed -i 's/\\r$//' FILE or dos2unix FILE"},
			checkLines: 1,
			daemon:     []string{"  POLL_INTERVAL ends in a carriage return (\\r): the file it is set in has Windows line endings (CRLF)"}, exit: exitConfig},
		{name: "every kind of setting saved on Windows", env: map[string]string{
			"CLOUD_BASE_URL": "{cloud}\r", "CLOUD_API_KEY": "{key}\r", "LIMIT_STATE_PER_MINUTE": "20\r", "HA_DISCOVERY": "true\r", "LOG_LEVEL": "info\r", "STATE_DIR": "/var/lib/x\r"},
			check:      []string{"FAIL configuration: CLOUD_BASE_URL, CLOUD_API_KEY, LIMIT_STATE_PER_MINUTE, HA_DISCOVERY, LOG_LEVEL, STATE_DIR end in a carriage return (\\r): the file they are set in has Windows line endings (CRLF)"},
			checkLines: 1,
			daemon:     []string{"  CLOUD_BASE_URL, CLOUD_API_KEY, LIMIT_STATE_PER_MINUTE, HA_DISCOVERY, LOG_LEVEL, STATE_DIR end in a carriage return"}, exit: exitConfig},
		{name: "the embedded broker's port taken", env: map[string]string{"MQTT_LISTEN": "127.0.0.1:{port}"},
			check:  []string{"FAIL broker: the embedded broker cannot listen on MQTT_LISTEN=127.0.0.1:{port}: address already in use; another program uses that port", "set MQTT_LISTEN to a free address like 127.0.0.1:1884"},
			daemon: []string{"the embedded broker cannot listen on MQTT_LISTEN=127.0.0.1:{port}: address already in use; another program uses that port"}, exit: 1},
		{name: "the status page's port taken", env: map[string]string{"HTTP_ADDR": "127.0.0.1:{port}", "HTTP_TOKEN": "k-31337-http-token"},
			check:  []string{"FAIL http: cannot listen on HTTP_ADDR=127.0.0.1:{port}: address already in use; another program uses that port", "set HTTP_ADDR to a free address like 127.0.0.1:8081"},
			daemon: []string{"listen on HTTP_ADDR=127.0.0.1:{port}", "address already in use"}, exit: 1},
		{name: "the status page open to the network without a token", env: map[string]string{"HTTP_ADDR": "0.0.0.0:{port}"},
			check: []string{"warn configuration: HTTP_ADDR=0.0.0.0:{port} is not a loopback address and HTTP_TOKEN is not set", "set HTTP_TOKEN (or HTTP_TOKEN_FILE",
				"warn configuration: HTTP_ADDR listens on every interface", "FAIL http: cannot listen on HTTP_ADDR=0.0.0.0:{port}"},
			// The port is taken on loopback, so that the daemon warns and
			// then stops without opening anything to the network.
			daemon: []string{"HTTP_ADDR=0.0.0.0:{port} is not a loopback address and HTTP_TOKEN is not set", "HTTP_ADDR listens on every interface", "set HTTP_ADDR=127.0.0.1:PORT"}, exit: 1},
		{name: "the LAN port taken", env: map[string]string{"LAN_ENABLED": "true", "LAN_LISTEN": "127.0.0.1:{udpport}", "LAN_SCAN_TARGETS": "127.0.0.2"},
			check:  []string{"FAIL local control: lan: LAN_LISTEN=127.0.0.1:{udpport}", "address already in use"},
			daemon: []string{"LAN_LISTEN=127.0.0.1:{udpport}", "address already in use"}, exit: 1},
		{name: "events at an address where nothing answers", env: map[string]string{"CLOUD_EVENTS_URL": "tcp://127.0.0.1:{closed}"},
			check:  []string{"FAIL cloud events: nothing answers at 127.0.0.1:{closed} (connection refused): check CLOUD_EVENTS_URL, or leave it empty to turn events off"},
			daemon: []string{"cannot connect to MQTT broker; retrying", "tcp://127.0.0.1:{closed}", "CLOUD_EVENTS_URL"}, exit: runsOn},
		{name: "a value pasted twice", env: map[string]string{"POLL_INTERVAL": "60s60s"},
			check:  []string{`FAIL configuration: POLL_INTERVAL="60s60s" is not a duration: use seconds (60) or a number with a unit (60s, 1m, 6h)`},
			daemon: []string{`  POLL_INTERVAL="60s60s" is not a duration`}, exit: exitConfig},
		{name: "a long value", env: map[string]string{"LOG_LEVEL": strings.Repeat("debug", 60)},
			check:  []string{`FAIL configuration: LOG_LEVEL="` + strings.Repeat("debug", 12) + `debu"… (300 characters) is not a level`},
			daemon: []string{`  LOG_LEVEL="` + strings.Repeat("debug", 12) + `debu"… (300 characters) is not a level`}, exit: exitConfig},
		// Issue 41 §4: values that passed and then failed with raw errors
		// (a retry without end, a failed look-up on every scan).
		{name: "an IPv6 broker without brackets", env: map[string]string{"MQTT_URL": "tcp://::1:1883"},
			check:  []string{`FAIL configuration: MQTT_URL="tcp://::1:1883": put an IPv6 address in brackets: tcp://[::1]:1883`},
			daemon: []string{`  MQTT_URL="tcp://::1:1883": put an IPv6 address in brackets: tcp://[::1]:1883`}, exit: exitConfig},
		{name: "a path on a plain broker URL", env: map[string]string{"MQTT_URL": "tcp://127.0.0.1:{closed}/mqtt"},
			check:  []string{`FAIL configuration: MQTT_URL="tcp://127.0.0.1:{closed}/mqtt" has a path "/mqtt", which tcp:// ignores (only ws:// and wss:// use one): remove it, like tcp://127.0.0.1:{closed}`},
			daemon: []string{`  MQTT_URL="tcp://127.0.0.1:{closed}/mqtt" has a path "/mqtt"`}, exit: exitConfig},
		{name: "a LAN target that is no address", env: map[string]string{"LAN_SCAN_TARGETS": "192.168.1.300"},
			check:  []string{`FAIL configuration: LAN_SCAN_TARGETS: "192.168.1.300" is not an IP address: use four numbers 0 to 255, like 192.168.20.31`},
			daemon: []string{`  LAN_SCAN_TARGETS: "192.168.1.300" is not an IP address`}, exit: exitConfig},
		{name: "LAN targets separated by a semicolon", env: map[string]string{"LAN_SCAN_TARGETS": "192.168.1.30;192.168.1.31"},
			check:  []string{`FAIL configuration: LAN_SCAN_TARGETS: "192.168.1.30;192.168.1.31" contains ";": separate targets with a comma, like 192.168.1.30,192.168.1.31`},
			daemon: []string{`  LAN_SCAN_TARGETS: "192.168.1.30;192.168.1.31" contains ";"`}, exit: exitConfig},
		{name: "a network as a LAN target", env: map[string]string{"LAN_SCAN_TARGETS": "192.168.1.0/24"},
			check:  []string{`FAIL configuration: LAN_SCAN_TARGETS: "192.168.1.0/24" is a network, not an address: list the lights' addresses separated by commas, or use its broadcast address 192.168.1.255`},
			daemon: []string{`  LAN_SCAN_TARGETS: "192.168.1.0/24" is a network, not an address`}, exit: exitConfig},
	}
}

// TestNewcomerMistakes runs each case through -check and through the
// daemon, as cmd/bridge's run: the named message in both, the exit codes
// as documented (-check 1; the daemon 78 for the configuration, 1 for what
// fails at start), and neither the key nor a formatting artefact of fmt's
// (%!w(<nil>), ...) ever shown.
func TestNewcomerMistakes(t *testing.T) {
	sim := cloudsim.New(cloudsim.Options{})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	for _, tc := range newcomerCases() {
		t.Run(tc.name, func(t *testing.T) {
			subst := holdPorts(t)
			subst["{cloud}"], subst["{key}"] = srv.URL, sim.APIKey()
			env := map[string]string{"CLOUD_BASE_URL": srv.URL, "CLOUD_API_KEY": sim.APIKey(), "MQTT_URL": "embedded",
				"MQTT_LISTEN": "127.0.0.1:0", "CLOUD_TIMEOUT": "5s", "LOG_FORMAT": "json"}
			for k, v := range tc.env {
				env[k] = replaceAll(v, subst)
			}
			for k, v := range env {
				if v == "" {
					delete(env, k)
				}
			}

			code, out, _ := runBridge(t, env, "-check")
			if want := map[bool]int{true: 0, false: 1}[tc.checkPasses]; code != want {
				t.Errorf("-check exit code %d, want %d\n%s", code, want, out)
			}
			for _, w := range tc.check {
				if w = replaceAll(w, subst); !strings.Contains(out, w) {
					t.Errorf("-check does not say %q:\n%s", w, out)
				}
			}
			if tc.checkLines > 0 {
				first := replaceAll(tc.check[0], subst)
				prefix := first[:strings.Index(first, ": ")+2]
				if n := strings.Count(out, "\n"+prefix); n != tc.checkLines {
					t.Errorf("-check has %d lines %q, want %d:\n%s", n, prefix, tc.checkLines, out)
				}
			}

			code, said := runDaemon(t, env, tc.exit == runsOn, tc.daemon, subst)
			if tc.exit != runsOn && code != tc.exit {
				t.Errorf("the daemon's exit code %d, want %d\n%s", code, tc.exit, said)
			}
			// A warning is said once, however many parts look at it.
			for _, w := range tc.daemon {
				if n := len(linesWith(said, " level=warn", replaceAll(w, subst))); n > 1 {
					t.Errorf("the daemon warns %q %d times:\n%s", replaceAll(w, subst), n, said)
				}
			}
			for _, text := range []string{out, said} {
				if strings.Contains(text, "k-31337") || strings.Contains(text, sim.APIKey()) {
					t.Errorf("the key is shown:\n%s", text)
				}
				if strings.Contains(text, "%!") {
					t.Errorf("a formatting artefact:\n%s", text)
				}
			}
		})
	}
	// A daemon stopped while paho waits between attempts to reach the
	// event broker (5 s) leaves that wait to end on its own.
	testkit.WaitGoroutinesGone(t, 10*time.Second, "golang.(*client).Connect.func1", "golang.(*client).Disconnect.func1")
}

// holdPorts takes a TCP and a UDP port on loopback for the test's life
// ({port}, {udpport}: both taken) and finds one nothing listens on
// ({closed}).
func holdPorts(t *testing.T) map[string]string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	port := func(a net.Addr) string { _, p, _ := net.SplitHostPort(a.String()); return p }
	return map[string]string{"{port}": port(ln.Addr()), "{udpport}": port(pc.LocalAddr()), "{closed}": port(closed.Addr())}
}

// linesWith are the lines of said that hold every one of texts.
func linesWith(said string, texts ...string) []string {
	var out []string
	for _, line := range strings.Split(said, "\n") {
		if !slices.ContainsFunc(texts, func(t string) bool { return !strings.Contains(line, t) }) {
			out = append(out, line)
		}
	}
	return out
}

func replaceAll(s string, subst map[string]string) string {
	for k, v := range subst {
		s = strings.ReplaceAll(s, k, v)
	}
	return s
}

// runDaemon runs the daemon as cmd/bridge's run. A daemon that keeps
// running is stopped once its output holds every wanted text; one that
// exits is waited for. It returns the exit code and what was said: the
// messages of the JSON log lines with their fields, and other lines as
// they are.
func runDaemon(t *testing.T, env map[string]string, keepsRunning bool, want []string, subst map[string]string) (int, string) {
	t.Helper()
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &notifyingBuffer{changed: make(chan struct{}, 1)}
	done := make(chan int, 1)
	go func() { done <- run(ctx, nil, environ, &bytes.Buffer{}, stderr) }()
	said := func() string { return readable(stderr.String()) }
	has := func() bool {
		s := said()
		for _, w := range want {
			if !strings.Contains(s, replaceAll(w, subst)) {
				return false
			}
		}
		return true
	}
	bound := time.NewTimer(30 * time.Second)
	defer bound.Stop()
	for {
		select {
		case code := <-done:
			if !has() {
				t.Errorf("the daemon (exit %d) does not say %q:\n%s", code, want, said())
			}
			if keepsRunning {
				t.Errorf("the daemon exited with %d; it should run on", code)
			}
			return code, said()
		case <-stderr.changed:
			if keepsRunning && has() {
				cancel()
				return <-done, said()
			}
		case <-bound.C:
			t.Errorf("the daemon has not said %q within 30 s:\n%s", want, said())
			cancel()
			return <-done, said()
		}
	}
}

// readable turns JSON log lines into "message key=value ..." and keeps the
// other lines (the configuration's problems) as they are.
func readable(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			b.WriteString(line + "\n")
			continue
		}
		fmt.Fprint(&b, m["message"])
		for k, v := range m {
			if k != "message" && k != "time" {
				fmt.Fprintf(&b, " %s=%v", k, v)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// notifyingBuffer is a buffer safe for concurrent use that signals each
// write.
type notifyingBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func (n *notifyingBuffer) Write(p []byte) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case n.changed <- struct{}{}:
	default:
	}
	return n.b.Write(p)
}

func (n *notifyingBuffer) String() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.b.String()
}
