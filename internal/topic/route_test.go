package topic

import (
	"errors"
	"strings"
	"testing"
)

func TestRoute(t *testing.T) {
	l := New("c2m")
	ok := []struct {
		topic string
		want  Route
	}{
		{"c2m/d1/set", Route{ID: "d1", Kind: KindSet}},
		{"c2m/d1/set/brightness", Route{ID: "d1", Kind: KindSetInstance, Instance: "brightness"}},
		{"c2m/d1/get", Route{ID: "d1", Kind: KindGet}},
		{"c2m/d1/light/set", Route{ID: "d1", Kind: KindLightSet}},
		{"c2m/d1/segment/3/set", Route{ID: "d1", Kind: KindSegmentSet, Segment: 3}},
		{"c2m/bridge/request/refresh", Route{ID: "bridge", Kind: KindRequest, Action: "refresh"}},
		{"c2m/bridge/request/device/options", Route{ID: "bridge", Kind: KindRequest, Action: "device/options"}},
	}
	for _, c := range ok {
		got, err := l.Route(c.topic)
		if err != nil || got != c.want {
			t.Errorf("Route(%q) = %+v, %v; want %+v", c.topic, got, err, c.want)
		}
	}
	// Every topic the layout builds for commands routes back to itself.
	for _, tc := range []struct {
		topic string
		kind  Kind
	}{{l.Set("x"), KindSet}, {l.SetInstance("x", "i"), KindSetInstance}, {l.Get("x"), KindGet},
		{l.LightSet("x"), KindLightSet}, {l.SegmentSet("x", 12), KindSegmentSet}, {l.BridgeOptions(), KindRequest}} {
		if r, err := l.Route(tc.topic); err != nil || r.Kind != tc.kind {
			t.Errorf("Route(%q) = %+v, %v", tc.topic, r, err)
		}
	}
	bad := []struct{ topic, says string }{
		{"c2m/d1/set/brightness/x", `extra levels "x" after set/brightness: send the value to c2m/d1/set/brightness`},
		{"c2m/d1/set/", "no instance after set/"},
		{"c2m/d1/get/now", `extra levels "now" after get`},
		{"c2m/d1/light/set/x/y", `extra levels "x/y" after light/set`},
		{"c2m/d1/segment/x/set", `the segment "x" must be a number, as in c2m/d1/segment/0/set`},
		{"c2m/d1/segment/-1/set", `the segment "-1" must be a number`},
		{"c2m/d1/segment/01/set", `the segment "01" must be a number`},
		{"c2m/d1/segment/2/set/x", `extra levels "x" after segment/2/set`},
	}
	for _, c := range bad {
		_, err := l.Route(c.topic)
		var re *RouteError
		if !errors.As(err, &re) || re.ID != "d1" || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), c.topic) {
			t.Errorf("Route(%q) = %v; want a RouteError for d1 saying %q", c.topic, err, c.says)
		}
	}
	for _, tp := range []string{"other/d1/set", "c2m/d1/state", "c2m/d1/availability", "c2m/d1/light", "c2m/bridge/state",
		"c2m/bridge/request", "c2m//set", "c2m", "c2m/d1/error", "c2m/d1/segment/1/state"} {
		if _, err := l.Route(tp); !errors.Is(err, ErrNotInbound) {
			t.Errorf("Route(%q) = %v; want ErrNotInbound", tp, err)
		}
	}
}

// TestInboundFiltersCatchEveryCommandAndNoOutboundTopic: the filters reach
// every command topic, with extra levels too, and none of the bridge's own
// publications.
func TestInboundFiltersCatchEveryCommandAndNoOutboundTopic(t *testing.T) {
	l := New("c2m")
	matchAny := func(tp string) bool {
		for _, f := range l.Inbound() {
			if filterMatches(f, tp) {
				return true
			}
		}
		return false
	}
	for _, tp := range []string{l.Set("d"), l.SetInstance("d", "b"), l.SetInstance("d", "b") + "/x", l.Get("d"), l.Get("d") + "/x",
		l.LightSet("d"), l.LightSet("d") + "/x", l.SegmentSet("d", 1), l.SegmentSet("d", 1) + "/x", "c2m/d/segment/x/set",
		l.BridgeOptions(), l.BridgeDeviceOptions()} {
		if !matchAny(tp) {
			t.Errorf("no inbound filter matches %s", tp)
		}
	}
	for _, tp := range []string{l.State("d"), l.Availability("d"), l.Error("d"), l.Event("d"), l.Light("d"),
		l.BridgeState(), l.BridgeDevices(), l.BridgeStats(), l.BridgeInfo(), l.BridgeLogging(), l.BridgeResponse(ActionOptions)} {
		if matchAny(tp) {
			t.Errorf("an inbound filter matches the bridge's own %s", tp)
		}
	}
}

func filterMatches(filter, topic string) bool {
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

func FuzzRoute(f *testing.F) {
	for _, s := range []string{"c2m/d1/set", "c2m/d1/set/brightness/x", "c2m/d1/segment/3/set", "c2m/bridge/request/device/options", "c2m/d1/light/set/"} {
		f.Add(s)
	}
	l := New("c2m")
	f.Fuzz(func(t *testing.T, tp string) {
		r, err := l.Route(tp)
		var re *RouteError
		switch {
		case err == nil:
			if r.ID == "" || r.Kind == 0 {
				t.Fatalf("Route(%q) = %+v without an error", tp, r)
			}
			if !strings.HasPrefix(tp, "c2m/"+r.ID+"/") {
				t.Fatalf("Route(%q): id %q is not the first level", tp, r.ID)
			}
		case errors.As(err, &re):
			if re.ID == "" || !strings.HasPrefix(tp, "c2m/"+re.ID+"/") {
				t.Fatalf("Route(%q): error for id %q", tp, re.ID)
			}
		case !errors.Is(err, ErrNotInbound):
			t.Fatalf("Route(%q): unexpected error %v", tp, err)
		}
	})
}
