package demo

import (
	"bytes"
	"strings"
	"testing"

	"cloud2mqtt/internal/cloudsim"
)

// TestDemoPrintsItsOwnIDs: the demo's instructions name its devices' real
// ids, and every command it prints works as printed (no placeholders).
func TestDemoPrintsItsOwnIDs(t *testing.T) {
	sim := cloudsim.New(cloudsim.Options{})
	var out bytes.Buffer
	printDemo(&out, "cloud2mqtt", "tcp://127.0.0.1:18831", "http://127.0.0.1:9", sim.Devices(), nil)
	s := out.String()
	for _, want := range []string{
		"h619c_aabbccddeeff1001  H619C  Living Room Strip",
		"h5106_aabbccddeeff1016  H5106  Air Quality Monitor",
		"mosquitto_pub -h 127.0.0.1 -p 18831 -t 'cloud2mqtt/h619c_aabbccddeeff1001/set' -m '{\"powerSwitch\":\"on\"",
		"-t 'cloud2mqtt/h619c_aabbccddeeff1001/set/lightScene' -m 'Sunrise'",
		"-t 'cloud2mqtt/h7133_aabbccddeeff1009/set/targetTemperature' -m 22C",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the demo's instructions lack %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "<id>") || strings.Contains(s, "<") {
		t.Errorf("a placeholder in the demo's instructions:\n%s", s)
	}
}
