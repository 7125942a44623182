package mqtt

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/mqtttest"
)

// TestAnotherClientWithTheSameIDIsNotFought is issue 28 §3's two bridges:
// another client connects with the bridge's client id each time the
// bridge is back. Before, the bridge took the id back at once, for ever,
// each knocking the other off. Now, after conflictDrops such drops in a
// row, it says so naming MQTT_CLIENT_ID and waits ConflictBackoff: the
// other client keeps the id.
func TestAnotherClientWithTheSameIDIsNotFought(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
		b := mqtttest.Start(t, mqtttest.WithKind(kind))
		cfg, logs := testConfig(t, b.URL())
		cfg.ConflictBackoff = time.Hour
		c := connect(t, cfg, nil)
		held := make(chan struct{}, 1)
		c.mu.Lock()
		c.conflict.held = held
		c.mu.Unlock()

		var rival *mqtttest.Client
		for i := range conflictDrops {
			before := c.Stats().Reconnects
			rival = mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{ClientID: cfg.ClientID})
			if i < conflictDrops-1 {
				eventually(t, "the bridge connected again", func() bool { return c.Stats().Reconnects > before })
			}
		}
		select {
		case <-held:
		case <-time.After(10 * time.Second):
			t.Fatalf("the bridge did not back off after %d drops:\n%s", conflictDrops, logs)
		}

		// The bridge waits (an hour here); the other client keeps the id
		// through round trips of its own.
		rival.Subscribe("probe/#", 1)
		for i := range 20 {
			rival.Publish("probe/x", strings.Repeat("x", i), false, 1)
			rival.WaitFor("probe/x", strings.Repeat("x", i), 5*time.Second)
		}
		if !rival.Paho().IsConnectionOpen() || c.Connected() {
			t.Errorf("the other client connected: %v, the bridge connected: %v; want the other client to keep the id",
				rival.Paho().IsConnectionOpen(), c.Connected())
		}
		if n := c.Stats().Conflicts; n != 1 {
			t.Errorf("Stats().Conflicts = %d, want 1", n)
		}
		out := logs.String()
		if !strings.Contains(out, `"level":"error"`) || !strings.Contains(out, "MQTT_CLIENT_ID") || !strings.Contains(out, "same client id") ||
			!strings.Contains(out, `"client_id":"`+cfg.ClientID+`"`) {
			t.Errorf("the log does not say that another client has the id %s, naming MQTT_CLIENT_ID:\n%s", cfg.ClientID, out)
		}
		// Close ends the wait at once (the cleanup's Close has 5 s).
	})
}

// TestDefaultClientIDDiffersBetweenHostsOfOneName: two hosts with the same
// host name (every Raspberry Pi is "raspberrypi") and the same settings
// get different ids from their machine ids; one host keeps its id across
// restarts; a host without a machine id keeps the id of before.
func TestDefaultClientIDDiffersBetweenHostsOfOneName(t *testing.T) {
	t.Parallel()
	defer func(files []string) { machineIDFiles = files }(machineIDFiles)
	dir := t.TempDir()
	idOn := func(machineID string) string {
		f := filepath.Join(dir, "machine-id")
		if err := os.WriteFile(f, []byte(machineID+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		machineIDFiles = []string{f}
		return DefaultClientID("cloud2mqtt/bridge/state")
	}
	a, b := idOn("0123456789abcdef0123456789abcdef"), idOn("fedcba9876543210fedcba9876543210")
	if a == b {
		t.Errorf("two machine ids, one client id %s", a)
	}
	if again := idOn("0123456789abcdef0123456789abcdef"); again != a {
		t.Errorf("the id changed between two starts: %s, %s", a, again)
	}
	machineIDFiles = []string{filepath.Join(dir, "none")}
	host, _ := os.Hostname()
	sum := sha256.Sum256([]byte(host + "\ncloud2mqtt/bridge/state"))
	if got := DefaultClientID("cloud2mqtt/bridge/state"); got != "cloud2mqtt-"+hex.EncodeToString(sum[:4]) {
		t.Errorf("without a machine id: %s, want the id of before", got)
	}
	if strings.Contains(a, "0123456789") {
		t.Errorf("the id %s shows the machine id", a)
	}
}

// TestBrokerRestartsAreNoConflict: a broker killed right after the bridge
// connected, again and again, also closes the connection within seconds;
// but between the drops the bridge's attempts are refused, which a broker
// handing the id to another client never does: no back-off.
func TestBrokerRestartsAreNoConflict(t *testing.T) {
	t.Parallel()
	b := mqtttest.Start(t)
	cfg, logs := testConfig(t, b.URL())
	cfg.ConflictBackoff = time.Hour // a wrong back-off would stall the test
	c := connect(t, cfg, nil)
	for round := 1; round <= conflictDrops+1; round++ {
		failed := strings.Count(logs.String(), "cannot connect to MQTT broker")
		b.Kill()
		eventually(t, "a refused reconnection", func() bool { return strings.Count(logs.String(), "cannot connect to MQTT broker") > failed })
		b.Restart()
		eventually(t, "the bridge connected again", func() bool { return c.Stats().Reconnects == uint64(round) })
	}
	if n := c.Stats().Conflicts; n != 0 {
		t.Errorf("%d back-offs for a restarting broker, want none:\n%s", n, logs)
	}
}
