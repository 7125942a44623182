package testkit

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// DeviceLists returns the recorded device-list answers, list_devices*.json
// in dir, in name order. It returns bytes, not devices, because importing
// capability would make an import cycle for capability's own tests.
func DeviceLists(tb testing.TB, dir string) [][]byte {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "list_devices*.json"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no recorded device lists %s (%v)", filepath.Join(dir, "list_devices*.json"), err)
	}
	out := make([][]byte, len(files))
	for i, f := range files {
		out[i] = ReadFixture(tb, dir, filepath.Base(f))
	}
	return out
}

// Devices decodes the devices of every recorded device list in dir with
// encoding/json into D (capability.Device, which testkit cannot name).
func Devices[D any](tb testing.TB, dir string) []D {
	tb.Helper()
	var out []D
	for _, b := range DeviceLists(tb, dir) {
		var list struct{ Data []D }
		if err := json.Unmarshal(b, &list); err != nil {
			tb.Fatalf("decode a recorded device list: %v", err)
		}
		out = append(out, list.Data...)
	}
	return out
}
