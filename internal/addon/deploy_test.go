package addon

// Tests of the app's files in deploy/homeassistant that the Supervisor reads,
// against this package and the configuration.

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"cloud2mqtt/internal/config"
)

var update = flag.Bool("update", false, "rewrite deploy/homeassistant/cloud2mqtt/CHANGELOG.md from CHANGELOG.md, and config.yaml's options and schema from internal/config")

var (
	repoRoot = filepath.Join("..", "..")
	appDir   = filepath.Join(repoRoot, "deploy", "homeassistant", "cloud2mqtt")
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// topLevel is a top-level "key: value" of the app's flat YAML.
func topLevel(b []byte, key string) string {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + `: *"?([^"\n]*)"?$`).FindSubmatch(b)
	if m == nil {
		return ""
	}
	return strings.TrimSpace(string(m[1]))
}

// The ingress port and the watchdog are where the daemon serves them.
func TestConfigIngressAndWatchdog(t *testing.T) {
	cfg := readFile(t, filepath.Join(appDir, "config.yaml"))
	if got := topLevel(cfg, "ingress_port"); got != strconv.Itoa(IngressPort) {
		t.Errorf("config.yaml ingress_port %q, IngressPort %d", got, IngressPort)
	}
	for key, want := range map[string]string{"ingress": "true", "host_network": "true",
		"watchdog": "http://[HOST]:[PORT:" + strconv.Itoa(IngressPort) + "]/healthz"} {
		if got := topLevel(cfg, key); got != want {
			t.Errorf("config.yaml %s: %q, want %q", key, got, want)
		}
	}
	if topLevel(cfg, "panel_icon") == "" || topLevel(cfg, "panel_title") == "" {
		t.Error("config.yaml has no panel_icon or panel_title")
	}
}

// The app's options and schema in config.yaml are generated from
// config.Vars; go test -update rewrites them.
func TestAppOptions(t *testing.T) {
	path := filepath.Join(appDir, "config.yaml")
	head, _, ok := bytes.Cut(readFile(t, path), []byte("\noptions:\n"))
	if !ok {
		t.Fatal("config.yaml has no options")
	}
	want := append(append(head, '\n'), appOptions()...)
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := readFile(t, path); !bytes.Equal(got, want) {
		t.Errorf("config.yaml's options and schema differ from config.Vars(): run go test ./internal/addon -run TestAppOptions -update and review the diff")
	}
}

// appOptions renders config.yaml's options (the settings the app's form
// shows, with their defaults) and schema (every option the app has).
func appOptions() []byte {
	var options, schema strings.Builder
	for _, v := range config.Vars() {
		if v.App == "" {
			continue
		}
		name := strings.ToLower(v.Name)
		schema.WriteString("  " + name + ": " + v.App + "\n")
		if !strings.HasSuffix(v.App, "?") {
			def := v.Default
			if def == "" {
				def = "null"
			}
			options.WriteString("  " + name + ": " + def + "\n")
		}
	}
	return []byte("options:\n" + options.String() + "schema:\n" + schema.String())
}

// settingsLeftOut are the settings the app has no option for (app:"-"), and why.
var settingsLeftOut = map[string]string{
	"CLOUD_API_KEY_FILE": "the secret itself is an option",
	"MQTT_PASSWORD_FILE": "the secret itself is an option",
	"HTTP_TOKEN_FILE":    "the secret itself is an option",
	"MQTT_LISTEN":        "the embedded broker is for the demo; the app has the Mosquitto app",
	"LOG_FORMAT":         "the app always logs plain text for the Log tab",
}

// Every setting a user may need is an option: a new setting must be given
// an option (schema, translation, DOCS.md) or a reason to be left out.
func TestEverySettingIsAnOption(t *testing.T) {
	cfg := readFile(t, filepath.Join(appDir, "config.yaml"))
	_, schema, ok := bytes.Cut(cfg, []byte("\nschema:\n"))
	if !ok {
		t.Fatal("config.yaml has no schema")
	}
	options := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z0-9_]+):`).FindAllSubmatch(schema, -1) {
		options[strings.ToUpper(string(m[1]))] = true
	}
	var missing []string
	for _, v := range config.Vars() {
		if !options[v.Name] && settingsLeftOut[v.Name] == "" {
			missing = append(missing, strings.ToLower(v.Name))
		}
		if options[v.Name] && settingsLeftOut[v.Name] != "" {
			t.Errorf("%s is an option and also left out (%s)", v.Name, settingsLeftOut[v.Name])
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("settings with no option in config.yaml: %s; give each an option (schema, translations/en.yaml, DOCS.md) or a reason in settingsLeftOut", strings.Join(missing, ", "))
	}
}

// The profile is one the Supervisor loads: exactly one "profile NAME" line
// (it renames NAME to the app's slug), for the binary the image runs.
func TestAppArmorProfile(t *testing.T) {
	p := readFile(t, filepath.Join(appDir, "apparmor.txt"))
	names := regexp.MustCompile(`(?m)^profile ([^ ]+).*$`).FindAllSubmatch(p, -1)
	if len(names) != 1 || string(names[0][1]) != topLevel(readFile(t, filepath.Join(appDir, "config.yaml")), "slug") {
		t.Errorf("apparmor.txt: profile lines %q, want exactly one named after the slug", names)
	}
	oci := readFile(t, filepath.Join(repoRoot, "tools", "release", "oci.go"))
	if !bytes.Contains(oci, []byte(`imageBin   = "usr/local/bin/cloud2mqtt"`)) || !bytes.Contains(p, []byte("\n  /usr/local/bin/cloud2mqtt rm,\n")) {
		t.Error("apparmor.txt does not allow the binary where tools/release puts it")
	}
	for _, rule := range []string{"/data/** rw,", "network inet stream,", "network inet dgram,", "#include <abstractions/base>"} {
		if !bytes.Contains(p, []byte(rule)) {
			t.Errorf("apparmor.txt lacks %q", rule)
		}
	}
}

// releasedEntry is the first released section of a changelog ("## [X.Y.Z]
// - DATE" up to the next "## "), and its version.
func releasedEntry(b []byte) (string, string) {
	loc := regexp.MustCompile(`(?m)^## \[([0-9][^\]]*)\] - \d{4}-\d{2}-\d{2}\n`).FindSubmatchIndex(b)
	if loc == nil {
		return "", ""
	}
	rest := b[loc[0]:]
	if next := regexp.MustCompile(`(?m)^## `).FindIndex(rest[3:]); next != nil {
		rest = rest[:next[0]+3]
	}
	return string(b[loc[2]:loc[3]]), strings.TrimRight(string(rest), "\n") + "\n"
}

// The app's CHANGELOG.md (shown by the Supervisor before an update) is the
// entry of the release config.yaml names. go test -update rewrites it.
func TestAppChangelog(t *testing.T) {
	version, entry := releasedEntry(readFile(t, filepath.Join(repoRoot, "CHANGELOG.md")))
	if entry == "" {
		t.Fatal("CHANGELOG.md has no released entry")
	}
	if got := topLevel(readFile(t, filepath.Join(appDir, "config.yaml")), "version"); got != version {
		t.Errorf("config.yaml version %q, CHANGELOG.md's latest release %q", got, version)
	}
	want := "# Changelog\n\n" + entry
	path := filepath.Join(appDir, "CHANGELOG.md")
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := string(readFile(t, path)); got != want {
		t.Errorf("%s is not CHANGELOG.md's entry for %s (go test ./internal/addon -run TestAppChangelog -update)", path, version)
	}
}

// The repository users add is the project's: its repository.yaml is the
// one beside the app (which can also be published on its own).
func TestRepositoryFiles(t *testing.T) {
	root := readFile(t, filepath.Join(repoRoot, "repository.yaml"))
	if !bytes.Equal(root, readFile(t, filepath.Join(repoRoot, "deploy", "homeassistant", "repository.yaml"))) {
		t.Error("repository.yaml and deploy/homeassistant/repository.yaml differ")
	}
	if topLevel(root, "name") == "" || topLevel(root, "url") == "" {
		t.Errorf("repository.yaml has no name or url:\n%s", root)
	}
}
