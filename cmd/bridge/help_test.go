package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/testkit"
)

// TestHelp: -h, -help and the command help print the same help on stdout:
// every command and flag, the required settings with their meaning, and
// where the configuration lives for each way of installing.
func TestHelp(t *testing.T) {
	var first string
	for _, args := range [][]string{{"-h"}, {"-help"}, {"help"}, {"-demo", "help"}} {
		code, out, errOut := runBridge(t, nil, args...)
		if code != 0 || errOut != "" {
			t.Errorf("%v: code %d, stderr %q", args, code, errOut)
		}
		if first == "" {
			first = out
		} else if out != first {
			t.Errorf("%v prints another help than -h", args)
		}
	}
	for _, want := range []string{
		"usage: cloud2mqtt [flags] [command]",
		"  devices ", "  help ", "  version ", "  -check\n", "  -demo\n", "  -version\n", "  -h, -help\n",
		"required settings", "  CLOUD_BASE_URL\n      Base address of the cloud API", "  CLOUD_API_KEY\n      API key for the cloud",
		"MQTT_URL (default tcp://127.0.0.1:1883), or MQTT_URL=embedded",
		"Debian package      /etc/cloud2mqtt/cloud2mqtt.env", "/etc/cloud2mqtt/api_key",
		"Archive ", "Container ", "cloud2mqtt.env beside docker-compose.yml",
		"Home Assistant app  the app's Configuration tab",
		"config.example.env", "CLOUD_API_KEY_FILE, MQTT_PASSWORD_FILE, HTTP_TOKEN_FILE", "cloud2mqtt -check",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("the help lacks %q:\n%s", want, first)
		}
	}
	for _, name := range config.Required {
		if !strings.Contains(first, "  "+name+"\n") {
			t.Errorf("the help does not list the required %s", name)
		}
	}
}

// TestVersionCommand: "cloud2mqtt version" is "-version".
func TestVersionCommand(t *testing.T) {
	_, want, _ := runBridge(t, nil, "-version")
	code, out, _ := runBridge(t, nil, "version")
	if code != 0 || out != want || !strings.HasPrefix(out, "cloud2mqtt ") {
		t.Errorf("version: code %d, %q; -version says %q", code, out, want)
	}
}

// TestCommandLineMistakes: an unknown command gets the one meant, a
// setting given as an argument is told where settings go, anything after
// the command other than flags is refused, and flags after the command
// count (cloud2mqtt devices -demo).
func TestCommandLineMistakes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"versoin"}, `cloud2mqtt: unknown command "versoin": did you mean version?`},
		{[]string{"device"}, `did you mean devices?`},
		{[]string{"POLL_INTERVAL=30s"}, `settings are environment variables, set before the program: POLL_INTERVAL=30s cloud2mqtt`},
		{[]string{"devices", "extra"}, `unexpected argument "extra" after the command devices`},
		{[]string{"-nonsense"}, "flag provided but not defined: -nonsense"},
	} {
		code, out, errOut := runBridge(t, nil, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, `Run "cloud2mqtt help"`) {
			t.Errorf("%v: code %d, stdout %q, stderr:\n%s", tc.args, code, out, errOut)
		}
	}
	code, out, errOut := runBridge(t, nil, "devices", "-demo")
	if code != 0 || !strings.Contains(out, "h619c_aabbccddeeff1001") {
		t.Errorf("devices -demo: code %d\n%s%s", code, out, errOut)
	}
}

// TestDemoStart (issue 30 §6): the demo's instructions come after the
// start's log lines (they do not scroll away under them), the poll
// interval is logged once, and no log line names a key twice.
func TestDemoStart(t *testing.T) {
	environ := []string{"MQTT_LISTEN=127.0.0.1:0", "HTTP_ADDR=127.0.0.1:0", "LOG_FORMAT=json"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// One stream for both, as a terminal shows them.
	both := &notifyingBuffer{changed: make(chan struct{}, 1)}
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"-demo"}, environ, both, both) }()
	bound := time.NewTimer(30 * time.Second)
	defer bound.Stop()
	for !strings.Contains(both.String(), "Stop with Ctrl-C.") || !strings.Contains(both.String(), "Status page:") {
		select {
		case <-both.changed:
		case code := <-done:
			t.Fatalf("the demo exited with %d:\n%s", code, both.String())
		case <-bound.C:
			t.Fatalf("no instructions within 30 s:\n%s", both.String())
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit code %d", code)
	}
	s := both.String()
	banner := strings.Index(s, "cloud2mqtt demo: a simulated cloud account")
	lines := strings.Split(s[:banner], "\n")
	if added := strings.Count(s[:banner], `"device added"`); added != 16 {
		t.Errorf("%d devices added before the instructions, want all 16:\n%s", added, s)
	}
	if len(lines) < 20 {
		t.Errorf("only %d log lines before the instructions:\n%s", len(lines), s)
	}
	if n := strings.Count(s, `"poll interval"`); n != 1 {
		t.Errorf("the poll interval is logged %d times, want once", n)
	}
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		if key, ok := testkit.RepeatedKey(line); ok {
			t.Errorf("the key %q twice in %s", key, line)
		}
	}
	if !strings.Contains(s[strings.LastIndex(s, "\n{"):], `"stopped"`) {
		t.Errorf("the last log line is not \"stopped\":\n%s", s)
	}
}

func TestRepeatedKey(t *testing.T) {
	if k, ok := testkit.RepeatedKey(`{"component":"events","a":{"component":1},"component":"mqtt"}`); !ok || k != "component" {
		t.Errorf("a repeated key not found: %q %v", k, ok)
	}
	if _, ok := testkit.RepeatedKey(`{"component":"mqtt","a":{"component":1}}`); ok {
		t.Error("a nested key taken for a repeat")
	}
	if _, ok := testkit.RepeatedKey(`{"x":1}`); ok {
		t.Error("one key taken for a repeat")
	}
}
