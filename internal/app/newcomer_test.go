package app_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/app"
	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/mqtttest"
	"cloud2mqtt/internal/testkit"
)

// TestUnknownVariablesWarnedAtStart: a variable that looks like a setting
// but is none is a warning at start naming the setting meant, never its
// value; the daemon runs on.
func TestUnknownVariablesWarnedAtStart(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{env: map[string]string{"POLL_INTERVALL": "30s", "CLOUD_APIKEY": "value-of-a-key-9", "PATH": "/usr/bin", "STATE_DIRECTORY": "/var/lib/x"}})
	lines := h.logLines(func(l map[string]any) bool { return l["level"] == "warn" && l["variable"] != nil })
	got := map[string]string{}
	for _, l := range lines {
		got[l["variable"].(string)] = l["message"].(string) + " " + l["did_you_mean"].(string)
	}
	want := map[string]string{
		"POLL_INTERVALL": "POLL_INTERVALL is not a setting of cloud2mqtt and is ignored: did you mean POLL_INTERVAL? POLL_INTERVAL",
		"CLOUD_APIKEY":   "CLOUD_APIKEY is not a setting of cloud2mqtt and is ignored: did you mean CLOUD_API_KEY? CLOUD_API_KEY",
	}
	if len(got) != len(want) {
		t.Errorf("warned of %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if strings.Contains(h.logs.String(), "value-of-a-key-9") {
		t.Error("the value of CLOUD_APIKEY is in the log")
	}
}

// TestNoLogLineRepeatsAKey: with every component started, no log line carries a
// key twice, as zerolog would write when a part adds its own "component".
func TestNoLogLineRepeatsAKey(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{noStart: true, env: map[string]string{"HTTP_ADDR": "127.0.0.1:0"}})
	h.main.Config.Cloud.EventsURL = h.broker.URL()
	h.start()
	h.watch.until(wait, "subscribed to the cloud's events", func() bool {
		return strings.Contains(h.logs.String(), "subscribed to cloud events")
	})
	h.stop()
	for _, line := range strings.Split(h.logs.String(), "\n") {
		if key, ok := testkit.RepeatedKey(line); ok {
			t.Errorf("the key %q twice in %s", key, line)
		}
	}
	events := h.logLines(func(l map[string]any) bool { return l["message"] == "subscribed to cloud events" })
	if len(events) != 1 || events[0]["component"] != "events" {
		t.Errorf("the events' line: %v", events)
	}
	eventsBroker := h.logLines(func(l map[string]any) bool { return l["setting"] == "CLOUD_EVENTS_URL" })
	if len(eventsBroker) == 0 || eventsBroker[0]["component"] != "mqtt" {
		t.Errorf("the event broker's connection lines do not name CLOUD_EVENTS_URL: %v", eventsBroker)
	}
}

// TestStoppedBeforeTheBroker: a daemon stopped before it ever reached the broker
// says it stopped, as every other stop does.
func TestStoppedBeforeTheBroker(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	cfg, err := config.Load(map[string]string{"CLOUD_BASE_URL": "http://127.0.0.1:9", "CLOUD_API_KEY": "k", "MQTT_URL": "tcp://" + closed})
	if err != nil {
		t.Fatal(err)
	}
	logs := &mqtttest.SyncBuffer{}
	failed := make(chan struct{})
	var once sync.Once
	m := &app.Main{Config: cfg, Log: zerolog.New(zerolog.MultiLevelWriter(logs, writerFunc(func(p []byte) (int, error) {
		if strings.Contains(string(p), "cannot connect to MQTT broker") {
			once.Do(func() { close(failed) })
		}
		return len(p), nil
	})))}
	m.SetConnectRetry(100 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	select {
	case <-failed:
	case <-time.After(wait):
		t.Fatalf("no failed attempt logged:\n%s", logs.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `"message":"stopped before the MQTT broker was reached"`) {
		t.Errorf("the last line is %s", last)
	}
}

// writerFunc is a function as an io.Writer.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
