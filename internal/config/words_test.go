package config

import (
	"strings"
	"testing"
)

func rowOf(c Config, name string) string {
	for _, r := range c.Table() {
		if r[0] == name {
			return r[1]
		}
	}
	return "(missing)"
}

// TestTableShowsWhatIsUsed: the startup log and -check do not show an
// address the run does not use: in -demo the broker is the embedded one and
// the cloud the simulator, whatever MQTT_URL and CLOUD_BASE_URL say.
func TestTableShowsWhatIsUsed(t *testing.T) {
	demo := mustLoad(t, map[string]string{"MQTT_URL": "tcp://broker.lan:1883", "CLOUD_BASE_URL": "https://api.example.com", "CLOUD_API_KEY": "k-123"})
	demo.Demo = true
	for name, want := range map[string]string{
		"MQTT_URL":       "embedded (-demo: the embedded broker on MQTT_LISTEN)",
		"CLOUD_BASE_URL": "the simulated cloud (-demo)",
		"CLOUD_API_KEY":  "the simulator's (-demo)",
		"MQTT_LISTEN":    "127.0.0.1:1883",
	} {
		if got := rowOf(demo, name); got != want {
			t.Errorf("-demo: %s shown as %q, want %q", name, got, want)
		}
	}
	if s := demo.String(); strings.Contains(s, "broker.lan") || strings.Contains(s, "api.example.com") {
		t.Errorf("-demo shows addresses it does not use: %s", s)
	}

	external := mustLoad(t, valid())
	if got := rowOf(external, "MQTT_URL"); got != "tcp://127.0.0.1:1883" {
		t.Errorf("MQTT_URL shown as %q", got)
	}
	if got := rowOf(external, "MQTT_LISTEN"); got != "127.0.0.1:1883 (not used: only for MQTT_URL=embedded)" {
		t.Errorf("MQTT_LISTEN shown as %q", got)
	}
	embedded := mustLoad(t, with(valid(), "MQTT_URL", "embedded"))
	if got := rowOf(embedded, "MQTT_URL") + " " + rowOf(embedded, "MQTT_LISTEN"); got != "embedded 127.0.0.1:1883" {
		t.Errorf("MQTT_URL=embedded shown as %q", got)
	}
}
