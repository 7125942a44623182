package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caarlos0/env/v11"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// valid is the smallest environment that passes Validate without -demo.
func valid() map[string]string {
	return map[string]string{
		"CLOUD_BASE_URL": "https://api.example.com",
		"CLOUD_API_KEY":  "k-123",
	}
}

func with(base map[string]string, kv ...string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func mustLoad(t *testing.T, environ map[string]string) Config {
	t.Helper()
	cfg, err := Load(environ)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return cfg
}

func TestDefaults(t *testing.T) {
	cfg := mustLoad(t, valid())
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the defaults plus base URL and key do not validate: %v", err)
	}
	wantCloud := Cloud{BaseURL: "https://api.example.com", APIKey: "k-123", KeyHeader: "Service-API-Key", Timeout: 10 * time.Second}
	if !reflect.DeepEqual(cfg.Cloud, wantCloud) {
		t.Errorf("Cloud = %#v, want %#v", cfg.Cloud, wantCloud)
	}
	if want := (Poll{Interval: 60 * time.Second, DeviceListInterval: 10 * time.Minute, SceneInterval: 6 * time.Hour, QuietFactor: 4}); cfg.Poll != want {
		t.Errorf("Poll = %+v, want %+v", cfg.Poll, want)
	}
	// The spec's rate table.
	if want := (Limits{DevicesPerMinute: 30, ControlPerSecond: 12, ControlBurst: 80, DeviceControlPerSecond: 2, DeviceControlBurst: 6, StatePerMinute: 30, ScenesPerMinute: 30}); cfg.Limits != want {
		t.Errorf("Limits = %+v, want %+v", cfg.Limits, want)
	}
	if want := (MQTT{URL: "tcp://127.0.0.1:1883", Listen: "127.0.0.1:1883", BaseTopic: "cloud2mqtt", QueuedCommandMaxAge: 2 * time.Minute}); cfg.MQTT != want {
		t.Errorf("MQTT = %#v, want %#v", cfg.MQTT, want)
	}
	if want := (HomeAssistant{Discovery: true, DiscoveryPrefix: "homeassistant", StatusTopic: "homeassistant/status"}); cfg.HA != want {
		t.Errorf("HA = %+v, want %+v", cfg.HA, want)
	}
	if cfg.HTTP.Addr != "" || cfg.Log != (Log{Level: "info", Format: "auto"}) || cfg.Demo || cfg.Embedded() {
		t.Errorf("HTTP %+v, Log %+v, Demo %v, Embedded %v: want off, info/auto, false, false", cfg.HTTP, cfg.Log, cfg.Demo, cfg.Embedded())
	}
}

// An empty value is the default, as in an env file with NAME= lines.
func TestEmptyValueMeansDefault(t *testing.T) {
	cfg := mustLoad(t, with(valid(), "POLL_INTERVAL", "", "MQTT_BASE_TOPIC", "", "HA_DISCOVERY", "", "CLOUD_API_KEY_FILE", "", "MQTT_PASSWORD", ""))
	if cfg.Poll.Interval != time.Minute || cfg.MQTT.BaseTopic != "cloud2mqtt" || !cfg.HA.Discovery {
		t.Errorf("empty values did not give the defaults: %v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestNilEnvironmentIsEmpty(t *testing.T) {
	t.Setenv("CLOUD_BASE_URL", "https://from-process-env.example.com")
	cfg, err := Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cloud.BaseURL != "" {
		t.Errorf("Load(nil) read the process environment: CLOUD_BASE_URL=%q", cfg.Cloud.BaseURL)
	}
}

// every sets every variable to a valid value different from its default.
func every(t *testing.T) map[string]string {
	dir := t.TempDir()
	ca, cert, key := writeTLSFiles(t, dir)
	return map[string]string{
		"CLOUD_BASE_URL":                  "http://127.0.0.1:8080/prefix",
		"CLOUD_API_KEY":                   "", // one of the pair: from its file
		"CLOUD_API_KEY_FILE":              writeTemp(t, dir, "key", "key-every\n"),
		"CLOUD_API_KEY_HEADER":            "X-Api-Key",
		"CLOUD_TIMEOUT":                   "3s",
		"CLOUD_EVENTS_URL":                "mqtts://events.example.com:8883",
		"CLOUD_DAILY_LIMIT":               "10000",
		"POLL_INTERVAL":                   "5s",
		"DEVICE_LIST_INTERVAL":            "30m",
		"SCENE_INTERVAL":                  "12h",
		"POLL_QUIET_FACTOR":               "2",
		"LAN_ENABLED":                     "true",
		"LAN_LISTEN":                      "192.168.1.5:4002",
		"LAN_SCAN_TARGETS":                "239.255.255.250,192.168.20.31,lights.lan:4001",
		"LAN_SCAN_INTERVAL":               "2m",
		"LAN_POLL_INTERVAL":               "5",
		"LIMIT_DEVICES_PER_MINUTE":        "10",
		"LIMIT_CONTROL_PER_SECOND":        "6",
		"LIMIT_CONTROL_BURST":             "40",
		"LIMIT_DEVICE_CONTROL_PER_SECOND": "1",
		"LIMIT_DEVICE_CONTROL_BURST":      "3",
		"LIMIT_STATE_PER_MINUTE":          "20",
		"LIMIT_SCENES_PER_MINUTE":         "5",
		"MQTT_URL":                        "ssl://broker.lan:8883",
		"MQTT_LISTEN":                     "0.0.0.0:1884",
		"MQTT_USERNAME":                   "bridge",
		"MQTT_PASSWORD":                   "pw-every",
		"MQTT_PASSWORD_FILE":              "", // one of the pair: the variable
		"MQTT_CA_FILE":                    ca,
		"MQTT_CERT_FILE":                  cert,
		"MQTT_KEY_FILE":                   key,
		"MQTT_CLIENT_ID":                  "bridge-1",
		"MQTT_BASE_TOPIC":                 "home/cloud",
		"MQTT_QUEUED_COMMAND_MAX_AGE":     "90",
		"HA_DISCOVERY":                    "false",
		"HA_DISCOVERY_PREFIX":             "ha",
		"HA_STATUS_TOPIC":                 "ha/status",
		"HTTP_ADDR":                       ":9090",
		"HTTP_TOKEN":                      "", // one of the pair: from its file
		"HTTP_TOKEN_FILE":                 writeTemp(t, dir, "token", "token-every-0123456\n"),
		"HTTP_HOSTS":                      "bridge.example.com, *.home.arpa.",
		"LOG_LEVEL":                       "debug",
		"LOG_FORMAT":                      "json",
		"STATE_DIR":                       "/var/lib/cloud2mqtt-test",
	}
}

func TestEveryVariableParsed(t *testing.T) {
	environ := every(t)
	for _, v := range Vars() {
		if _, ok := environ[v.Name]; !ok {
			t.Errorf("%s is not covered by this test: add it to every()", v.Name)
		}
	}
	cfg := mustLoad(t, environ)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	want := Config{
		Cloud: Cloud{BaseURL: "http://127.0.0.1:8080/prefix", APIKey: "key-every", APIKeyFile: environ["CLOUD_API_KEY_FILE"], KeyHeader: "X-Api-Key", Timeout: 3 * time.Second,
			EventsURL: "mqtts://events.example.com:8883", DailyLimit: 10000},
		Poll: Poll{Interval: 5 * time.Second, DeviceListInterval: 30 * time.Minute, SceneInterval: 12 * time.Hour, QuietFactor: 2},
		Local: Local{Enabled: true, ListenAddr: "192.168.1.5:4002", ScanTargets: "239.255.255.250,192.168.20.31,lights.lan:4001",
			ScanInterval: 2 * time.Minute, PollInterval: 5 * time.Second},
		Limits: Limits{DevicesPerMinute: 10, ControlPerSecond: 6, ControlBurst: 40, DeviceControlPerSecond: 1, DeviceControlBurst: 3, StatePerMinute: 20, ScenesPerMinute: 5},
		MQTT: MQTT{URL: "ssl://broker.lan:8883", Listen: "0.0.0.0:1884", Username: "bridge", Password: "pw-every",
			CAFile: environ["MQTT_CA_FILE"], CertFile: environ["MQTT_CERT_FILE"], KeyFile: environ["MQTT_KEY_FILE"],
			ClientID: "bridge-1", BaseTopic: "home/cloud", QueuedCommandMaxAge: 90 * time.Second},
		HA: HomeAssistant{Discovery: false, DiscoveryPrefix: "ha", StatusTopic: "ha/status"},
		HTTP: HTTP{Addr: ":9090", Token: "token-every-0123456", TokenFile: environ["HTTP_TOKEN_FILE"],
			Hosts: "bridge.example.com, *.home.arpa."},
		Log:   Log{Level: "debug", Format: "json"},
		State: State{Dir: "/var/lib/cloud2mqtt-test"},
	}
	got := cfg
	got.apiKeySource, got.passwordSource, got.httpTokenSource, got.unparsed = "", "", "", nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got.Table(), want.Table())
		if got.Cloud.APIKey != want.Cloud.APIKey || got.MQTT.Password != want.MQTT.Password {
			t.Errorf("the secrets differ")
		}
	}

	// Every variable reaches its own setting: no row of the table keeps its
	// default (a variable wired to no field, or to the wrong one, would).
	defaults := mustLoad(t, nil).Table()
	for i, row := range cfg.Table() {
		if row == defaults[i] && environ[row[0]] != "" {
			t.Errorf("%s=%q did not change its setting (%q)", row[0], environ[row[0]], row[1])
		}
	}
}

func TestParseErrorsNameTheVariable(t *testing.T) {
	cfg, err := Load(with(valid(), "POLL_INTERVAL", "fast", "LIMIT_CONTROL_BURST", "eighty", "HA_DISCOVERY", "maybe", "CLOUD_DAILY_LIMIT", "1.5"))
	if err == nil {
		t.Fatal("Load accepted values that do not parse")
	}
	for _, want := range []string{
		`POLL_INTERVAL="fast" is not a duration`,
		`LIMIT_CONTROL_BURST="eighty" is not a whole number`,
		`HA_DISCOVERY="maybe" is not true or false`,
		`CLOUD_DAILY_LIMIT="1.5" is not a whole number`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Load error lacks %q:\n%v", want, err)
		}
	}
	if !strings.HasPrefix(err.Error(), "config: ") {
		t.Errorf("error not prefixed with the package: %v", err)
	}
	// The zero values left behind are not reported again as "below the floor".
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate repeats what Load reported: %v", err)
	}
	// The table shows what the user wrote, not the zero value.
	for _, row := range cfg.Table() {
		if row[0] == "POLL_INTERVAL" && row[1] != `"fast" (invalid)` {
			t.Errorf("POLL_INTERVAL row = %q, want the invalid input", row[1])
		}
	}
}

func TestValidateProblems(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := writeTLSFiles(t, dir)
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")

	cases := []struct {
		name    string
		environ map[string]string
		demo    bool
		want    []string // each must appear in the error
	}{
		{"missing base URL", with(valid(), "CLOUD_BASE_URL", ""), false, []string{"CLOUD_BASE_URL is empty", "-demo"}},
		{"base URL bad scheme", with(valid(), "CLOUD_BASE_URL", "ftp://api.example.com"), false, []string{`CLOUD_BASE_URL="ftp://api.example.com" is not an http:// or https:// URL with a host`}},
		{"base URL no host", with(valid(), "CLOUD_BASE_URL", "https://"), false, []string{"CLOUD_BASE_URL", "with a host"}},
		{"base URL not a URL", with(valid(), "CLOUD_BASE_URL", "api.example.com"), false, []string{"CLOUD_BASE_URL", "https://api.example.com"}},
		{"base URL with a password", with(valid(), "CLOUD_BASE_URL", "https://u:pw@api.example.com"), false, []string{`CLOUD_BASE_URL="https://u:xxxxx@api.example.com" carries a user or password`}},
		{"base URL with query", with(valid(), "CLOUD_BASE_URL", "https://api.example.com/?x=1"), false, []string{"CLOUD_BASE_URL", "query"}},
		{"base URL bad even in demo", with(valid(), "CLOUD_BASE_URL", "nope://x"), true, []string{"CLOUD_BASE_URL"}},
		{"missing key", with(valid(), "CLOUD_API_KEY", ""), false, []string{"CLOUD_API_KEY is empty: set it, or CLOUD_API_KEY_FILE, or a systemd credential named cloud_api_key"}},
		{"key with a line break", with(valid(), "CLOUD_API_KEY", "abc\ndef"), false, []string{"CLOUD_API_KEY contains a space, line break or control character"}},
		{"bad key header", with(valid(), "CLOUD_API_KEY_HEADER", "Api Key:"), false, []string{"CLOUD_API_KEY_HEADER", "not an HTTP header name"}},
		{"zero timeout", with(valid(), "CLOUD_TIMEOUT", "0s"), false, []string{"CLOUD_TIMEOUT=0s must be positive"}},
		{"events URL bad scheme", with(valid(), "CLOUD_EVENTS_URL", "https://events.example.com"), false, []string{"CLOUD_EVENTS_URL", `scheme "https"`, "mqtts"}},
		{"events URL bad port", with(valid(), "CLOUD_EVENTS_URL", "mqtts://events.example.com:99999"), false, []string{"CLOUD_EVENTS_URL", "port"}},
		{"negative daily limit", with(valid(), "CLOUD_DAILY_LIMIT", "-1"), false, []string{"CLOUD_DAILY_LIMIT=-1 is negative"}},
		{"poll below floor", with(valid(), "POLL_INTERVAL", "1s"), false, []string{"POLL_INTERVAL=1s is below the 2s floor (the cloud allows 30 state reads per minute per device)"}},
		{"device list below floor", with(valid(), "DEVICE_LIST_INTERVAL", "30s"), false, []string{"DEVICE_LIST_INTERVAL=30s is below the 1m floor"}},
		{"scenes below floor", with(valid(), "SCENE_INTERVAL", "10s"), false, []string{"SCENE_INTERVAL=10s is below the 1m floor"}},
		{"zero limits", with(valid(), "LIMIT_DEVICES_PER_MINUTE", "0", "LIMIT_CONTROL_PER_SECOND", "-2", "LIMIT_CONTROL_BURST", "0",
			"LIMIT_DEVICE_CONTROL_PER_SECOND", "0", "LIMIT_DEVICE_CONTROL_BURST", "0", "LIMIT_STATE_PER_MINUTE", "0", "LIMIT_SCENES_PER_MINUTE", "0"), false,
			[]string{"LIMIT_DEVICES_PER_MINUTE=0 must be at least 1", "LIMIT_CONTROL_PER_SECOND=-2 must be at least 1", "LIMIT_CONTROL_BURST=0 must be at least 1",
				"LIMIT_DEVICE_CONTROL_PER_SECOND=0", "LIMIT_DEVICE_CONTROL_BURST=0", "LIMIT_STATE_PER_MINUTE=0", "LIMIT_SCENES_PER_MINUTE=0"}},
		{"MQTT URL bad scheme", with(valid(), "MQTT_URL", "http://broker:1883"), false, []string{`MQTT_URL="http://broker:1883" has scheme "http": use tcp://, mqtt://, ssl://, mqtts://, tls://, ws:// or wss://, like tcp://127.0.0.1:1883`}},
		{"MQTT URL no host", with(valid(), "MQTT_URL", "tcp://:1883"), false, []string{"MQTT_URL", "no host"}},
		{"MQTT URL without scheme", with(valid(), "MQTT_URL", "broker.lan:1883"), false, []string{"MQTT_URL"}},
		{"MQTT URL IPv6 without brackets", with(valid(), "MQTT_URL", "tcp://::1:1883"), false, []string{`MQTT_URL="tcp://::1:1883": put an IPv6 address in brackets: tcp://[::1]:1883`}},
		{"MQTT URL IPv6 without brackets or port", with(valid(), "MQTT_URL", "mqtts://u:pw@2001:db8::1"), false, []string{"put an IPv6 address in brackets: mqtts://u:xxxxx@[2001:db8::1]"}},
		{"MQTT URL with a path", with(valid(), "MQTT_URL", "tcp://broker.lan:1883/mqtt"), false, []string{`MQTT_URL="tcp://broker.lan:1883/mqtt" has a path "/mqtt", which tcp:// ignores (only ws:// and wss:// use one): remove it, like tcp://broker.lan:1883`}},
		{"events URL with a path", with(valid(), "CLOUD_EVENTS_URL", "ssl://events.example.com:8883/x"), false, []string{"CLOUD_EVENTS_URL", `has a path "/x"`}},
		{"embedded bad listen", with(valid(), "MQTT_URL", "embedded", "MQTT_LISTEN", "1883"), false, []string{`MQTT_LISTEN="1883" is not host:port`}},
		{"password without user", with(valid(), "MQTT_PASSWORD", "pw"), false, []string{"MQTT_PASSWORD is set but MQTT_USERNAME is empty"}},
		{"cert without key", with(valid(), "MQTT_URL", "ssl://b:8883", "MQTT_CERT_FILE", cert), false, []string{"MQTT_CERT_FILE and MQTT_KEY_FILE must be set together"}},
		{"key without cert", with(valid(), "MQTT_URL", "ssl://b:8883", "MQTT_KEY_FILE", key), false, []string{"MQTT_CERT_FILE and MQTT_KEY_FILE must be set together"}},
		{"TLS files on plain URL", with(valid(), "MQTT_CA_FILE", ca), false, []string{"MQTT_URL is not a TLS URL", "ssl://"}},
		{"unreadable CA file", with(valid(), "MQTT_URL", "mqtts://b:8883", "MQTT_CA_FILE", missing), false, []string{"MQTT_CA_FILE=" + missing + " cannot be read", "no such file"}},
		{"CA file not PEM", with(valid(), "MQTT_URL", "mqtts://b:8883", "MQTT_CA_FILE", notPEM), false, []string{"MQTT_CA_FILE=" + notPEM + " holds no PEM certificate"}},
		{"unreadable cert and key", with(valid(), "MQTT_URL", "wss://b:443", "MQTT_CERT_FILE", missing, "MQTT_KEY_FILE", dir), false, []string{"MQTT_CERT_FILE=" + missing + " cannot be read", "MQTT_KEY_FILE=" + dir + " cannot be read"}},
		{"cert and key mismatch", with(valid(), "MQTT_URL", "ssl://b:8883", "MQTT_CERT_FILE", cert, "MQTT_KEY_FILE", notPEM), false, []string{"MQTT_CERT_FILE and MQTT_KEY_FILE are not a PEM certificate and its private key"}},
		{"client id with wildcard", with(valid(), "MQTT_CLIENT_ID", "a#b"), false, []string{"MQTT_CLIENT_ID"}},
		{"client id too long", with(valid(), "MQTT_CLIENT_ID", strings.Repeat("x", 257)), false, []string{"MQTT_CLIENT_ID is 257 bytes long: use at most 256", "leave it empty"}},
		{"negative queued command age", with(valid(), "MQTT_QUEUED_COMMAND_MAX_AGE", "-1m"), false, []string{"MQTT_QUEUED_COMMAND_MAX_AGE=-1m is negative", "or 0"}},
		{"base topic wildcard +", with(valid(), "MQTT_BASE_TOPIC", "a/+/b"), false, []string{`MQTT_BASE_TOPIC="a/+/b" contains the wildcard`}},
		{"base topic wildcard #", with(valid(), "MQTT_BASE_TOPIC", "a/#"), false, []string{"MQTT_BASE_TOPIC", "wildcard"}},
		{"base topic leading slash", with(valid(), "MQTT_BASE_TOPIC", "/cloud2mqtt"), false, []string{`MQTT_BASE_TOPIC="/cloud2mqtt" starts or ends with /`}},
		{"base topic trailing slash", with(valid(), "MQTT_BASE_TOPIC", "cloud2mqtt/"), false, []string{"MQTT_BASE_TOPIC", "starts or ends with /"}},
		{"base topic blank", with(valid(), "MQTT_BASE_TOPIC", "  "), false, []string{"MQTT_BASE_TOPIC is empty"}},
		{"base topic empty level", with(valid(), "MQTT_BASE_TOPIC", "a//b"), false, []string{"MQTT_BASE_TOPIC", "empty level"}},
		{"discovery prefix wildcard", with(valid(), "HA_DISCOVERY_PREFIX", "home#"), false, []string{"HA_DISCOVERY_PREFIX", "wildcard"}},
		{"status topic wildcard", with(valid(), "HA_STATUS_TOPIC", "homeassistant/+"), false, []string{"HA_STATUS_TOPIC", "wildcard"}},
		{"bad HTTP_ADDR", with(valid(), "HTTP_ADDR", "8080"), false, []string{`HTTP_ADDR="8080" is not host:port`}},
		{"HTTP_ADDR bad port", with(valid(), "HTTP_ADDR", "127.0.0.1:http"), false, []string{"HTTP_ADDR", "port"}},
		{"short HTTP_TOKEN", with(valid(), "HTTP_TOKEN", "1"), false, []string{"HTTP_TOKEN is too short: use at least 16 characters (it has 1;", "openssl rand -hex 16"}},
		{"HTTP_TOKEN of 15", with(valid(), "HTTP_TOKEN", "abcdefghijklmno"), false, []string{"HTTP_TOKEN is too short: use at least 16 characters (it has 15;"}},
		{"HTTP_HOSTS with a scheme", with(valid(), "HTTP_HOSTS", "bridge.lan, https://bridge.example.com"), false, []string{`HTTP_HOSTS has "https://bridge.example.com", which is not a host name`, "without scheme, port or path"}},
		{"HTTP_HOSTS with a port", with(valid(), "HTTP_HOSTS", "bridge.lan:8080"), false, []string{`HTTP_HOSTS has "bridge.lan:8080"`}},
		{"HTTP_HOSTS very long", with(valid(), "HTTP_HOSTS", strings.Repeat("a/", 100)), false, []string{"HTTP_HOSTS", "(200 characters)"}},
		{"bad log level", with(valid(), "LOG_LEVEL", "verbose"), false, []string{`LOG_LEVEL="verbose" is not a level: use one of trace, debug, info, warn, error`}},
		{"bad log format", with(valid(), "LOG_FORMAT", "xml"), false, []string{`LOG_FORMAT="xml" is not a format`}},
		{"relative state dir", with(valid(), "STATE_DIR", "state"), false, []string{`STATE_DIR="state" is not an absolute path`, "StateDirectory="}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(tc.environ)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			cfg.Demo = tc.demo
			err = cfg.Validate()
			if err == nil {
				t.Fatalf("Validate accepted %v", cfg)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			// Each problem is one line that names a variable.
			for _, line := range strings.Split(strings.TrimPrefix(err.Error(), "config: "), "\n") {
				if !namesAVariable(line) {
					t.Errorf("problem %q names no variable", line)
				}
			}
		})
	}
}

func namesAVariable(line string) bool {
	for _, v := range Vars() {
		if strings.Contains(line, v.Name) {
			return true
		}
	}
	return false
}

func TestValidateReportsEveryProblemAtOnce(t *testing.T) {
	cfg := mustLoad(t, map[string]string{
		"POLL_INTERVAL": "1s", "LOG_LEVEL": "loud", "MQTT_BASE_TOPIC": "#", "HTTP_ADDR": "x", "LIMIT_CONTROL_BURST": "0",
	})
	err := cfg.Validate()
	if err == nil {
		t.Fatal("Validate accepted a broken config")
	}
	for _, name := range []string{"CLOUD_BASE_URL", "CLOUD_API_KEY", "POLL_INTERVAL", "LOG_LEVEL", "MQTT_BASE_TOPIC", "HTTP_ADDR", "LIMIT_CONTROL_BURST"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("%s missing from %v", name, err)
		}
	}
	if n := len(strings.Split(err.Error(), "\n")); n != 7 {
		t.Errorf("%d problem lines, want 7:\n%v", n, err)
	}
}

func TestDemoRelaxesCloudSettings(t *testing.T) {
	cfg := mustLoad(t, nil)
	if err := cfg.Validate(); err == nil {
		t.Fatal("an empty environment validated without -demo")
	}
	cfg.Demo = true
	if err := cfg.Validate(); err != nil {
		t.Errorf("an empty environment does not validate with -demo: %v", err)
	}
}

func TestEmbeddedBroker(t *testing.T) {
	cfg := mustLoad(t, with(valid(), "MQTT_URL", "embedded", "MQTT_LISTEN", "127.0.0.1:0"))
	if !cfg.Embedded() {
		t.Error("MQTT_URL=embedded is not Embedded()")
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// The Go field names are unique, so parse errors (which carry only the field
// name) map to one variable; and the walker sees the same variables as
// caarlos0/env does.
func TestVarsMatchTheParser(t *testing.T) {
	if got, want := len(fieldVars()), len(Vars()); got != want {
		t.Errorf("%d distinct field names for %d variables: rename a field", got, want)
	}
	params, err := env.GetFieldParams(&Config{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range params {
		names = append(names, p.Key)
	}
	var ours []string
	for _, v := range Vars() {
		ours = append(ours, v.Name)
		if v.Doc == "" || strings.Contains(v.Doc, "\n") {
			t.Errorf("%s: doc tag must be one non-empty line, is %q", v.Name, v.Doc)
		}
		if v.Group == "" {
			t.Errorf("%s has no group", v.Name)
		}
	}
	if !reflect.DeepEqual(names, ours) {
		t.Errorf("Vars() = %v\ncaarlos0/env sees %v", ours, names)
	}
	secrets := 0
	for _, v := range Vars() {
		if v.Secret {
			secrets++
			if v.Name != "CLOUD_API_KEY" && v.Name != "MQTT_PASSWORD" && v.Name != "HTTP_TOKEN" {
				t.Errorf("unexpected secret %s", v.Name)
			}
		}
	}
	if secrets != 3 {
		t.Errorf("%d secrets, want CLOUD_API_KEY, MQTT_PASSWORD and HTTP_TOKEN", secrets)
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		2 * time.Second: "2s", time.Minute: "1m", 90 * time.Second: "1m30s", 6 * time.Hour: "6h",
		time.Hour + time.Minute: "1h1m", 0: "0s", 1500 * time.Millisecond: "1.5s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestErrorsAreJoinedAndPrefixed(t *testing.T) {
	cfg := mustLoad(t, nil)
	err := cfg.Validate()
	if err == nil || !strings.HasPrefix(err.Error(), "config: ") {
		t.Fatalf("got %v", err)
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 2 {
		t.Errorf("want the two problems (base URL, key) as a joined error, got %v", err)
	}
}

// Values a user may reasonably write are accepted.
func TestValidateAccepts(t *testing.T) {
	for _, kv := range [][]string{
		{"MQTT_URL", "tcp://broker.lan"},
		{"MQTT_URL", "mqtt://broker.lan:1883"},
		{"MQTT_URL", "ssl://broker.lan:8883"},
		{"MQTT_URL", "mqtts://broker.lan"},
		{"MQTT_URL", "tls://broker.lan:8883"},
		{"MQTT_URL", "ws://broker.lan:9001/mqtt"},
		{"MQTT_URL", "wss://broker.lan/mqtt"},
		{"MQTT_URL", "tcp://[::1]:1883"},
		{"MQTT_URL", "tcp://broker.lan:1883/"},
		{"MQTT_URL", "tcp://[fe80::1%25eth0]:1883"},
		{"MQTT_URL", "Embedded"},
		{"CLOUD_BASE_URL", "http://127.0.0.1:8080"},
		{"CLOUD_BASE_URL", "https://api.example.com/prefix/"},
		{"CLOUD_EVENTS_URL", "ssl://events.example.com:8883"},
		{"HTTP_ADDR", ":8080"},
		{"HTTP_ADDR", "[::1]:0"},
		{"HTTP_TOKEN", "0123456789abcdef"},
		{"HTTP_HOSTS", "bridge.example.com,*.home.arpa, 192.168.1.5,[fd00::5],homeassistant"},
		{"MQTT_LISTEN", ":1883"},
		{"MQTT_BASE_TOPIC", "home/cloud2mqtt"},
		{"MQTT_CLIENT_ID", "cloud2mqtt-kitchen_1"},
		{"MQTT_CLIENT_ID", strings.Repeat("x", MaxClientIDLength)},
		{"MQTT_QUEUED_COMMAND_MAX_AGE", "0"},
		{"LOG_LEVEL", "DEBUG"},
		{"LOG_FORMAT", "Console"},
		{"POLL_INTERVAL", "2s"},
		{"CLOUD_DAILY_LIMIT", "10000"},
		{"MQTT_USERNAME", "bridge"},
	} {
		cfg := mustLoad(t, with(valid(), kv...))
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s=%s: %v", kv[0], kv[1], err)
		}
	}
}

// TestStateDirectoryFromSystemd: under systemd's StateDirectory= the
// directory needs no variable; STATE_DIR still wins.
func TestStateDirectoryFromSystemd(t *testing.T) {
	for _, tc := range []struct {
		name    string
		environ map[string]string
		want    string
	}{
		{"off", map[string]string{}, ""},
		{"systemd", map[string]string{"STATE_DIRECTORY": "/var/lib/cloud2mqtt"}, "/var/lib/cloud2mqtt"},
		{"systemd, several", map[string]string{"STATE_DIRECTORY": "/var/lib/a:/var/lib/b"}, "/var/lib/a"},
		{"STATE_DIR wins", map[string]string{"STATE_DIRECTORY": "/var/lib/a", "STATE_DIR": "/srv/c2m"}, "/srv/c2m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustLoad(t, tc.environ).State.Dir; got != tc.want {
				t.Errorf("State.Dir = %q, want %q", got, tc.want)
			}
		})
	}
}
