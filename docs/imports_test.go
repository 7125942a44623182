package docs

import (
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "cloud2mqtt/"

// imports are the import paths of a directory's Go files, tests left out.
func imports(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no Go files (%v)", dir, err)
	}
	out := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range parsed.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			out[p] = true
		}
	}
	return out
}

// ours are the module's packages among imports, by their last element.
func ours(imports map[string]bool) []string {
	var out []string
	for p := range imports {
		if strings.HasPrefix(p, module) {
			out = append(out, path.Base(p))
		}
	}
	slices.Sort(out)
	return out
}

// packageDir is where a package of the map lives.
func packageDir(name string) string {
	if strings.HasPrefix(name, "cmd/") {
		return name
	}
	return "internal/" + name
}

var backticked = regexp.MustCompile("`([^`]+)`")

// TestPackageMap holds docs/architecture.md's package map to the code: each
// package imports of ours exactly what its row names, so that the imports
// that point one way stay that way.
func TestPackageMap(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	var above []string // the packages of the rows so far
	rows := 0
	for line := range strings.SplitSeq(string(b), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cols := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cols) != 3 {
			t.Fatalf("a row of the package map without 3 columns: %s", line)
		}
		rows++
		var names []string
		for _, m := range backticked.FindAllStringSubmatch(cols[0], -1) {
			names = append(names, m[1])
		}
		parts := strings.Split(cols[2], ";")
		for i, name := range names {
			got := ours(imports(t, packageDir(name)))
			var want []string
			switch {
			case strings.HasPrefix(cols[2], "every package above but "):
				but := backticked.FindAllStringSubmatch(cols[2], -1)
				want = slices.DeleteFunc(slices.Clone(above), func(p string) bool {
					return slices.ContainsFunc(but, func(m []string) bool { return m[1] == p })
				})
			case len(parts) == len(names):
				// The words in brackets say why; the names are the imports.
				words := regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(parts[i], "")
				for _, m := range backticked.FindAllStringSubmatch(words, -1) {
					want = append(want, path.Base(m[1]))
				}
			default:
				t.Fatalf("the row of %v names the imports of %d packages: %s", names, len(parts), line)
			}
			slices.Sort(want)
			want = slices.Compact(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s imports of ours %v; docs/architecture.md says %v: change the code or its row", name, got, want)
			}
		}
		for _, name := range names {
			above = append(above, path.Base(name))
		}
	}
	if rows < 20 {
		t.Fatalf("docs/architecture.md's package map has %d rows; the test reads none of it", rows)
	}
}

// TestOneStackEach: the cloud is reached through net/http alone and MQTT
// through paho as its authors meant it: no second HTTP stack in the module,
// no dialer of our own beside paho's.
func TestOneStackEach(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mod), "fasthttp") {
		t.Error("go.mod requires fasthttp: the cloud has one HTTP path, net/http")
	}
	if got := imports(t, "internal/mqtt"); slices.ContainsFunc(slices.Collect(maps.Keys(got)), func(p string) bool {
		return strings.HasPrefix(p, "golang.org/x/net")
	}) {
		t.Error("internal/mqtt imports golang.org/x/net: paho dials, the bridge does not")
	}
}
