package topic

import (
	"regexp"
	"strings"
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
	if r, err := l.Route("home/bridge/d1/set/brightness"); err != nil || r.ID != "d1" || r.Instance != "brightness" {
		t.Errorf("Route = %+v, %v", r, err)
	}
	if _, err := l.Route("other/d1/set"); err == nil {
		t.Errorf("Route accepted a topic outside the base")
	}
	if got := l.SegmentSet("d1", 3); got != "home/bridge/d1/segment/3/set" {
		t.Errorf("SegmentSet = %q", got)
	}
}

func TestBridgeTopics(t *testing.T) {
	l := New("c2m")
	cases := []struct{ name, got, want string }{
		{"state", l.BridgeState(), "c2m/bridge/state"},
		{"devices", l.BridgeDevices(), "c2m/bridge/devices"},
		{"stats", l.BridgeStats(), "c2m/bridge/stats"},
		{"info", l.BridgeInfo(), "c2m/bridge/info"},
		{"logging", l.BridgeLogging(), "c2m/bridge/logging"},
		{"options", l.BridgeOptions(), "c2m/bridge/request/options"},
		{"device options", l.BridgeDeviceOptions(), "c2m/bridge/request/device/options"},
		{"refresh", l.BridgeRequest(ActionRefresh), "c2m/bridge/request/refresh"},
		{"read all", l.BridgeRequest(ActionReadAll), "c2m/bridge/request/read_all"},
		{"republish", l.BridgeRequest(ActionRepublish), "c2m/bridge/request/republish"},
		{"response of device options", l.BridgeResponse(ActionDeviceOptions), "c2m/bridge/response/device/options"},
		{"request filter", l.BridgeRequestFilter(), "c2m/bridge/request/#"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
	// The bridge finds the action after "request/" whatever its depth.
	if r, err := l.Route(l.BridgeDeviceOptions()); err != nil || r.Kind != KindRequest || r.Action != ActionDeviceOptions {
		t.Errorf("Route(device options) = %+v, %v", r, err)
	}
}

// TestRequestFilterMatchesEveryAction: a subscription to BridgeRequest("+")
// would miss the two-level device/options; BridgeRequestFilter does not.
func TestRequestFilterMatchesEveryAction(t *testing.T) {
	l := New("")
	matches := func(filter, topic string) bool {
		f, tp := strings.Split(filter, "/"), strings.Split(topic, "/")
		for i, p := range f {
			if p == "#" {
				return true
			}
			if i >= len(tp) || (p != "+" && p != tp[i]) {
				return false
			}
		}
		return len(f) == len(tp)
	}
	for _, a := range []string{ActionRefresh, ActionScenes, ActionHealth, ActionDevices, ActionReadAll,
		ActionRepublish, ActionOptions, ActionDeviceOptions} {
		if !matches(l.BridgeRequestFilter(), l.BridgeRequest(a)) {
			t.Errorf("%s does not match %s", l.BridgeRequestFilter(), l.BridgeRequest(a))
		}
	}
	if matches(l.BridgeRequest("+"), l.BridgeDeviceOptions()) {
		t.Errorf("the test's matcher is wrong: + matched two levels")
	}
}
