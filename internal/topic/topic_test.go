package topic

import (
	"regexp"
	"testing"
)

func TestDeviceIDIsStableAndSafe(t *testing.T) {
	safe := regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	cases := []struct{ sku, device, want string }{
		{"H6072", "AA:BB:CC:DD:EE:FF:00:11", "h6072_aabbccddeeff0011"},
		{"H7141", "aa:bb:cc", "h7141_aabbcc"},
		{"H 70/B1", "x", "h70b1_x"},
		{"", "AA:BB", "aabb"},
		{"H1", "", "h1"},
		{"", "", "device"},
		{"H60+#", "Ü:1", "h60_1"},
	}
	for _, c := range cases {
		got := DeviceID(c.sku, c.device)
		if got != c.want {
			t.Errorf("DeviceID(%q, %q) = %q, want %q", c.sku, c.device, got, c.want)
		}
		if !safe.MatchString(got) {
			t.Errorf("DeviceID(%q, %q) = %q has characters outside [A-Za-z0-9_-]", c.sku, c.device, got)
		}
	}
}

func TestLayout(t *testing.T) {
	l := New(" /home/bridge/ ")
	if got := l.SetInstance("d1", "brightness"); got != "home/bridge/d1/set/brightness" {
		t.Errorf("SetInstance = %q", got)
	}
	if New("").Base != DefaultBase {
		t.Errorf("empty base is not the default")
	}
	id, rest, ok := l.Parse("home/bridge/d1/set/brightness")
	if !ok || id != "d1" || rest != "set/brightness" {
		t.Errorf("Parse = %q %q %v", id, rest, ok)
	}
	if _, _, ok := l.Parse("other/d1/set"); ok {
		t.Errorf("Parse accepted a topic outside the base")
	}
	if got := l.SegmentSet("d1", 3); got != "home/bridge/d1/segment/3/set" {
		t.Errorf("SegmentSet = %q", got)
	}
}
