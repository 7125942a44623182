package app_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/topic"
)

// TestRetainedCommandsAreIgnoredAtEveryStart: a command and requests left
// retained on the broker are neither acted on nor answered, since a retained
// brightness would undo every later change at each start; each topic is logged
// once per start with the command that clears it.
func TestRetainedCommandsAreIgnoredAtEveryStart(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(2)}, noStart: true})
	dev := h.sim.Devices()[0]
	id := topic.DeviceID(dev.SKU, dev.Device)
	retained := map[string]string{
		"cloud2mqtt/" + id + "/set/brightness":     `7`,
		"cloud2mqtt/bridge/request/options":        `{"options":{"poll_interval":"17s"}}`,
		"cloud2mqtt/bridge/request/read_all":       `{"transaction":"stale"}`,
		"cloud2mqtt/bridge/request/device/options": `{"device":"` + id + `","options":{"disabled":true}}`,
	}
	for tp, p := range retained {
		if tok := h.watch.c.Publish(tp, 1, true, p); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("publish %s: %v", tp, tok.Error())
		}
	}

	for start := 1; start <= 2; start++ {
		if start == 2 {
			h.stop()
			h.main = h.newMain(h.main.Config)
		}
		h.start()
		h.watch.until(10*time.Second, "a warning for each retained topic", func() bool {
			return len(h.retainedWarnings()) == start*len(retained)
		})
		for _, w := range h.retainedWarnings() {
			tp, _ := w["topic"].(string)
			if _, ok := retained[tp]; !ok || w["clear_with"] != "mosquitto_pub -r -n -t '"+tp+"'" {
				t.Errorf("warning %v: want a retained topic and the command that clears it", w)
			}
		}
		// A live request after them: its answer comes after any answer to
		// theirs would have.
		tx := fmt.Sprintf("live-%d", start)
		h.publish("cloud2mqtt/bridge/request/health", `{"transaction":"`+tx+`"}`)
		h.watch.until(10*time.Second, "the live request's answer", func() bool {
			p, _ := h.watch.get("cloud2mqtt/bridge/response/health")
			return strings.Contains(p, tx)
		})
		for _, m := range h.watch.messages() {
			if strings.HasPrefix(m.topic, "cloud2mqtt/bridge/response/") && m.topic != "cloud2mqtt/bridge/response/health" {
				t.Errorf("start %d: a retained request was answered: %s %s", start, m.topic, m.payload)
			}
		}
		// A live command after the retained one: the cloud gets it, and
		// nothing before it.
		h.publish("cloud2mqtt/"+id+"/set/brightness", fmt.Sprint(20+start))
		h.watch.until(10*time.Second, "the live command at the cloud", func() bool {
			for _, c := range h.sim.ControlLog() {
				if c.Device == dev.Device && fmt.Sprint(c.Value) == fmt.Sprint(20+start) {
					return true
				}
			}
			return false
		})
		for _, c := range h.sim.ControlLog() {
			if fmt.Sprint(c.Value) == "7" {
				t.Errorf("start %d: the retained brightness reached the cloud: %+v", start, c)
			}
		}
		var info map[string]any
		if p, _ := h.watch.get("cloud2mqtt/bridge/info"); json.Unmarshal([]byte(p), &info) == nil && strings.Contains(p, "17s") {
			t.Errorf("start %d: the retained options were applied: %s", start, p)
		}
	}
}

// retainedWarnings are the daemon's warnings about retained messages.
func (h *harness) retainedWarnings() []map[string]any {
	return h.logLines(func(l map[string]any) bool {
		msg, _ := l["message"].(string)
		return l["level"] == "warn" && strings.HasPrefix(msg, "retained message ignored")
	})
}
