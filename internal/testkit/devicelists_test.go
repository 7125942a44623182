package testkit_test

import (
	"bytes"
	"testing"

	"cloud2mqtt/internal/testkit"
)

// TestDeviceLists: every recorded list is found, as the cloud sent it, and
// its devices decode.
func TestDeviceLists(t *testing.T) {
	lists := testkit.DeviceLists(t, "../../testdata")
	if len(lists) < 3 {
		t.Fatalf("%d recorded device lists, want at least 3", len(lists))
	}
	for i, b := range lists {
		if !bytes.Contains(b, []byte(`"data"`)) {
			t.Errorf("list %d has no data member: %.80s", i, b)
		}
	}
	type device struct{ SKU, Device string }
	devs := testkit.Devices[device](t, "../../testdata")
	if len(devs) < len(lists) {
		t.Fatalf("%d devices in %d lists", len(devs), len(lists))
	}
	for _, d := range devs {
		if d.SKU == "" || d.Device == "" {
			t.Errorf("a device without model or id: %+v", d)
		}
	}
}
