package discovery

import (
	"encoding/json"
	"strings"
	"testing"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/topic"
)

// TestConnectionSensor: with LAN control on, each light the LAN can reach
// gets a "Connection" sensor; without it nothing changes.
func TestConnectionSensor(t *testing.T) {
	cfg := testConfig()
	cfg.Local = true
	lights, others := 0, 0
	for _, src := range sources(t) {
		for _, d := range src.devices {
			id := topic.DeviceID(d.SKU, d.Device)
			configs := Configs(cfg, d)
			key := cfg.ConfigTopic("sensor", id, "connection")
			p, ok := configs[key]
			if ok != capability.LocalEligible(d) {
				t.Errorf("%s: connection sensor %v, LAN capable %v", id, ok, capability.LocalEligible(d))
			}
			off := Configs(testConfig(), d)
			if _, there := off[key]; there {
				t.Errorf("%s: connection sensor without LAN_ENABLED", id)
			}
			if len(configs) != len(off)+map[bool]int{true: 1, false: 0}[ok] {
				t.Errorf("%s: LAN control changed other entities: %d configs, %d without", id, len(configs), len(off))
			}
			if !ok {
				others++
				continue
			}
			lights++
			var m map[string]any
			if err := json.Unmarshal(p, &m); err != nil {
				t.Fatal(err)
			}
			if m["entity_category"] != "diagnostic" || m["state_topic"] != cfg.Layout.State(id) ||
				!strings.Contains(m["value_template"].(string), `"connection"`) {
				t.Errorf("%s: connection sensor %s", id, p)
			}
			if src.name == "demo" && strings.HasSuffix(id, "1003") {
				checkGolden(t, "local_"+id, pretty(t, map[string][]byte{key: p}))
			}
		}
	}
	if lights == 0 || others == 0 {
		t.Fatalf("the sources have %d lights and %d other devices: the test needs both", lights, others)
	}
}
