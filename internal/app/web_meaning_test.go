package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/cloudsim"
)

// The status page over the whole daemon says what the user meant: the chart
// goes on after a restart, an error is cleared by a success of its kind,
// clearing a retained command is no error, and a change on the page is logged as
// made there.

// TestStatusPageChartAfterARestart: after a restart over the same state
// directory, "Requests today" (the count requests.json keeps) and the
// hourly chart (history.json beside it) still agree, and agree with the
// cloud's own count.
func TestStatusPageChartAfterARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := startPage(t, harnessOptions{env: map[string]string{"STATE_DIR": dir, "POLL_INTERVAL": "60s"},
		sim: cloudsim.Options{Catalogue: firstDevices(2)}})
	availability(h.watch, wait, "online", h.ids()...)
	agree := func(what string) int {
		var b pageBudget
		h.jumpUntil(wait, time.Second, what, func() bool {
			b = apiGet[pageBudget](t, h, "/api/budget")
			return b.RequestsToday > 0 && b.RequestsToday == simRequests(h) && b.charted() == b.RequestsToday
		})
		return b.RequestsToday
	}
	before := agree("the page's count, its chart and the cloud agreeing before the restart")
	h.stop()
	if _, err := os.Stat(filepath.Join(dir, "history.json")); err != nil {
		t.Fatalf("the chart was not saved at the stop: %v", err)
	}

	h.main = h.newMain(h.main.Config)
	h.start()
	availability(h.watch, wait, "online", h.ids()...)
	after := agree("the page's count, its chart and the cloud agreeing after the restart")
	if after <= before {
		t.Errorf("requests today %d after the restart, %d before: the count did not go on", after, before)
	}
	t.Logf("requests today: %d before the restart, %d after, charted alike", before, after)
}

// TestStatusPageErrorsMeanWhatHappened: a rejected command stands as the
// device's last error until a command of the same instance is accepted
// (not one of another instance); the empty retained message a user sends
// to clear a retained command (mosquitto_pub -r -n) is not an error; a
// change made on the page is logged as made on the page, one over MQTT as
// made over MQTT.
func TestStatusPageErrorsMeanWhatHappened(t *testing.T) {
	t.Parallel()
	h := startPage(t, harnessOptions{env: map[string]string{"POLL_INTERVAL": "1m"}, sim: cloudsim.Options{Catalogue: firstDevices(2)}})
	ids := h.ids()
	id := ids[0]
	availability(h.watch, wait, "online", ids...)
	h.devices()
	lastError := func() string { return pageDevices(t, h)[id].LastError }
	errTopic := "cloud2mqtt/" + id + "/error"

	h.publish("cloud2mqtt/"+id+"/set/brightness", "250")
	h.watch.until(wait, "the rejection as the device's last error", func() bool { return lastError() != "" })
	rejected := lastError()
	h.publish("cloud2mqtt/"+id+"/set/powerSwitch", "1")
	h.waitCommands("the power command", []command{{h.sim.Devices()[0].Device, id, "powerSwitch", int64(1)}})
	if got := lastError(); got != rejected {
		t.Errorf("after another instance's accepted command the last error is %q, want %q still", got, rejected)
	}
	h.publish("cloud2mqtt/"+id+"/set/brightness", "40")
	h.waitCommands("the brightness command", []command{{h.sim.Devices()[0].Device, id, "brightness", int64(40)}})
	h.watch.until(wait, "the error made good by the same instance's accepted command", func() bool { return lastError() == "" })

	// A retained command, then the user's clearing of it: the first is
	// carried out (it came live), the empty one is nothing. The bad value
	// sent after it is the marker: its answer is the only one.
	errors := h.watch.seen(errTopic)
	publishRetained(t, h, "cloud2mqtt/"+id+"/set/brightness", "30")
	h.waitCommands("the retained command, sent live", []command{{h.sim.Devices()[0].Device, id, "brightness", int64(30)}})
	publishRetained(t, h, "cloud2mqtt/"+id+"/set/brightness", "")
	h.publish("cloud2mqtt/"+id+"/set/colorTemperatureK", "1")
	h.watch.until(wait, "the marker's rejection", func() bool { return h.watch.seen(errTopic) > errors })
	if n := h.watch.seen(errTopic) - errors; n != 1 {
		t.Errorf("%d answers on %s; want only the marker's (the clearing is no error)", n, errTopic)
	}
	if got := lastError(); !strings.Contains(got, "colorTemperatureK") {
		t.Errorf("last error %q, want the marker's", got)
	}

	// Where a change was made.
	if code, msg := action(t, h, "enabled", map[string]any{"device": ids[1], "enabled": false}, ""); code != 200 {
		t.Fatalf("disable on the page: %d %s", code, msg)
	}
	h.publish("cloud2mqtt/bridge/request/device/options", `{"device":"`+ids[1]+`","options":{"disabled":false}}`)
	changed := func(l map[string]any) bool {
		m, _ := l["message"].(string)
		return strings.HasPrefix(m, "device options changed")
	}
	h.watch.until(wait, "both changes logged", func() bool { return len(h.logLines(changed)) == 2 })
	lines := h.logLines(changed)
	if lines[0]["message"] != "device options changed on the status page" || lines[1]["message"] != "device options changed over MQTT" {
		t.Errorf("changes logged as %q and %q", lines[0]["message"], lines[1]["message"])
	}
}

// publishRetained publishes as mosquitto_pub -r does and returns once the
// bridge has taken the message in.
func publishRetained(t *testing.T, h *harness, topic, payload string) {
	t.Helper()
	_, before := h.main.Takes(topic)
	if tok := h.watch.c.Publish(topic, 1, true, payload); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("publish %s: %v", topic, tok.Error())
	}
	h.watch.until(wait, "the bridge taking in "+topic, func() bool { _, n := h.main.Takes(topic); return n > before })
}
