//go:build nodered

package config

// The Node-RED flow's function code run by Node.js: needs node, so it runs
// with -tags nodered (.ci/run sets it).

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// The flow's function code runs in Node.js, as Node-RED would run it, on a
// device list and on states (and on the bridge's plain "online").
func TestNodeREDFunctions(t *testing.T) {
	nodeJS, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed (Debian: apt-get install nodejs); the nodered tag needs it")
	}
	_, byID := readFlow(t)
	var names, format string
	for _, n := range byID {
		switch n.Name {
		case "remember names":
			names = n.Func
		case "format state":
			format = n.Func
		}
	}
	if names == "" || format == "" {
		t.Fatal("function nodes 'remember names' and 'format state' not found")
	}
	id := demoDeviceID(t, 0)
	script := `
const ctx = {};
const flow = { get: k => ctx[k], set: (k, v) => { ctx[k] = v; } };
const node = { status: () => {} };
const names = new Function('msg', 'flow', 'node', NAMES);
const format = new Function('msg', 'flow', 'node', FORMAT);
const out = [];
names({ topic: 'cloud2mqtt/bridge/devices', payload: [{ id: ID, name: 'Living Room Strip' }] }, flow, node);
out.push(format({ topic: 'cloud2mqtt/bridge/state', payload: 'online' }, flow, node));
out.push(format({ topic: 'cloud2mqtt/' + ID + '/state', payload: { brightness: 50, colorRgb: 255, powerSwitch: 1 } }, flow, node));
out.push(format({ topic: 'cloud2mqtt/h6008_unknown/state', payload: { powerSwitch: 0 } }, flow, node));
console.log(JSON.stringify(out.map(m => m === null ? null : m.payload)));
`
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	script = strings.NewReplacer("NAMES", q(names), "FORMAT", q(format), "ID", q(id)).Replace(script)
	out, err := exec.CommandContext(t.Context(), nodeJS, "-e", script).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got []any
	if err := json.Unmarshal(bytes.TrimSpace(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := []any{nil, "Living Room Strip: powerSwitch=1 brightness=50 colorRgb=255", "h6008_unknown: powerSwitch=0"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("output %d = %v, want %v", i, got[i], want[i])
		}
	}
}

// The flow's alert function turns the bridge's errors on bridge/logging into
// one line and leaves warnings to its status.
func TestNodeREDAlert(t *testing.T) {
	nodeJS, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed (Debian: apt-get install nodejs); the nodered tag needs it")
	}
	_, byID := readFlow(t)
	var alert string
	for _, n := range byID {
		if n.Name == "alert" {
			alert = n.Func
		}
	}
	if alert == "" {
		t.Fatal("function node 'alert' not found")
	}
	script := `
const statuses = [];
const node = { status: s => statuses.push(s.text) };
const alert = new Function('msg', 'node', ALERT);
const out = [];
out.push(alert({ payload: { level: 'error', message: 'the cloud refuses the API key' } }, node));
out.push(alert({ payload: { level: 'warning', message: 'device unreachable', device: 'H6008/AA' } }, node));
out.push(alert({ payload: 'not json' }, node));
console.log(JSON.stringify({ out: out.map(m => m === null ? null : m.payload), statuses }));
`
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	script = strings.NewReplacer("ALERT", q(alert)).Replace(script)
	out, err := exec.CommandContext(t.Context(), nodeJS, "-e", script).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got struct {
		Out      []any    `json:"out"`
		Statuses []string `json:"statuses"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Out) != 3 || got.Out[0] != "cloud2mqtt error: the cloud refuses the API key" || got.Out[1] != nil || got.Out[2] != nil {
		t.Errorf("alerts %v, want the error alone as a line", got.Out)
	}
	if len(got.Statuses) != 2 || !strings.Contains(got.Statuses[1], "warning: device unreachable (H6008/AA)") {
		t.Errorf("statuses %q, want the warning shown", got.Statuses)
	}
}
