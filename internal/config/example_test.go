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
	want := ExampleEnv()
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
		t.Errorf("config.example.env differs from ExampleEnv(): run go test ./internal/config -run TestExampleEnv -update and review the diff")
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
	sc := bufio.NewScanner(bytes.NewReader(ExampleEnv()))
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
