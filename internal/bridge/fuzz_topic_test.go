package bridge_test

import (
	"slices"
	"strings"
	"testing"

	"cloud2mqtt/internal/topic"
)

// FuzzInboundTopic: whatever topic under the base a client publishes to, with
// whatever payload, the bridge publishes only on its known devices' topics and
// its own fixed ones, never on a topic made of what the sender chose, and
// nothing long.
func FuzzInboundTopic(f *testing.F) {
	devs, _ := fixtureDevices(f)
	id := topic.DeviceID(devs[0].SKU, devs[0].Device)
	for _, s := range []string{"nosuch/set", "nosuch/set/brightness", id + "/set/brightness", id + "/set/x/y", "bridge/request/restart",
		"bridge/request/" + strings.Repeat("a", 200), strings.Repeat("z", 200) + "/set", "bridge/request/health", "bridge/request/device/options",
		"nosuch/segment/x/set", id + "/light/set", "x/get/more", "+/set", "bridge/set", "bridge/error"} {
		f.Add(s, []byte(`{"transaction":"t","device":"nosuch","powerSwitch":1}`), false)
		f.Add(s, []byte("1"), true)
	}
	l := topic.New(fuzzBase)
	known := map[string]bool{}
	for _, d := range devs {
		known[topic.DeviceID(d.SKU, d.Device)] = true
	}
	fixed := map[string]bool{l.BridgeError(): true, l.BridgeResponseUnknown(): true, l.BridgeState(): true, l.BridgeDevices(): true,
		l.BridgeInfo(): true, l.BridgeStats(): true}
	for _, a := range knownActions {
		fixed[l.BridgeResponse(a)] = true
	}
	f.Fuzz(func(t *testing.T, rest string, payload []byte, retained bool) {
		if len(rest) > 256 {
			// Past maxEchoedID (64) a longer id takes no other path; the
			// minimizer's work grows with the square of the length
			// (TestUnknownIDAndExtraLevelsAreAnswered has 60,000 bytes).
			return
		}
		tp := fuzzBase + "/" + rest
		if r, err := l.Route(tp); err == nil && r.Kind == topic.KindRequest && slices.Contains(knownActions, r.Action) {
			return // answered on its own topic (FuzzBridgeRequest); some republish every device
		}
		if _, watched := l.AvailabilityID(tp); watched || tp == l.BridgeState() {
			return // answered on itself, later (keep_test.go): the shared world's publisher is not for a timer's goroutine
		}
		fb := newFuzzBridge(t, false)
		fb.b.Handle(tp, payload, retained)
		for i, report := range fb.cmd.reports {
			report(fuzzMode(2).result(fb.cmd.reqs[i])) // refused by the cloud: answered on <id>/error
		}
		for _, done := range fb.read.done {
			if done != nil {
				done(nil)
			}
		}
		if logs := fb.log.String(); strings.Contains(logs, "bug:") {
			t.Fatalf("%.100q: the handler panicked:\n%s", tp, logs)
		}
		for _, m := range fb.pub.msgs {
			if fixed[m.topic] {
				continue
			}
			devID, _, _ := strings.Cut(strings.TrimPrefix(m.topic, fuzzBase+"/"), "/")
			if !strings.HasPrefix(m.topic, fuzzBase+"/") || !known[devID] {
				t.Fatalf("%.100q: published on %.100q, no topic of a known device's nor of the bridge's", tp, m.topic)
			}
			if len(m.topic) > 200 {
				t.Fatalf("%.100q: published on a topic of %d bytes", tp, len(m.topic))
			}
		}
	})
}
