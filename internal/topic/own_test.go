package topic

import "testing"

// TestReservedHoldsEveryTopicTheBridgePublishes: the reserved filter covers
// everything the bridge publishes, and Watched is within it.
func TestReservedHoldsEveryTopicTheBridgePublishes(t *testing.T) {
	l := New("c2m")
	own := []string{l.State("d"), l.Availability("d"), l.Error("d"), l.Event("d"), l.Light("d"),
		l.BridgeState(), l.BridgeDevices(), l.BridgeStats(), l.BridgeInfo(), l.BridgeLogging(),
		l.BridgeResponse(ActionOptions), l.BridgeResponseUnknown(), l.BridgeError()}
	open := func(tp string) bool {
		for _, f := range l.Inbound() {
			if filterMatches(f, tp) {
				return true
			}
		}
		return false
	}
	for _, tp := range own {
		if !filterMatches(l.Reserved(), tp) || open(tp) {
			t.Errorf("%s: reserved %v, open to commands %v; want reserved and not open", tp, filterMatches(l.Reserved(), tp), open(tp))
		}
	}
	for _, f := range l.Inbound() {
		if !filterMatches(l.Reserved(), f) {
			t.Errorf("the command filter %s is outside the reserved %s", f, l.Reserved())
		}
	}
	for _, tp := range []string{"c2mx/d/state", "homeassistant/status", "other/c2m/d/state"} {
		if filterMatches(l.Reserved(), tp) {
			t.Errorf("%s is reserved", tp)
		}
	}
	for _, f := range l.Watched() {
		if !filterMatches(l.Reserved(), f) || open(f) {
			t.Errorf("the watched %s is not one of the bridge's own topics", f)
		}
	}
	if !filterMatches(l.Watched()[1], l.Availability("h6072_aa")) || !filterMatches(l.Watched()[0], l.BridgeState()) {
		t.Errorf("Watched %v misses the availability or the bridge's state", l.Watched())
	}
}

func TestAvailabilityID(t *testing.T) {
	l := New("c2m")
	for tp, want := range map[string]string{l.Availability("h6072_aa"): "h6072_aa", "c2m/bridge/availability": "bridge"} {
		if id, ok := l.AvailabilityID(tp); !ok || id != want {
			t.Errorf("AvailabilityID(%q) = %q, %v; want %q", tp, id, ok, want)
		}
	}
	for _, tp := range []string{l.State("d"), l.BridgeState(), "c2m//availability", "c2m/a/b/availability", "x/d/availability", "c2m/availability"} {
		if id, ok := l.AvailabilityID(tp); ok {
			t.Errorf("AvailabilityID(%q) = %q; want none", tp, id)
		}
	}
}

// TestUnknownIsNoAction: the fixed answer topic of unknown actions cannot
// be an action's own.
func TestUnknownIsNoAction(t *testing.T) {
	for _, a := range []string{ActionRefresh, ActionScenes, ActionHealth, ActionDevices, ActionReadAll,
		ActionRepublish, ActionOptions, ActionDeviceOptions} {
		if a == ActionUnknown {
			t.Errorf("the action %q answers on the unknown actions' topic", a)
		}
	}
	l := New("c2m")
	if l.BridgeResponseUnknown() != "c2m/bridge/response/unknown" || l.BridgeError() != "c2m/bridge/error" {
		t.Errorf("fixed topics %s, %s", l.BridgeResponseUnknown(), l.BridgeError())
	}
	if r, err := l.Route(l.BridgeError()); err == nil {
		t.Errorf("bridge/error routes as a command: %+v", r)
	}
}
