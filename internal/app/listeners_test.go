package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/app"
	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/mqtttest"
	"cloud2mqtt/internal/testkit"
	"cloud2mqtt/internal/topic"
)

// The listener tests run the whole daemon against each way a broker can
// be reached: anonymous, with a username and password, and over TLS with a
// CA the test generated — on mosquitto when it is installed (the broker
// users run) and on the embedded broker. Each checks the end-to-end path a
// user relies on: discovery and state appear, and a command on
// <base>/<id>/set reaches the cloud. Misconfigured credentials must give a
// warning that names the fix, leak no secret, and shut down cleanly.

const (
	listenerWait     = 20 * time.Second
	listenerKey      = "listener-key-0c9e4d27"
	listenerUser     = "bridge"
	listenerPassword = "listener-pass-51f7aa"
	// The demo catalogue's first light ("Living Room Strip").
	listenerSKU    = "H619C"
	listenerDevice = "AA:BB:CC:DD:EE:FF:10:01"
)

// listenerCase is one way of reaching the broker: the broker's options and
// the daemon's (and the watcher's) settings for it.
type listenerCase struct {
	name   string
	broker []mqtttest.Option
	// env is the daemon's MQTT settings for the started broker.
	env func(b *mqtttest.Broker) map[string]string
	// client is how the test's own watcher connects.
	client func(b *mqtttest.Broker) mqtttest.ClientOptions
}

func listenerCases() []listenerCase {
	none := func(*mqtttest.Broker) map[string]string { return nil }
	anon := func(*mqtttest.Broker) mqtttest.ClientOptions { return mqtttest.ClientOptions{} }
	withUser := func(*mqtttest.Broker) map[string]string {
		return map[string]string{"MQTT_USERNAME": listenerUser, "MQTT_PASSWORD": listenerPassword}
	}
	userClient := func(*mqtttest.Broker) mqtttest.ClientOptions {
		return mqtttest.ClientOptions{Username: listenerUser, Password: listenerPassword}
	}
	return []listenerCase{
		{name: "anonymous", env: none, client: anon},
		{
			name:   "password",
			broker: []mqtttest.Option{mqtttest.WithPassword(listenerUser, listenerPassword)},
			env:    withUser, client: userClient,
		},
		{
			name:   "tls",
			broker: []mqtttest.Option{mqtttest.WithTLS()},
			env:    func(b *mqtttest.Broker) map[string]string { return map[string]string{"MQTT_CA_FILE": b.CAFile()} },
			client: func(b *mqtttest.Broker) mqtttest.ClientOptions { return mqtttest.ClientOptions{CAFile: b.CAFile()} },
		},
		{
			name:   "tls+password",
			broker: []mqtttest.Option{mqtttest.WithTLS(), mqtttest.WithPassword(listenerUser, listenerPassword)},
			env: func(b *mqtttest.Broker) map[string]string {
				m := withUser(b)
				m["MQTT_CA_FILE"] = b.CAFile()
				return m
			},
			client: func(b *mqtttest.Broker) mqtttest.ClientOptions {
				o := userClient(b)
				o.CAFile = b.CAFile()
				return o
			},
		},
	}
}

// TestListeners: on every listener kind the daemon publishes discovery,
// availability and state, takes a command from <base>/<id>/set to the
// cloud, and on shutdown leaves "offline" behind.
func TestListeners(t *testing.T) {
	for _, kind := range mqtttest.Kinds() {
		for _, lc := range listenerCases() {
			t.Run(string(kind)+"/"+lc.name, func(t *testing.T) {
				t.Parallel()
				b := mqtttest.Start(t, append([]mqtttest.Option{mqtttest.WithKind(kind)}, lc.broker...)...)
				if lc.name == "tls" || lc.name == "tls+password" {
					if !strings.HasPrefix(b.URL(), "ssl://") {
						t.Fatalf("TLS broker URL %s is not ssl://", b.URL())
					}
				}
				watch := mqtttest.NewClient(t, b.URL(), lc.client(b))
				watch.Subscribe("cloud2mqtt/#", 1)
				watch.Subscribe("homeassistant/#", 1)
				d := startListenerDaemon(t, b, lc.env(b))
				if err := d.waitReady(listenerWait); err != nil {
					t.Fatalf("the daemon did not get ready on %s: %v\nlogs:\n%s", b.URL(), err, d.logs.String())
				}

				id := topic.DeviceID(listenerSKU, listenerDevice)
				in := &received{c: watch}
				in.waitFor(t, "the bridge online", func(m mqtttest.Message) bool {
					return m.Topic == "cloud2mqtt/bridge/state" && m.Payload == "online"
				}, d)
				in.waitFor(t, "a discovery config of "+id, func(m mqtttest.Message) bool {
					return strings.HasPrefix(m.Topic, "homeassistant/") && strings.Contains(m.Topic, "/"+id+"/") &&
						strings.Contains(m.Payload, `"cloud2mqtt/`+id+`/`)
				}, d)
				in.waitFor(t, id+" available", func(m mqtttest.Message) bool {
					return m.Topic == "cloud2mqtt/"+id+"/availability" && m.Payload == "online"
				}, d)
				in.waitFor(t, "the state of "+id, func(m mqtttest.Message) bool {
					return m.Topic == "cloud2mqtt/"+id+"/state" && stateMember(m.Payload, "online") == "true"
				}, d)

				// A command as a user sends it.
				mark := in.mark()
				watch.Publish("cloud2mqtt/"+id+"/set", `{"brightness":37}`, false, 1)
				in.waitFrom(t, mark, "brightness 37 in the state after the command", func(m mqtttest.Message) bool {
					return m.Topic == "cloud2mqtt/"+id+"/state" && stateMember(m.Payload, "brightness") == "37"
				}, d)
				if !d.controlled(listenerDevice, "brightness", int64(37)) {
					t.Errorf("the cloud did not apply brightness=37 to %s; control log: %+v", listenerDevice, d.sim.ControlLog())
				}

				mark = in.mark()
				if err := d.stop(); err != nil {
					t.Errorf("the daemon did not shut down cleanly: %v", err)
				}
				in.waitFrom(t, mark, "the bridge offline after shutdown", func(m mqtttest.Message) bool {
					return m.Topic == "cloud2mqtt/bridge/state" && m.Payload == "offline"
				}, d)
				// What Home Assistant finds when it connects later: the
				// retained "offline" and the device's retained configs.
				late := mqtttest.NewClient(t, b.URL(), lc.client(b))
				late.Subscribe("cloud2mqtt/bridge/state", 1)
				late.Subscribe("homeassistant/light/"+id+"/light/config", 1)
				again := &received{c: late}
				again.waitFor(t, "the retained offline state", func(m mqtttest.Message) bool {
					return m.Topic == "cloud2mqtt/bridge/state" && m.Payload == "offline" && m.Retained
				}, d)
				again.waitFor(t, "the retained light config", func(m mqtttest.Message) bool {
					return m.Topic == "homeassistant/light/"+id+"/light/config" && m.Retained && strings.Contains(m.Payload, `"cloud2mqtt/`+id+`/`)
				}, d)
				d.checkNoSecrets(t)
			})
		}
	}
}

// TestListenerMisconfigured: a wrong password and an untrusted broker
// certificate. The daemon keeps retrying (a broker may be fixed without
// restarting the bridge), warns with a hint naming the setting to check,
// never becomes ready, publishes nothing, leaks no secret and stops
// cleanly.
func TestListenerMisconfigured(t *testing.T) {
	cases := []struct {
		name   string
		broker []mqtttest.Option
		env    func(b *mqtttest.Broker) map[string]string
		client func(b *mqtttest.Broker) mqtttest.ClientOptions
		hint   []string // what the warning must say
	}{
		{
			name:   "wrong password",
			broker: []mqtttest.Option{mqtttest.WithPassword(listenerUser, listenerPassword)},
			env: func(*mqtttest.Broker) map[string]string {
				return map[string]string{"MQTT_USERNAME": listenerUser, "MQTT_PASSWORD": "not-the-" + listenerPassword}
			},
			client: func(*mqtttest.Broker) mqtttest.ClientOptions {
				return mqtttest.ClientOptions{Username: listenerUser, Password: listenerPassword}
			},
			hint: []string{"not authorized", "MQTT_USERNAME", "MQTT_PASSWORD"},
		},
		{
			name:   "no password",
			broker: []mqtttest.Option{mqtttest.WithPassword(listenerUser, listenerPassword)},
			env:    func(*mqtttest.Broker) map[string]string { return nil },
			client: func(*mqtttest.Broker) mqtttest.ClientOptions {
				return mqtttest.ClientOptions{Username: listenerUser, Password: listenerPassword}
			},
			hint: []string{"not authorized", "MQTT_USERNAME", "MQTT_PASSWORD"},
		},
		{
			name:   "untrusted certificate",
			broker: []mqtttest.Option{mqtttest.WithTLS()},
			env:    func(*mqtttest.Broker) map[string]string { return nil }, // no MQTT_CA_FILE: the system's CAs
			client: func(b *mqtttest.Broker) mqtttest.ClientOptions { return mqtttest.ClientOptions{CAFile: b.CAFile()} },
			hint:   []string{"not trusted", "MQTT_CA_FILE"},
		},
	}
	// The subtests run in parallel inside one group, so that the wait for
	// paho's connect goroutines below comes after all of them.
	t.Run("group", func(t *testing.T) {
		for _, kind := range mqtttest.Kinds() {
			for _, c := range cases {
				t.Run(string(kind)+"/"+c.name, func(t *testing.T) {
					t.Parallel()
					b := mqtttest.Start(t, append([]mqtttest.Option{mqtttest.WithKind(kind)}, c.broker...)...)
					watch := mqtttest.NewClient(t, b.URL(), c.client(b))
					watch.Subscribe("#", 1)
					d := startListenerDaemon(t, b, c.env(b))

					deadline := time.Now().Add(listenerWait)
					var warning string
					for warning == "" {
						warning = d.logLine(func(l logLine) bool {
							return (l.Level == "warn" || l.Level == "error") && containsAll(l.raw, c.hint...)
						})
						if time.Now().After(deadline) {
							t.Fatalf("no warning saying %q within %s; logs:\n%s", c.hint, listenerWait, d.logs.String())
						}
						time.Sleep(20 * time.Millisecond)
					}
					t.Logf("warning: %s", warning)
					if err := d.waitReady(200 * time.Millisecond); err == nil {
						t.Errorf("the daemon says it is ready without a broker connection")
					}
					if err := d.stop(); err != nil {
						t.Errorf("the daemon did not stop cleanly: %v", err)
					}
					if m, ok := watch.Next(100 * time.Millisecond); ok {
						t.Errorf("the broker got a message from the misconfigured daemon: %s %q", m.Topic, m.Payload)
					}
					d.checkNoSecrets(t)
				})
			}
		}
	})
	// A daemon stopped while it was still trying to connect leaves paho's
	// connect goroutine asleep until its next attempt (paho cannot cut that
	// sleep short): it must end within one retry interval (listenerRetry
	// here, 5 s by default), not leak. (Stacks spell paho's package path
	// with %2e for its dots.)
	testkit.WaitGoroutinesGone(t, 10*time.Second, "golang.(*client).Connect.func1", "golang.(*client).Disconnect.func1")
}

// listenerDaemon is app.Main run in-process against a started broker and
// a simulated cloud.
type listenerDaemon struct {
	t      *testing.T
	sim    *cloudsim.Sim
	main   *app.Main
	logs   *lockedBuffer
	cancel context.CancelFunc
	done   chan error
	env    map[string]string
}

// listenerRetry is the daemons' wait between connection attempts (the
// default is 5 s): a stopped daemon's last attempt ends within it.
const listenerRetry = 250 * time.Millisecond

func startListenerDaemon(t *testing.T, b *mqtttest.Broker, extra map[string]string) *listenerDaemon {
	t.Helper()
	d := &listenerDaemon{t: t, logs: &lockedBuffer{}, done: make(chan error, 1)}
	d.sim = cloudsim.New(cloudsim.Options{APIKey: listenerKey})
	srv := httptest.NewServer(d.sim)
	t.Cleanup(srv.Close)
	d.env = map[string]string{
		"CLOUD_BASE_URL": srv.URL,
		"CLOUD_API_KEY":  listenerKey,
		"MQTT_URL":       b.URL(),
		"MQTT_CLIENT_ID": "bridge-" + strings.NewReplacer("/", "-", "+", "-", "#", "-").Replace(t.Name()),
		"POLL_INTERVAL":  "2s",
		"LOG_LEVEL":      "debug",
	}
	for k, v := range extra {
		d.env[k] = v
	}
	cfg, err := config.Load(d.env)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	d.main = &app.Main{Config: cfg, Version: "test", Log: zerolog.New(d.logs).With().Timestamp().Logger()}
	d.main.SetConnectRetry(listenerRetry)
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	go func() { d.done <- d.main.Run(ctx) }()
	t.Cleanup(func() { _ = d.stop() })
	return d
}

func (d *listenerDaemon) waitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return d.main.WaitReady(ctx)
}

// stop cancels the daemon and returns Run's error; it is safe to call
// more than once.
func (d *listenerDaemon) stop() error {
	if d.cancel == nil {
		return nil
	}
	d.cancel()
	d.cancel = nil
	select {
	case err := <-d.done:
		return err
	case <-time.After(15 * time.Second):
		return fmt.Errorf("Run did not return within 15s of the cancel")
	}
}

// controlled reports whether the simulated cloud applied value to the
// device's instance.
func (d *listenerDaemon) controlled(device, instance string, value any) bool {
	for _, r := range d.sim.ControlLog() {
		if r.Device == device && r.Instance == instance && r.Code == 200 && capability.Equal(capability.NormalizeValue(r.Value), value) {
			return true
		}
	}
	return false
}

// checkNoSecrets: neither the API key nor the broker password is in the logs.
func (d *listenerDaemon) checkNoSecrets(t *testing.T) {
	t.Helper()
	logs := d.logs.String()
	for _, name := range []string{"CLOUD_API_KEY", "MQTT_PASSWORD"} {
		if s := d.env[name]; s != "" && strings.Contains(logs, s) {
			t.Errorf("the logs contain the value of %s", name)
		}
	}
}

type logLine struct {
	Level string `json:"level"`
	raw   string
}

// logLine returns the first JSON log line that satisfies pred, or "".
func (d *listenerDaemon) logLine(pred func(logLine) bool) string {
	for _, s := range strings.Split(d.logs.String(), "\n") {
		var l logLine
		if json.Unmarshal([]byte(s), &l) != nil {
			continue
		}
		l.raw = s
		if pred(l) {
			return s
		}
	}
	return ""
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// received keeps what a test client got, so that waits can look back.
type received struct {
	c   *mqtttest.Client
	all []mqtttest.Message
}

// waitFor returns the first message so far or to come that satisfies pred;
// after listenerWait it fails the test with what it saw and the logs.
func (r *received) waitFor(t *testing.T, what string, pred func(mqtttest.Message) bool, d *listenerDaemon) mqtttest.Message {
	t.Helper()
	return r.waitFrom(t, 0, what, pred, d)
}

// mark is the index of the next message, for waitFrom.
func (r *received) mark() int { return len(r.all) }

// waitFrom is waitFor looking only at messages from index from on.
func (r *received) waitFrom(t *testing.T, from int, what string, pred func(mqtttest.Message) bool, d *listenerDaemon) mqtttest.Message {
	t.Helper()
	deadline := time.Now().Add(listenerWait)
	for i := from; ; i++ {
		for i >= len(r.all) {
			m, ok := r.c.Next(time.Until(deadline))
			if !ok {
				var seen strings.Builder
				for _, m := range r.all[from:] {
					fmt.Fprintf(&seen, "  %s %.160s\n", m.Topic, m.Payload)
				}
				t.Fatalf("no %s within %s; saw:\n%slogs:\n%s", what, listenerWait, seen.String(), d.logs.String())
			}
			r.all = append(r.all, m)
		}
		if pred(r.all[i]) {
			return r.all[i]
		}
	}
}

// stateMember is the JSON text of one member of a state payload, or "".
func stateMember(payload, member string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(payload), &m) != nil {
		return ""
	}
	return string(m[member])
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
