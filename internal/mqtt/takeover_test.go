package mqtt

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/mqtttest"
)

// TestTakenIDIsTakenBackEachTime: whenever the bridge is back, another
// client connects with its id and a clean session (which wipes the
// bridge's), for a moment. Each takeover is one error line at once, naming
// MQTT_CLIENT_ID and a shared state directory but not the id, and the
// bridge is back within 30 s each time, subscribed again and with what it
// queued to publish while away sent.
func TestTakenIDIsTakenBackEachTime(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
		b := mqtttest.Start(t, mqtttest.WithKind(kind))
		cfg, logs := testConfig(t, b.URL())
		cfg.MaxReconnectInterval = 0 // the daemon's
		cmds := make(sink, 16)
		c := connect(t, cfg, func(c *Client) {
			if err := c.Subscribe("c2m/+/set", 1, cmds.handler); err != nil {
				t.Error(err)
			}
		})
		watch := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{})
		watch.Subscribe("c2m/#", 1)
		// Past the first birth (mochi may send it twice, retained and
		// live, around the subscription).
		watch.Publish("c2m/probe", "start", false, 1)
		watch.WaitFor("c2m/probe", "start", 10*time.Second)

		const takeovers = 4 // "about four short connections"
		meanwhile := 0      // commands that arrived of those sent while the bridge was off
		for i := 1; i <= takeovers; i++ {
			intruder := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{ClientID: cfg.ClientID})
			taken := time.Now()
			intruder.Close()
			if err := c.Publish("c2m/held/state", []byte(fmt.Sprint(i)), false, 1); err != nil {
				t.Fatal(err)
			}
			for j := range 3 {
				watch.Publish("c2m/meanwhile/set", fmt.Sprint(i, j), false, 1)
			}
			// Back: "online" again, published once subscribed. What
			// it had queued may come before.
			held := false
			for {
				m, ok := watch.Next(30*time.Second - time.Since(taken))
				if !ok {
					t.Fatalf("takeover %d: the bridge was not back within 30s", i)
				}
				held = held || m.Topic == "c2m/held/state" && m.Payload == fmt.Sprint(i)
				if m.Topic == stateTopic && m.Payload == Online && !m.Retained {
					break
				}
			}
			back := time.Since(taken)
			t.Logf("takeover %d: back after %s", i, back.Round(time.Millisecond))
			if !held {
				watch.WaitFor("c2m/held/state", fmt.Sprint(i), 10*time.Second)
			}
			watch.Publish("c2m/dev/set", fmt.Sprint(i), false, 1)
			for got := cmds.next(t); got != [2]string{"c2m/dev/set", fmt.Sprint(i)}; got = cmds.next(t) {
				if got[0] != "c2m/meanwhile/set" {
					t.Fatalf("takeover %d: the handler got %v, want the command sent once the bridge was back", i, got)
				}
				meanwhile++
			}
		}
		// The intruder's clean session wiped the bridge's subscriptions:
		// what is sent before the bridge is back is lost (MQTT keeps
		// nothing for a session that is gone). A figure, not a claim.
		t.Logf("%d of %d commands sent while the bridge was off arrived", meanwhile, 3*takeovers)

		if n := c.Stats().Conflicts; n != takeovers {
			t.Errorf("Stats().Conflicts = %d, want %d", n, takeovers)
		}
		errs, leaks := 0, 0
		for _, line := range strings.Split(logs.String(), "\n") {
			loud := strings.Contains(line, `"level":"warn"`) || strings.Contains(line, `"level":"error"`)
			if loud && strings.Contains(line, cfg.ClientID) {
				leaks++
			}
			if strings.Contains(line, `"level":"error"`) {
				errs++
				if !strings.Contains(line, "MQTT_CLIENT_ID") || !strings.Contains(line, "STATE_DIR") || !strings.Contains(line, "another client") {
					t.Errorf("the error does not name another client, MQTT_CLIENT_ID and STATE_DIR: %s", line)
				}
			}
		}
		if errs != takeovers {
			t.Errorf("%d error lines for %d takeovers, want one each:\n%s", errs, takeovers, logs)
		}
		if leaks > 0 {
			t.Errorf("%d warnings or errors show the client id, which bridge/logging would publish:\n%s", leaks, logs)
		}
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

// TestBrokerRestartsAreNoConflict: a broker killed and restarted also
// closes the bridge's connection; but then the bridge's next attempt is
// refused, which a broker handing the id to another client never does: no
// takeover is said.
func TestBrokerRestartsAreNoConflict(t *testing.T) {
	t.Parallel()
	b := mqtttest.Start(t)
	cfg, logs := testConfig(t, b.URL())
	c := connect(t, cfg, nil)
	for round := 1; round <= 4; round++ {
		failed := strings.Count(logs.String(), "cannot connect to MQTT broker")
		b.Kill()
		eventually(t, "a refused reconnection", func() bool { return strings.Count(logs.String(), "cannot connect to MQTT broker") > failed })
		b.Restart()
		eventually(t, "the bridge connected again", func() bool { return c.Stats().Reconnects == uint64(round) })
	}
	if n := c.Stats().Conflicts; n != 0 {
		t.Errorf("%d takeovers said for a restarting broker, want none:\n%s", n, logs)
	}
}
