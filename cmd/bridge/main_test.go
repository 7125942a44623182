package main

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"cloud2mqtt/internal/mqtttest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func runBridge(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, args, environ, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestVersion(t *testing.T) {
	code, out, _ := runBridge(t, nil, "-version")
	if code != 0 || !strings.Contains(out, "cloud2mqtt "+version) {
		t.Errorf("-version: code %d, output %q", code, out)
	}
}

func TestBuildVersion(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "false"}}
	dirty := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789ab"}, {Key: "vcs.modified", Value: "true"}}
	tests := map[string]struct {
		ldflags string
		info    *debug.BuildInfo
		ok      bool
		want    string
	}{
		"ldflags win":          {"v1.0.0", &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}}, true, "v1.0.0"},
		"module version":       {"", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: rev}, true, "v1.2.3"},
		"checkout revision":    {"", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev}, true, "0123456789ab"},
		"uncommitted changes":  {"", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: dirty}, true, "0123456789ab+dirty"},
		"no VCS information":   {"", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "dev"},
		"no build information": {"", nil, false, "dev"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := buildVersion(tc.ldflags, tc.info, tc.ok); got != tc.want {
				t.Errorf("buildVersion = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRuntimeTunedUnlessTheEnvironmentSaysOtherwise(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))

	runtime.GOMAXPROCS(3)
	debug.SetGCPercent(100)
	tuneRuntime(func(string) string { return "" })
	if got := runtime.GOMAXPROCS(0); got != maxProcs {
		t.Errorf("GOMAXPROCS unset: %d Ps, want %d", got, maxProcs)
	}
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, gcPercent)
	}

	runtime.GOMAXPROCS(3)
	set := map[string]string{"GOGC": "100", "GOMAXPROCS": "3"}
	tuneRuntime(func(k string) string { return set[k] })
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("GOMAXPROCS=3 in the environment: %d Ps, want 3 (the user's setting)", got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100 in the environment: GC percent %d, want 100", got)
	}
}

func TestUnknownCommand(t *testing.T) {
	code, _, errOut := runBridge(t, nil, "frobnicate")
	if code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Errorf("code %d, stderr %q", code, errOut)
	}
}

// TestCheckNamesEveryMisconfiguration: -check exits 1 and names the
// variable of each problem, without running anything.
func TestCheckNamesEveryMisconfiguration(t *testing.T) {
	dir := t.TempDir()
	missing := dir + "/missing"
	good := map[string]string{"CLOUD_BASE_URL": "https://cloud.example", "CLOUD_API_KEY": "k"}
	cases := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"nothing set", map[string]string{}, []string{"CLOUD_BASE_URL", "CLOUD_API_KEY"}},
		{"bad base URL", map[string]string{"CLOUD_BASE_URL": "ftp://x", "CLOUD_API_KEY": "k"}, []string{"CLOUD_BASE_URL"}},
		{"key and key file", map[string]string{"CLOUD_API_KEY_FILE": missing}, []string{"CLOUD_API_KEY_FILE"}},
		{"poll too fast", map[string]string{"POLL_INTERVAL": "1s"}, []string{"POLL_INTERVAL"}},
		{"poll not a duration", map[string]string{"POLL_INTERVAL": "fast"}, []string{"POLL_INTERVAL"}},
		{"negative daily limit", map[string]string{"CLOUD_DAILY_LIMIT": "-5"}, []string{"CLOUD_DAILY_LIMIT"}},
		{"bad broker scheme", map[string]string{"MQTT_URL": "http://broker"}, []string{"MQTT_URL"}},
		{"cert without key", map[string]string{"MQTT_URL": "ssl://broker:8883", "MQTT_CERT_FILE": missing}, []string{"MQTT_CERT_FILE", "MQTT_KEY_FILE"}},
		{"unreadable CA", map[string]string{"MQTT_URL": "ssl://broker:8883", "MQTT_CA_FILE": missing}, []string{"MQTT_CA_FILE"}},
		{"password without user", map[string]string{"MQTT_PASSWORD": "p"}, []string{"MQTT_PASSWORD"}},
		{"wildcard base topic", map[string]string{"MQTT_BASE_TOPIC": "home/#"}, []string{"MQTT_BASE_TOPIC"}},
		{"bad log level", map[string]string{"LOG_LEVEL": "loud"}, []string{"LOG_LEVEL"}},
		{"bad log format", map[string]string{"LOG_FORMAT": "xml"}, []string{"LOG_FORMAT"}},
		{"bad HTTP address", map[string]string{"HTTP_ADDR": "nonsense"}, []string{"HTTP_ADDR"}},
		{"zero limit", map[string]string{"LIMIT_CONTROL_PER_SECOND": "0"}, []string{"LIMIT_CONTROL_PER_SECOND"}},
		{"bad discovery flag", map[string]string{"HA_DISCOVERY": "perhaps"}, []string{"HA_DISCOVERY"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{}
			if c.name != "nothing set" {
				for k, v := range good {
					env[k] = v
				}
			}
			if c.name == "key and key file" {
				env["CLOUD_API_KEY"] = "k"
			}
			for k, v := range c.env {
				env[k] = v
			}
			code, out, _ := runBridge(t, env, "-check")
			if code != 1 {
				t.Errorf("exit code %d, want 1\n%s", code, out)
			}
			if !strings.Contains(out, "FAIL configuration") {
				t.Errorf("the report does not fail the configuration:\n%s", out)
			}
			for _, v := range c.want {
				if !strings.Contains(out[strings.Index(out, "FAIL"):], v) {
					t.Errorf("the report's problems do not name %s:\n%s", v, out)
				}
			}
			if strings.Contains(out, "\"k\"") || strings.Contains(out, "=k\n") {
				t.Errorf("the report shows the API key:\n%s", out)
			}
		})
	}
}

// TestCheckReachesBrokerAndCloud: a valid demo configuration passes -check
// against a real broker; a broker that is not there fails it.
func TestCheckReachesBrokerAndCloud(t *testing.T) {
	b := mqtttest.Start(t)
	code, out, _ := runBridge(t, map[string]string{"MQTT_URL": b.URL(), "MQTT_LISTEN": "127.0.0.1:0"}, "-check", "-demo")
	if code != 0 || !strings.Contains(out, "devices on the account") {
		t.Errorf("demo check: code %d\n%s", code, out)
	}
	key := "secret-key-31337"
	code, out, _ = runBridge(t, map[string]string{
		"CLOUD_BASE_URL": "http://127.0.0.1:1", "CLOUD_API_KEY": key, "CLOUD_TIMEOUT": "1s",
		"MQTT_URL": b.URL(),
	}, "-check")
	if code != 1 || !strings.Contains(out, "ok   broker") || !strings.Contains(out, "FAIL cloud") {
		t.Errorf("unreachable cloud: code %d\n%s", code, out)
	}
	if strings.Contains(out, key) {
		t.Errorf("the report shows the API key")
	}
}

// TestConfigErrorExits78: a configuration the daemon cannot run with exits
// with EX_CONFIG, which the systemd unit does not restart on, and says what
// is wrong.
func TestConfigErrorExits78(t *testing.T) {
	code, _, errOut := runBridge(t, map[string]string{"CLOUD_BASE_URL": "https://cloud.example", "CLOUD_API_KEY": "k", "POLL_INTERVAL": "1s"})
	if code != 78 || !strings.Contains(errOut, "POLL_INTERVAL") {
		t.Errorf("exit code %d, want 78, stderr %q naming POLL_INTERVAL", code, errOut)
	}
	code, _, _ = runBridge(t, map[string]string{"STATE_DIR": "relative"}, "-demo", "devices")
	if code != 78 {
		t.Errorf("devices with a bad STATE_DIR: exit code %d, want 78", code)
	}
}

// TestCheckStateDirectory: -check says whether STATE_DIR is writable.
func TestCheckStateDirectory(t *testing.T) {
	b := mqtttest.Start(t)
	dir := t.TempDir()
	code, out, _ := runBridge(t, map[string]string{"MQTT_URL": b.URL(), "MQTT_LISTEN": "127.0.0.1:0", "STATE_DIR": dir}, "-check", "-demo")
	if code != 0 || !strings.Contains(out, "ok   state directory: "+dir+" is writable") {
		t.Errorf("writable STATE_DIR: code %d\n%s", code, out)
	}
	blocker := dir + "/file"
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runBridge(t, map[string]string{"MQTT_URL": b.URL(), "MQTT_LISTEN": "127.0.0.1:0", "STATE_DIR": blocker + "/state"}, "-check", "-demo")
	// One FAIL line names the directory and how systemd provides one.
	named := false
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "FAIL ") && strings.Contains(line, blocker+"/state") && strings.Contains(line, "StateDirectory=") {
			named = true
		}
	}
	if code != 1 || !named {
		t.Errorf("impossible STATE_DIR: code %d\n%s", code, out)
	}
}

func TestDevicesDemo(t *testing.T) {
	code, out, errOut := runBridge(t, nil, "-demo", "devices")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errOut)
	}
	for _, want := range []string{"ID", "CAPABILITIES", "h619c_aabbccddeeff1001", "powerSwitch"} {
		if !strings.Contains(out, want) {
			t.Errorf("devices output lacks %q:\n%s", want, out)
		}
	}
}

// TestReadmeStartsWithTheDemoAndTests: the first two commands a reader
// meets are the demo and the tests, which need nothing but Go. (Every
// setting is documented in docs/configuration.md, generated and tested
// from the settings' descriptors.)
func TestReadmeStartsWithTheDemoAndTests(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	demo := strings.Index(readme, "    go run ./cmd/bridge -demo\n")
	tests := strings.Index(readme, "    go test ./...\n")
	if demo < 0 || tests < 0 {
		t.Fatalf("README lacks the demo or the test command")
	}
	first := strings.Index(readme, "\n    ") + 1
	second := demo + strings.Index(readme[demo:], "\n\n    ") + 2
	if first != demo || second != tests {
		t.Errorf("README does not start with the demo and test commands")
	}
}
