package app_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/bridge"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/mqtttest"
	"cloud2mqtt/internal/topic"
)

// Every client of the broker may be an attacker.

// TestSpoofedStateAndAvailabilityArePublishedAgain: where the broker lets a
// spoof through, the bridge, which watches its own topics, publishes the truth
// again: the first at once on a still clock, the next within CorrectEvery, and
// a fresh subscriber finds the truth retained.
func TestSpoofedStateAndAvailabilityArePublishedAgain(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(2)}, frozen: true})
	id := h.ids()[0]
	state, avail := "cloud2mqtt/bridge/state", "cloud2mqtt/"+id+"/availability"
	availability(h.watch, wait, "online", h.ids()...)
	h.watch.until(wait, "the bridge online", func() bool { p, _ := h.watch.get(state); return p == "online" })

	attacker := mqtttest.NewClient(t, h.broker.URL(), mqtttest.ClientOptions{})
	attacker.Publish(state, "offline", true, 1)
	h.watch.until(wait, "bridge/state overwritten and published again", spoofedThenTrue(h.watch, state, "online", 1))
	if j := h.jumped(); j != 0 {
		t.Errorf("the clock jumped %s before the truth was back; want it at once", j)
	}

	// The next within CorrectEvery of that one waits for the round: once
	// the daemon says so, the clock jumps until the truth is back.
	attacker.Publish(avail, "offline", true, 1)
	seen := func() bool {
		return len(h.logLines(func(l map[string]any) bool {
			m, _ := l["message"].(string)
			return l["topic"] == avail && strings.HasPrefix(m, "retained topic overwritten")
		})) == 1
	}
	for deadline := time.Now().Add(wait); !seen(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			// What the broker delivered tells a lost delivery from a
			// delivery the daemon took for no overwrite (a rare CI failure).
			var got []string
			for _, m := range h.watch.messages() {
				if m.topic == avail || m.topic == state {
					got = append(got, m.topic+" "+m.payload)
				}
			}
			t.Fatalf("timed out after %s waiting for the daemon to see the availability overwritten; the watcher got, in order: %q", wait, got)
		}
	}
	h.jumpUntil(wait, bridge.CorrectEvery/4, "the availability published again", spoofedThenTrue(h.watch, avail, "online", 1))
	if j := h.jumped(); j > bridge.CorrectEvery {
		t.Errorf("the truth was back after the clock jumped %s; want it within %s", j, bridge.CorrectEvery)
	}

	fresh := newNamedWatcher(t, h.broker.URL(), "fresh-"+t.Name())
	fresh.until(wait, "the truth retained", func() bool {
		s, _ := fresh.get(state)
		a, _ := fresh.get(avail)
		return s == "online" && a == "online"
	})
	if n := len(h.logLines(func(l map[string]any) bool {
		m, _ := l["message"].(string)
		return strings.HasPrefix(m, "another client overwrote a retained topic")
	})); n != 1 {
		t.Errorf("%d warnings about the overwrite, want 1 (then at most one a minute)", n)
	}
}

// spoofedThenTrue holds once the n-th spoof on tp (any other payload than
// truth) is followed by truth.
func spoofedThenTrue(w *watcher, tp, truth string, n int) func() bool {
	return func() bool {
		spoofs, back := 0, false
		for _, m := range w.messages() {
			switch {
			case m.topic != tp:
			case m.payload != truth:
				spoofs, back = spoofs+1, false
			case spoofs == n:
				back = true
			}
		}
		return spoofs == n && back
	}
}

// TestCommandsForUnknownIDsMakeNoTopicOfThem: an unknown id is answered on
// bridge/error and an unknown action on bridge/response/unknown, each named
// shortened in the payload, so that no client chooses the topics the bridge uses.
func TestCommandsForUnknownIDsMakeNoTopicOfThem(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(1)}})
	availability(h.watch, wait, "online", h.ids()...)
	long := strings.Repeat("z", 60000)
	sent := map[string]string{
		"cloud2mqtt/nosuch-device/set/brightness": "40",
		"cloud2mqtt/" + long + "/set":             `{"brightness":40}`,
		"cloud2mqtt/bridge/request/" + long:       `{"transaction":"t-long"}`,
		"cloud2mqtt/bridge/request/restart":       `{"transaction":"t-restart"}`,
	}
	for _, tp := range []string{"cloud2mqtt/nosuch-device/set/brightness", "cloud2mqtt/" + long + "/set",
		"cloud2mqtt/bridge/request/" + long, "cloud2mqtt/bridge/request/restart"} {
		h.publish(tp, sent[tp])
	}

	errs := func() (out []map[string]any) {
		for _, m := range h.watch.messages() {
			var e map[string]any
			if m.topic == "cloud2mqtt/bridge/error" && json.Unmarshal([]byte(m.payload), &e) == nil {
				out = append(out, e)
			}
		}
		return out
	}
	unknown := func() (out []map[string]any) {
		for _, m := range h.watch.messages() {
			var r map[string]any
			if m.topic == "cloud2mqtt/bridge/response/unknown" && json.Unmarshal([]byte(m.payload), &r) == nil {
				out = append(out, r)
			}
		}
		return out
	}
	h.watch.until(wait, "two answers on bridge/error and two on bridge/response/unknown", func() bool {
		return len(errs()) == 2 && len(unknown()) == 2
	})
	if e := errs(); e[0]["device"] != "nosuch-device" || e[0]["code"] != float64(404) ||
		!strings.HasPrefix(e[1]["device"].(string), "zzzz") || len(e[1]["device"].(string)) > 100 {
		t.Errorf("bridge/error: %v", e)
	}
	if r := unknown(); r[0]["transaction"] != "t-long" || len(r[0]["action"].(string)) > 100 ||
		r[1]["transaction"] != "t-restart" || r[1]["action"] != "restart" || r[1]["status"] != "error" {
		t.Errorf("bridge/response/unknown: %v", r)
	}
	l := topic.New("cloud2mqtt")
	for _, m := range h.watch.messages() {
		if _, ours := sent[m.topic]; ours {
			continue
		}
		if strings.Contains(m.topic, "nosuch") || strings.Contains(m.topic, "zzzz") || strings.Contains(m.topic, "restart") ||
			strings.HasSuffix(m.topic, "/error") && m.topic != l.BridgeError() {
			t.Errorf("published on %.80s (%d bytes)", m.topic, len(m.topic))
		}
	}
}
