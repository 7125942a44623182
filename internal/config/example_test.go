package config

import (
	"bufio"
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite config.example.env from the struct tags")

// examplePath is config.example.env at the repository root.
var examplePath = filepath.Join("..", "..", "config.example.env")

// TestExampleEnv keeps config.example.env in step with Config: every
// variable with its default and its meaning, nothing else. Run with -update
// after changing a tag.
func TestExampleEnv(t *testing.T) {
	want := exampleEnv()
	if *update {
		if err := os.WriteFile(examplePath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/config -run TestExampleEnv -update)", err)
	}

	// Read the file as a user would: "#NAME=default" lines, each after its
	// one-line meaning.
	type entry struct{ def, doc string }
	found := map[string]entry{}
	var order []string
	var prev string
	sc := bufio.NewScanner(bytes.NewReader(got))
	for sc.Scan() {
		line := sc.Text()
		if name, def, ok := strings.Cut(strings.TrimPrefix(line, "#"), "="); ok && isVarName(name) {
			if _, dup := found[name]; dup {
				t.Errorf("%s listed twice", name)
			}
			found[name] = entry{def, strings.TrimPrefix(prev, "# ")}
			order = append(order, name)
		}
		prev = line
	}
	var names []string
	for _, v := range Vars() {
		names = append(names, v.Name)
		e, ok := found[v.Name]
		switch {
		case !ok:
			t.Errorf("config.example.env lacks %s", v.Name)
		case e.def != v.Default:
			t.Errorf("config.example.env: %s=%q, default is %q", v.Name, e.def, v.Default)
		case e.doc != v.Doc:
			t.Errorf("config.example.env: %s is documented as %q, the tag says %q", v.Name, e.doc, v.Doc)
		}
	}
	if !reflect.DeepEqual(order, names) {
		t.Errorf("config.example.env lists %v\nConfig has %v", order, names)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("config.example.env differs from exampleEnv(): run go test ./internal/config -run TestExampleEnv -update and review the diff")
	}
}

func isVarName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return true
}

// Uncommenting every line of the example gives the defaults: the file is a
// valid env file (EnvironmentFile=, env_file:) as shipped.
func TestExampleEnvUncommentedIsTheDefaults(t *testing.T) {
	environ := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(exampleEnv()))
	for sc.Scan() {
		if name, val, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "#"), "="); ok && isVarName(name) {
			environ[name] = val
		}
	}
	if len(environ) != len(Vars()) {
		t.Fatalf("%d variables in the example, %d in Config", len(environ), len(Vars()))
	}
	got, err := Load(environ)
	if err != nil {
		t.Fatal(err)
	}
	want := mustLoad(t, nil)
	if !reflect.DeepEqual(got.Table(), want.Table()) {
		t.Errorf("the example's values\n%v\ndiffer from the defaults\n%v", got, want)
	}
}

// exampleEnv renders config.example.env: every variable, commented out with
// its default, under its group's heading, after its one line of meaning.
func exampleEnv() []byte {
	var b strings.Builder
	b.WriteString(`# cloud2mqtt configuration: every environment variable, with its default.
#
# Generated from internal/config (go test ./internal/config -run TestExampleEnv -update);
# change the struct tags there, not this file.
#
# Uncomment a line to change a setting; an empty value means the default.
# Secrets (CLOUD_API_KEY, MQTT_PASSWORD, HTTP_TOKEN) may instead come from a file
# (*_FILE) or a systemd credential (LoadCredential=cloud_api_key:/etc/cloud2mqtt/api_key,
# LoadCredential=mqtt_password:..., LoadCredential=http_token:...), in that order of precedence after the
# variable itself; setting both a variable and its *_FILE is an error.
# With -demo, CLOUD_BASE_URL and CLOUD_API_KEY are not needed.
# Durations are seconds (60) or a number with a unit (60s, 1m, 6h): 60, 60s and
# 1m are the same, here and in the options set over MQTT.
# A variable that is not listed here but looks like one (POLL_INTERVALL) is a
# warning at start and fails -check, naming the setting meant. Save this file
# with Unix line endings: values ending in \r (Windows) are refused.
`)
	group := "\x00"
	for _, v := range Vars() {
		if v.Group != group {
			group = v.Group
			b.WriteString("\n# === " + group + " ===\n")
		}
		b.WriteString("\n# " + v.Doc + "\n")
		b.WriteString("#" + v.Name + "=" + v.Default + "\n")
	}
	return []byte(b.String())
}
