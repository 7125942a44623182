package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/mqtttest"
	"cloud2mqtt/internal/topic"
)

// TestHomeAssistantAppMode runs the daemon as the Supervisor would start
// it: SUPERVISOR_TOKEN set, the options in a file, the broker (mosquitto
// with a password, when installed) named only by a stand-in Supervisor API
// on loopback. The bridge must come online on that broker with the
// Supervisor's credentials, log plain text, and never log a secret.
func TestHomeAssistantAppMode(t *testing.T) {
	const user, password = "addons", "pw-from-supervisor-77"
	b := mqtttest.Start(t, mqtttest.WithPassword(user, password))
	host, port, _ := net.SplitHostPort(b.Addr())
	asked := make(chan string, 4)
	sup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- r.Method + " " + r.URL.Path + " " + r.Header.Get("Authorization")
		if r.URL.Path != "/services/mqtt" || r.Header.Get("Authorization") != "Bearer sup-token" {
			http.Error(w, `{"result":"error","message":"forbidden"}`, http.StatusForbidden)
			return
		}
		fmt.Fprintf(w, `{"result":"ok","data":{"addon":"core_mosquitto","host":%q,"port":%s,"ssl":false,"username":%q,"password":%q,"protocol":"3.1.1"}}`,
			host, port, user, password)
	}))
	defer sup.Close()

	// The cloud: the simulator, its API key given as the app's option.
	sim := cloudsim.New(cloudsim.Options{})
	cloud := httptest.NewServer(sim)
	defer cloud.Close()
	apiKey := sim.APIKey()

	dir := t.TempDir()
	options := filepath.Join(dir, "options.json")
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"cloud_api_key":%q,"cloud_base_url":%q,"poll_interval":"30s","cloud_daily_limit":0,"log_level":"info","mqtt_base_topic":"c2m-app","state_dir":%q}`, apiKey, cloud.URL, state)
	if err := os.WriteFile(options, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	environ := []string{"SUPERVISOR_TOKEN=sup-token", "SUPERVISOR_API=" + sup.URL, "ADDON_OPTIONS_FILE=" + options}

	// The version stamped with -ldflags reaches Home Assistant (discovery's
	// sw_version) and bridge/info.
	defer func(v string) { version = v }(version)
	version = "9.8.7-stamped"

	watcher := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{Username: user, Password: password})
	stateTopic := topic.New("c2m-app").BridgeState()
	watcher.Subscribe(stateTopic, 1)
	watcher.Subscribe("c2m-app/bridge/info", 1)
	watcher.Subscribe("homeassistant/#", 1)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The daemon logs from several goroutines: a buffer of their own each
	// would race.
	out, errOut := &syncWriter{w: &strings.Builder{}}, &syncWriter{w: &strings.Builder{}}
	done := make(chan int, 1)
	go func() { done <- run(ctx, nil, environ, out, errOut) }()
	var online, infoVersion, swVersion bool
	for !(online && infoVersion && swVersion) {
		m, ok := watcher.Next(30 * time.Second)
		if !ok {
			t.Fatalf("within 30s: online %v, version in bridge/info %v, sw_version in discovery %v", online, infoVersion, swVersion)
		}
		switch {
		case m.Topic == stateTopic:
			online = online || m.Payload == "online"
		case m.Topic == "c2m-app/bridge/info":
			infoVersion = infoVersion || strings.Contains(m.Payload, `"version":"9.8.7-stamped"`)
		default:
			swVersion = swVersion || strings.Contains(m.Payload, `"sw_version":"9.8.7-stamped"`)
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit code %d; log:\n%s", code, errOut.String())
	}
	if got := <-asked; got != "GET /services/mqtt Bearer sup-token" {
		t.Errorf("the Supervisor was asked %q", got)
	}
	log := errOut.String()
	if strings.HasPrefix(strings.TrimSpace(log), "{") || !strings.Contains(log, "INF") {
		t.Errorf("the log is not the console format the Supervisor shows:\n%s", log)
	}
	for _, secret := range []string{password, apiKey, "sup-token"} {
		if len(secret) < 4 {
			t.Fatalf("secret %q too short to look for", secret)
		}
		if strings.Contains(log, secret) || strings.Contains(out.String(), secret) {
			t.Errorf("the output shows a secret (%s...)", secret[:4])
		}
	}
	// The state went to the options' state directory.
	if entries, err := os.ReadDir(state); err != nil || len(entries) == 0 {
		t.Errorf("nothing written to the state directory %s (%v)", state, err)
	}
}

// TestHomeAssistantAppModeErrors: a typo in the options is a configuration
// error (78, not retried); a Supervisor without an MQTT service is worth a
// restart (1). Both say what to do.
func TestHomeAssistantAppModeErrors(t *testing.T) {
	sup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"result":"error","message":"No MQTT service available"}`, http.StatusBadRequest)
	}))
	defer sup.Close()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := map[string]string{"SUPERVISOR_TOKEN": "t", "SUPERVISOR_API": sup.URL, "ADDON_OPTIONS_FILE": write("typo.json", `{"pol_interval":"30s"}`)}
	if code, _, errOut := runBridge(t, env, "-demo"); code != exitConfig || !strings.Contains(errOut, `"pol_interval" is not a setting`) {
		t.Errorf("misspelt option: code %d, stderr %q", code, errOut)
	}
	env["ADDON_OPTIONS_FILE"] = write("ok.json", `{"log_level":"info"}`)
	if code, _, errOut := runBridge(t, env, "-demo"); code != 1 || !strings.Contains(errOut, "Mosquitto broker app") {
		t.Errorf("no MQTT service: code %d, stderr %q", code, errOut)
	}
}

// TestAppModeNeverEchoesASecretOrALongValue: options with secrets pasted
// into the wrong fields and values too long to be typed by hand. The
// daemon refuses them (78), naming each option's variable, and its output
// shows no secret option's value and nothing longer than 64 characters of
// any value (issue 28: the app's documentation promises it).
func TestAppModeNeverEchoesASecretOrALongValue(t *testing.T) {
	const apiKey, password, token = "SECRET-api-key-7f3a", "SECRET-mqtt-pw-91", "SECRET-http-token-5521"
	long := func(prefix string, n int) string { return prefix + strings.Repeat("x", n-len(prefix)) }
	options := map[string]any{
		"cloud_api_key":     apiKey,
		"mqtt_password":     password,
		"http_token":        token,
		"poll_interval":     apiKey,   // pasted into the wrong field
		"log_level":         password, // the same
		"mqtt_client_id":    "id/" + token,
		"cloud_base_url":    "https://user:" + password + "@" + long("cloud.", 80) + ".example/?q=1",
		"mqtt_url":          "tcp://" + long("broker", 90) + ":99999",
		"mqtt_base_topic":   long("#top", 70),
		"lan_scan_targets":  long("192.168.1.1,,", 100),
		"cloud_daily_limit": -1,
	}
	body, err := json.Marshal(options)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "options.json")
	if err := os.WriteFile(p, body, 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SUPERVISOR_TOKEN": "SECRET-supervisor", "SUPERVISOR_API": "http://127.0.0.1:1", "ADDON_OPTIONS_FILE": p}
	code, out, errOut := runBridge(t, env)
	if code != exitConfig {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", code, exitConfig, errOut)
	}
	shown := out + errOut
	for _, name := range []string{"POLL_INTERVAL", "LOG_LEVEL", "MQTT_CLIENT_ID", "CLOUD_BASE_URL", "MQTT_URL", "MQTT_BASE_TOPIC", "LAN_SCAN_TARGETS"} {
		if !strings.Contains(shown, name) {
			t.Errorf("no problem names %s:\n%s", name, shown)
		}
	}
	for _, secret := range []string{apiKey, password, token, "SECRET-supervisor"} {
		if strings.Contains(shown, secret) {
			t.Errorf("the output shows the secret %.10s...:\n%s", secret, shown)
		}
	}
	for k, v := range options {
		s, _ := v.(string)
		for i := 0; i+65 <= len(s); i++ {
			if strings.Contains(shown, s[i:i+65]) {
				t.Errorf("the output shows 65 characters of %s:\n%s", k, shown)
				break
			}
		}
	}
	if strings.Contains(shown, "SECRET") {
		t.Errorf("the output shows part of a secret:\n%s", shown)
	}
}
