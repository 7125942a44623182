package config

// Tests of the deploy/ files that need nothing but Go: the unit's and the
// Node-RED flow's structure. The systemd sandbox score and the flow's
// function code need other programs (deploy_systemd_test.go and
// deploy_node_test.go, behind build tags). Docker cannot run in the test
// environment; the compose test only checks that what the files name exists.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"cloud2mqtt/internal/topic"
)

var deployDir = filepath.Join("..", "..", "deploy")

// The unit's contract with the daemon and with config: notify, watchdog,
// the env file and the credential the config package reads.
func TestSystemdUnitSettings(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "systemd", "cloud2mqtt.service"))
	if err != nil {
		t.Fatal(err)
	}
	set := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			set[k] = append(set[k], v)
		}
	}
	for k, want := range map[string]string{
		"Type": "notify", "NotifyAccess": "main", "WatchdogSec": "60", "Restart": "on-failure",
		"DynamicUser": "yes", "EnvironmentFile": "/etc/cloud2mqtt/cloud2mqtt.env",
		"LoadCredential": CredentialAPIKey + ":/etc/cloud2mqtt/api_key", "ExecStart": "/usr/local/bin/cloud2mqtt",
		// The state directory (STATE_DIR from $STATE_DIRECTORY), and no
		// restart loop on a configuration error (cmd/bridge exits 78).
		"StateDirectory": "cloud2mqtt", "RestartPreventExitStatus": "78",
	} {
		if got := set[k]; len(got) != 1 || got[0] != want {
			t.Errorf("%s=%v, want %s", k, got, want)
		}
	}
	// The optional password credential is documented but not loaded: a
	// missing file would fail the start.
	if !bytes.Contains(b, []byte("#LoadCredential="+CredentialMQTTPassword+":/etc/cloud2mqtt/mqtt_password")) {
		t.Errorf("the commented-out LoadCredential for %s is missing", CredentialMQTTPassword)
	}
	if fams := strings.Join(set["RestrictAddressFamilies"], " "); !strings.Contains(fams, "AF_UNIX") || !strings.Contains(fams, "AF_INET") {
		t.Errorf("RestrictAddressFamilies=%s: the daemon needs AF_INET(6) for the cloud and broker, AF_UNIX for sd_notify", fams)
	}
	if _, ok := set["IPAddressDeny"]; ok {
		t.Error("IPAddressDeny would cut the bridge off the cloud or the broker")
	}
}

type flowNode struct {
	ID          string     `json:"id"`
	Type        string     `json:"type"`
	Z           string     `json:"z"`
	Name        string     `json:"name"`
	Topic       string     `json:"topic"`
	Datatype    string     `json:"datatype"`
	Broker      string     `json:"broker"`
	Port        string     `json:"port"`
	Payload     string     `json:"payload"`
	PayloadType string     `json:"payloadType"`
	Func        string     `json:"func"`
	Wires       [][]string `json:"wires"`
}

func readFlow(t *testing.T) ([]flowNode, map[string]flowNode) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, "node-red", "flows.json"))
	if err != nil {
		t.Fatal(err)
	}
	var nodes []flowNode
	if err := json.Unmarshal(b, &nodes); err != nil {
		t.Fatalf("flows.json is not a Node-RED flow: %v", err)
	}
	byID := map[string]flowNode{}
	for _, n := range nodes {
		if _, dup := byID[n.ID]; dup || n.ID == "" {
			t.Errorf("node id %q empty or repeated", n.ID)
		}
		byID[n.ID] = n
	}
	return nodes, byID
}

func TestNodeREDFlow(t *testing.T) {
	nodes, byID := readFlow(t)
	var tab, broker string
	count := map[string]int{}
	for _, n := range nodes {
		count[n.Type]++
		switch n.Type {
		case "tab":
			tab = n.ID
		case "mqtt-broker":
			broker = n.ID
			if n.Broker != "127.0.0.1" || n.Port != "1883" {
				t.Errorf("broker %s:%s, want 127.0.0.1:1883", n.Broker, n.Port)
			}
		}
	}
	if count["tab"] != 1 || count["mqtt-broker"] != 1 {
		t.Fatalf("want one tab and one broker config node, have %v", count)
	}
	for _, n := range nodes {
		if n.Type != "tab" && n.Type != "mqtt-broker" && n.Z != tab {
			t.Errorf("node %s is not on the tab", n.ID)
		}
		if strings.HasPrefix(n.Type, "mqtt ") && n.Broker != broker {
			t.Errorf("%s %q does not use the broker config node", n.Type, n.Name)
		}
		for _, out := range n.Wires {
			for _, to := range out {
				if _, ok := byID[to]; !ok {
					t.Errorf("%s wires to missing node %s", n.ID, to)
				}
			}
		}
	}

	// The state subscription: parsed JSON objects, wired to a debug node
	// and to the formatter.
	var stateIn *flowNode
	for _, n := range nodes {
		if n.Type == "mqtt in" && n.Topic == "cloud2mqtt/+/state" {
			stateIn = &n
		}
	}
	if stateIn == nil {
		t.Fatal("no mqtt in node on cloud2mqtt/+/state")
	}
	if stateIn.Datatype != "auto-detect" {
		t.Errorf("state datatype %q: want auto-detect (parsed JSON, and bridge/state's plain text passes)", stateIn.Datatype)
	}
	targets := map[string]bool{}
	for _, to := range stateIn.Wires[0] {
		targets[byID[to].Type] = true
	}
	if !targets["debug"] || !targets["function"] {
		t.Errorf("state node wired to %v, want a debug and a function node", targets)
	}

	// The command: an inject of {"powerSwitch":1,"brightness":50} to a demo
	// light's set topic, through an mqtt out node.
	demoLight := demoDeviceID(t, 0)
	found := false
	for _, n := range nodes {
		if n.Type != "inject" || n.PayloadType != "json" {
			continue
		}
		var p map[string]any
		if err := json.Unmarshal([]byte(n.Payload), &p); err != nil {
			t.Errorf("inject %q payload %q: %v", n.Name, n.Payload, err)
			continue
		}
		if n.Topic != topic.New("").Set(demoLight) {
			t.Errorf("inject %q publishes to %s, want the demo light's %s", n.Name, n.Topic, topic.New("").Set(demoLight))
		}
		if len(n.Wires) != 1 || len(n.Wires[0]) != 1 || byID[n.Wires[0][0]].Type != "mqtt out" || byID[n.Wires[0][0]].Topic != "" {
			t.Errorf("inject %q is not wired to an mqtt out node that keeps msg.topic", n.Name)
		}
		if p["powerSwitch"] == 1.0 && p["brightness"] == 50.0 && len(p) == 2 {
			found = true
		}
	}
	if !found {
		t.Error(`no inject node sends {"powerSwitch":1,"brightness":50}`)
	}
}

// demoDeviceID is the id of the demo catalogue's i-th device, so the flow
// works against -demo out of the box.
func demoDeviceID(t *testing.T, i int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "cloudsim", "demo", "devices.json"))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data []struct{ SKU, Device string }
	}
	if err := json.Unmarshal(b, &list); err != nil || len(list.Data) <= i {
		t.Fatalf("demo devices: %v", err)
	}
	return topic.DeviceID(list.Data[i].SKU, list.Data[i].Device)
}

// The compose file and Dockerfile name files that exist, and build the
// command that exists, with the version variable it has.
func TestDockerFilesReferTheRepository(t *testing.T) {
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(deployDir, "docker", p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	dockerfile, compose := read("Dockerfile"), read("docker-compose.yml")
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", `-ldflags "-s -w -X main.version=${VERSION}"`, "./cmd/bridge", "FROM gcr.io/distroless/static",
		"--chown=65532:65532 /out/state /var/lib/cloud2mqtt"} {
		if !strings.Contains(dockerfile, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	main, err := os.ReadFile(filepath.Join("..", "..", "cmd", "bridge", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^var version = `).Match(main) {
		t.Error("cmd/bridge has no package-level var version for -X main.version")
	}
	for _, want := range []string{"dockerfile: deploy/docker/Dockerfile", "context: ../..", "./mosquitto.conf:/mosquitto/config/mosquitto.conf",
		"env_file:", "CREDENTIALS_DIRECTORY: /run/secrets", "cloud_api_key:", "MQTT_URL: tcp://mosquitto:1883", "eclipse-mosquitto:2",
		"STATE_DIR: /var/lib/cloud2mqtt", "cloud2mqtt-state:/var/lib/cloud2mqtt"} {
		if !strings.Contains(compose, want) {
			t.Errorf("docker-compose.yml lacks %q", want)
		}
	}
	if !strings.Contains(read("mosquitto.conf"), "allow_anonymous true") {
		t.Error("mosquitto.conf does not allow anonymous clients on the compose network")
	}
	// The compose secret is read as the systemd credential of the same name.
	if !strings.Contains(compose, "  "+CredentialAPIKey+":") {
		t.Errorf("the compose secret is not named %s", CredentialAPIKey)
	}
}
