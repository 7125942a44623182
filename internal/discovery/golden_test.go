package discovery

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/topic"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const fixtures = "../../testdata"

// testConfig is the configuration every golden file is made with.
func testConfig() Config {
	return Config{Layout: topic.New("cloud2mqtt"), Version: "1.0.0-test",
		SupportURL: "https://example.invalid/cloud2mqtt"}
}

// source is a device list and where its golden files go.
type source struct {
	name    string
	devices []capability.Device
}

func loadList(t *testing.T, path string) []capability.Device {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var l cloud.DeviceList
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return l.Data
}

// mergeScenes appends scene options to a device's scene capability, as the
// bridge does with the scene endpoints' answers.
func mergeScenes(d *capability.Device, instance string, opts []capability.Option) {
	for i := range d.Capabilities {
		c := &d.Capabilities[i]
		if c.Instance == instance && c.Parameters != nil {
			p := *c.Parameters
			p.Options = append(slices.Clone(p.Options), opts...)
			c.Parameters = &p
		}
	}
}

// sources returns every device list the golden files cover: the shared
// fixtures (the recorded dynamic scenes merged into the H6072 lamps, the
// model they were recorded from) and the demo catalogue with its scenes.
func sources(t *testing.T) []source {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(fixtures, "list_devices*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures under %s: %v", fixtures, err)
	}
	var scenes cloud.Scenes
	b, err := os.ReadFile(filepath.Join(fixtures, "scenes.json"))
	if err != nil {
		t.Fatal(err)
	}
	var env struct{ Payload cloud.Scenes }
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	scenes = env.Payload
	var out []source
	for _, p := range paths {
		devs := loadList(t, p)
		for i := range devs {
			if devs[i].SKU == scenes.SKU {
				mergeScenes(&devs[i], capability.InstanceLightScene, scenes.Options())
			}
		}
		out = append(out, source{name: strings.TrimSuffix(filepath.Base(p), ".json"), devices: devs})
	}

	demo := "../cloudsim/demo"
	if _, err := os.Stat(filepath.Join(demo, "devices.json")); err == nil {
		devs := loadList(t, filepath.Join(demo, "devices.json"))
		b, err := os.ReadFile(filepath.Join(demo, "scenes.json"))
		if err != nil {
			t.Fatal(err)
		}
		var ds map[string]map[string][]capability.Option
		if err := json.Unmarshal(b, &ds); err != nil {
			t.Fatalf("demo scenes: %v", err)
		}
		for i := range devs {
			for inst, opts := range ds[devs[i].Device] {
				mergeScenes(&devs[i], inst, opts)
			}
		}
		out = append(out, source{name: "demo", devices: devs})
	}
	return out
}

// pretty renders a config map as one reviewable JSON document: topic →
// payload object.
func pretty(t *testing.T, configs map[string][]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, k := range sortedKeys(configs) {
		var v any // an empty payload (a removal) is shown as null
		if len(configs[k]) > 0 {
			if err := json.Unmarshal(configs[k], &v); err != nil {
				t.Fatalf("payload of %s is not JSON: %v\n%s", k, err, configs[k])
			}
		}
		pv, err := json.MarshalIndent(v, "  ", "  ")
		if err != nil {
			t.Fatal(err)
		}
		kj, _ := json.Marshal(k)
		b.WriteString("  ")
		b.Write(kj)
		b.WriteString(": ")
		b.Write(pv)
		if i < len(configs)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	return b.Bytes()
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/discovery -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; review the change and run with -update if it is right.\ngot:\n%s", path, got)
	}
}

func TestGolden(t *testing.T) {
	cfg := testConfig()
	for _, src := range sources(t) {
		for _, d := range src.devices {
			name := src.name + "_" + topic.DeviceID(d.SKU, d.Device)
			t.Run(name, func(t *testing.T) {
				checkGolden(t, name, pretty(t, Configs(cfg, d)))
			})
		}
	}
	t.Run("bridge", func(t *testing.T) {
		checkGolden(t, "bridge", pretty(t, BridgeConfigs(cfg)))
	})
	t.Run("bridge_daily_limit", func(t *testing.T) {
		cfg := cfg
		cfg.DailyLimit = 10000
		checkGolden(t, "bridge_daily_limit", pretty(t, BridgeConfigs(cfg)))
	})
}

// sortedKeys returns the keys of m in order, for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
