package config

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/testkit"
)

// configurationPath is the generated reference page of every setting.
var configurationPath = filepath.Join("..", "..", "docs", "configuration.md")

// examples is one value of each setting, shown in the page's example
// blocks. Each is a value the bridge takes (TestConfigurationExamples),
// chosen to show the form a value has, not a recommendation.
var examples = map[string]string{
	"CLOUD_BASE_URL":                  "https://api.example.com",
	"CLOUD_API_KEY":                   "0a1b2c3d-4e5f-6789-abcd-ef0123456789",
	"CLOUD_API_KEY_FILE":              "/etc/cloud2mqtt/api_key",
	"CLOUD_API_KEY_HEADER":            "Service-API-Key",
	"CLOUD_TIMEOUT":                   "15s",
	"CLOUD_EVENTS_URL":                "mqtts://events.example.com:8883",
	"CLOUD_DAILY_LIMIT":               "10000",
	"POLL_INTERVAL":                   "90s",
	"DEVICE_LIST_INTERVAL":            "30m",
	"SCENE_INTERVAL":                  "12h",
	"POLL_QUIET_FACTOR":               "1",
	"LAN_ENABLED":                     "true",
	"LAN_LISTEN":                      "0.0.0.0:4002",
	"LAN_SCAN_TARGETS":                "239.255.255.250,192.168.20.31",
	"LAN_SCAN_INTERVAL":               "10m",
	"LAN_POLL_INTERVAL":               "5s",
	"LIMIT_DEVICES_PER_MINUTE":        "10",
	"LIMIT_CONTROL_PER_SECOND":        "6",
	"LIMIT_CONTROL_BURST":             "40",
	"LIMIT_DEVICE_CONTROL_PER_SECOND": "1",
	"LIMIT_DEVICE_CONTROL_BURST":      "3",
	"LIMIT_STATE_PER_MINUTE":          "15",
	"LIMIT_SCENES_PER_MINUTE":         "15",
	"MQTT_URL":                        "mqtts://broker.lan:8883",
	"MQTT_LISTEN":                     "0.0.0.0:1883",
	"MQTT_USERNAME":                   "cloud2mqtt",
	"MQTT_PASSWORD":                   "s3cret-broker-password",
	"MQTT_PASSWORD_FILE":              "/etc/cloud2mqtt/mqtt_password",
	"MQTT_CA_FILE":                    "/etc/cloud2mqtt/broker-ca.pem",
	"MQTT_CERT_FILE":                  "/etc/cloud2mqtt/client.pem",
	"MQTT_KEY_FILE":                   "/etc/cloud2mqtt/client.key",
	"MQTT_CLIENT_ID":                  "cloud2mqtt-livingroom",
	"MQTT_BASE_TOPIC":                 "home/cloud2mqtt",
	"MQTT_QUEUED_COMMAND_MAX_AGE":     "5m",
	"HA_DISCOVERY":                    "false",
	"HA_DISCOVERY_PREFIX":             "homeassistant",
	"HA_STATUS_TOPIC":                 "homeassistant/status",
	"HTTP_ADDR":                       "127.0.0.1:8080",
	"HTTP_TOKEN":                      "3f9c2a7e51d04b8e9a6c1f2d7e8b0a4c",
	"HTTP_TOKEN_FILE":                 "/etc/cloud2mqtt/http_token",
	"HTTP_HOSTS":                      "bridge.example.com,*.example.org",
	"LOG_LEVEL":                       "debug",
	"LOG_FORMAT":                      "json",
	"STATE_DIR":                       "/var/lib/cloud2mqtt",
}

// TestConfigurationPage keeps docs/configuration.md in step with Config:
// the page is what configurationPage renders from the struct tags. Run
// with -update after changing a tag, and review the diff.
func TestConfigurationPage(t *testing.T) {
	want := configurationPage()
	if *update {
		if err := os.WriteFile(configurationPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(configurationPath)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/config -run TestConfigurationPage -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/configuration.md differs from the struct tags: run go test ./internal/config -run TestConfigurationPage -update and review the diff")
	}
	for _, v := range Vars() {
		if !bytes.Contains(got, []byte("| `"+v.Name+"` |")) {
			t.Errorf("docs/configuration.md has no row for %s", v.Name)
		}
	}
}

// Every example on the page is a value the bridge takes: all of them
// together load, and Validate finds nothing wrong with them. A secret's
// *_FILE is shown commented out (it is instead of the secret), and the
// files the examples name are not read: they are on the reader's machine.
func TestConfigurationExamples(t *testing.T) {
	environ := map[string]string{}
	for _, v := range Vars() {
		ex, ok := examples[v.Name]
		switch {
		case !ok:
			t.Errorf("no example for %s in docs_test.go's examples", v.Name)
		case secretOfFile(v.Name) == "":
			environ[v.Name] = ex
		}
	}
	for name := range examples {
		if _, ok := lookup(Config{}, name); !ok {
			t.Errorf("examples has %s, which is no setting", name)
		}
	}
	cfg, err := Load(environ)
	if err != nil {
		t.Fatalf("the examples do not load: %v", err)
	}
	for _, v := range Vars() {
		if got := cfg.Value(v.Name); !v.Secret && environ[v.Name] != "" && got == v.Default && environ[v.Name] != v.Default {
			t.Errorf("%s=%s reads as the default %q", v.Name, environ[v.Name], got)
		}
	}
	if err := cfg.Validate(); err != nil {
		for _, line := range strings.Split(strings.TrimPrefix(err.Error(), "config: "), "\n") {
			name, _, _ := strings.Cut(line, " ")
			name, _, _ = strings.Cut(name, "=")
			if !strings.HasSuffix(name, "_FILE") {
				t.Errorf("an example is refused: %s", line)
			}
		}
	}
}

// secretOfFile is the secret a *_FILE variable holds the file of, "" when
// name is none.
func secretOfFile(name string) string {
	s, ok := strings.CutSuffix(name, "_FILE")
	if !ok {
		return ""
	}
	if f, ok := lookup(Config{}, s); ok && f.v.Secret {
		return s
	}
	return ""
}

// configurationPage renders docs/configuration.md: how values are read,
// then one table per group with an example block.
func configurationPage() []byte {
	var b strings.Builder
	b.WriteString(`# Configuration

<!-- Generated from internal/config's struct tags by
     go test ./internal/config -run TestConfigurationPage -update
     Change the tags, not this page. -->

cloud2mqtt reads every setting from an environment variable: the systemd unit's
` + "`/etc/cloud2mqtt/cloud2mqtt.env`" + `, a container's ` + "`--env-file`" + ` or
` + "`environment:`" + `, or your shell. [config.example.env](../config.example.env)
lists them all with their defaults. In the Home Assistant app each setting is
an option named like the variable in lower case (` + "`poll_interval`" + ` is
` + "`POLL_INTERVAL`" + `); a few settings may also be changed while the bridge
runs, over MQTT (` + "`bridge/request/options`" + `, [topics.md](topics.md)).

Only two settings are required: ` + "`" + strings.Join(Required, "` and `") + "`" + `
(not with ` + "`-demo`" + `). ` + "`cloud2mqtt -check`" + ` reads the
configuration, says what is wrong with it and tries the cloud and the broker.

## How values are read

- **Empty** is the same as not set: the setting keeps its default.
- **Quotes**: a value wholly wrapped in quotes (` + "`CLOUD_API_KEY=\"k…\"`" + `, which
  ` + "`docker run --env-file`" + ` keeps) is used without them, with a warning.
- **Secrets** (` + "`CLOUD_API_KEY`, `MQTT_PASSWORD`, `HTTP_TOKEN`" + `) may instead come
  from a file named by the same variable with ` + "`_FILE`" + ` (an absolute path;
  trailing newlines are ignored), or from a systemd credential
  (` + "`LoadCredential=" + CredentialAPIKey + ":/etc/cloud2mqtt/api_key`" + `; the names are
  ` + "`" + CredentialAPIKey + "`, `" + CredentialMQTTPassword + "`, `" + CredentialHTTPToken + "`" + `). Setting both a
  variable and its ` + "`_FILE`" + ` is an error. Secrets are never logged.
- **Switches** take ` + "`true`/`false`, `yes`/`no`, `on`/`off` or `1`/`0`" + `, in any case.
- **Durations** are seconds (` + "`60`, `1.5`" + `) or a number with a unit: ` + "`ms`, `s`,\n  `m`, `h`" + `, combined as in ` + "`1h30m`" + `. ` + "`60`, `60s` and `1m`" + ` are the same,
  here, in the app's options and in options sent over MQTT. A unit named twice
  (` + "`60s60s`" + `, a value pasted twice) is refused.
- **Numbers** are whole numbers. A rate's unit is in its name (` + "`_PER_SECOND`" + `,
  ` + "`_PER_MINUTE`" + `); a burst is a number of requests.
- **Words** (a log level, a format) are read in any case.
- **Temperatures** have no setting: a command's temperature is in the unit of
  the device's range unless it names one (` + "`22C`, `72 F`" + `), which is converted
  ([topics.md](topics.md#cloud2mqttidset)).
- **Mistakes are named at start**: a variable that looks like a setting but is
  none (` + "`POLL_INTERVALL`" + `) is a warning that names the setting meant, and a
  file saved with Windows line endings is refused with the fix. An error shows
  at most 64 characters of a value, and never a secret.

A column *Option* names the setting's option in the Home Assistant app
(*app*) and, where it may be changed at run time, in
` + "`bridge/request/options`" + ` (*MQTT*).

`)
	groups := groupsOf(Vars())
	for _, g := range groups {
		title, _ := splitGroup(g.name)
		b.WriteString("- [" + title + "](#" + testkit.Anchor(title) + ")\n")
	}
	for _, g := range groups {
		title, note := splitGroup(g.name)
		b.WriteString("\n## " + title + "\n\n")
		if note != "" {
			b.WriteString(upperFirst(note) + ".\n\n")
		}
		b.WriteString("| Variable | Default | Values | Option | Meaning |\n|---|---|---|---|---|\n")
		for _, v := range g.vars {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", v.Name, defaultCell(v), valuesCell(v), optionCell(v), cell(v.Doc))
		}
		b.WriteString("\n```sh\n")
		for _, v := range g.vars {
			if s := secretOfFile(v.Name); s != "" {
				b.WriteString("# or, instead of " + s + ", the file that holds it:\n#")
			}
			b.WriteString(v.Name + "=" + examples[v.Name] + "\n")
		}
		b.WriteString("```\n")
	}
	b.WriteString(`
## Adding a setting

A setting is one field of ` + "`Config`" + ` in internal/config/config.go, with its
tags: the variable, its default, its meaning, its rule and its option names.
Then ` + "`go test ./internal/config ./internal/addon -update`" + ` rewrites
config.example.env, this page and the Home Assistant app's options and
documentation; give an app option its name and description in
deploy/homeassistant/cloud2mqtt/translations/en.yaml.
`)
	return []byte(b.String())
}

type varGroup struct {
	name string
	vars []Var
}

// groupsOf splits vars by their group, in order.
func groupsOf(vars []Var) []varGroup {
	var out []varGroup
	for _, v := range vars {
		if len(out) == 0 || out[len(out)-1].name != v.Group {
			out = append(out, varGroup{name: v.Group})
		}
		out[len(out)-1].vars = append(out[len(out)-1].vars, v)
	}
	return out
}

// splitGroup is a group's heading and the note in parentheses after it.
func splitGroup(g string) (title, note string) {
	title, note, ok := strings.Cut(g, " (")
	if !ok {
		return g, ""
	}
	return title, strings.TrimSuffix(note, ")")
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func defaultCell(v Var) string {
	if v.Default == "" {
		return "—"
	}
	return "`" + v.Default + "`"
}

// valuesCell says what a setting's value may be, from its kind and rule.
func valuesCell(v Var) string {
	f, _ := lookup(Config{}, v.Name)
	r := f.rule
	switch v.Kind {
	case KindSecret:
		return "secret text"
	case KindBool:
		return "switch"
	case KindDuration:
		switch d, ok := r.min.(time.Duration); {
		case ok && d == time.Nanosecond:
			return "duration > 0"
		case ok && d == 0:
			return "duration ≥ 0"
		case ok:
			return "duration ≥ `" + FormatDuration(d) + "`"
		}
		return "duration"
	case KindNumber:
		if n, ok := r.min.(int); ok {
			return fmt.Sprintf("whole number ≥ %d", n)
		}
		return "whole number"
	}
	switch {
	case f.redactURL:
		return "URL"
	case strings.HasSuffix(v.Name, "_FILE"):
		return "absolute path"
	case r.choices != nil:
		words := make([]string, len(r.choices))
		for i, c := range r.choices {
			words[i] = "`" + c + "`"
		}
		s := strings.Join(words, ", ")
		for _, word := range slices.Sorted(maps.Keys(r.aliases)) {
			s += fmt.Sprintf(" (`%s` = `%s`)", word, r.aliases[word])
		}
		return s
	}
	return "text"
}

func optionCell(v Var) string {
	var parts []string
	if v.App != "" {
		parts = append(parts, "app `"+strings.ToLower(v.Name)+"`")
	}
	if v.Option != "" {
		parts = append(parts, "MQTT `"+v.Option+"`")
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, "<br>")
}

// cell is text safe in a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
