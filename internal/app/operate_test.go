package app_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/cloudsim"
)

// request publishes a bridge request and returns its response.
func (h *harness) request(action, body string) map[string]any {
	h.t.Helper()
	return h.jumpRequest(0, action, body)
}

// jumpRequest is request, jumping the daemon's clock by step (jumpUntil)
// until the response comes: read_all waits for each device's reads to be
// MinInterval apart. 0 does not jump.
func (h *harness) jumpRequest(step time.Duration, action, body string) map[string]any {
	h.t.Helper()
	var tx struct {
		Transaction string `json:"transaction"`
	}
	tx.Transaction = action + "-" + time.Now().Format("150405.000000000")
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		h.t.Fatalf("request body %s: %v", body, err)
	}
	m["transaction"] = tx.Transaction
	b, _ := json.Marshal(m)
	h.publish("cloud2mqtt/bridge/request/"+action, string(b))
	answered := func(r map[string]any) bool { return r["transaction"] == tx.Transaction }
	if step <= 0 {
		return h.watch.waitJSON(10*time.Second, "cloud2mqtt/bridge/response/"+action, answered)
	}
	var got map[string]any
	h.jumpUntil(10*time.Second, step, "the response on cloud2mqtt/bridge/response/"+action, func() bool {
		p, _ := h.watch.get("cloud2mqtt/bridge/response/" + action)
		got = nil
		return json.Unmarshal([]byte(p), &got) == nil && answered(got)
	})
	return got
}

// stateReads returns when the simulator served state reads of the device.
func (h *harness) stateReads(device string, since time.Time) []time.Time {
	var out []time.Time
	for _, r := range h.sim.Requests() {
		if r.Endpoint == cloud.EndpointState && r.Device == device && r.Time.After(since) {
			out = append(out, r.Time)
		}
	}
	return out
}

func info(h *harness, cond func(map[string]any) bool) map[string]any {
	h.t.Helper()
	return h.watch.waitJSON(10*time.Second, "cloud2mqtt/bridge/info", cond)
}

// TestOptionsOverMQTT: bridge/info is retained with the version and the
// settings; a poll interval sent on bridge/request/options changes the
// cadence the cloud sees, is answered, shows in bridge/info, and survives
// a restart with the same state directory. A bad option is refused with a
// message naming the fix, and changes nothing.
func TestOptionsOverMQTT(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(2)},
		env: map[string]string{"STATE_DIR": dir, "POLL_INTERVAL": "2s"}})
	first := info(h, func(m map[string]any) bool {
		return m["version"] == "test" && m["poll"].(map[string]any)["interval_seconds"] == float64(2)
	})
	d, _ := h.firstLight()

	bad := h.request("options", `{"options":{"poll_interval":"1s"}}`)
	if bad["status"] != "error" || !strings.Contains(bad["error"].(string), "POLL_INTERVAL=1s is below the 2s floor") {
		t.Errorf("a poll interval below the floor: %v", bad)
	}
	bad = h.request("options", `{"options":{"poll_intervall":"5m"}}`)
	if bad["status"] != "error" || !strings.Contains(bad["error"].(string), "poll_interval") {
		t.Errorf("an unknown option: %v, want the known ones named", bad)
	}

	// All or nothing: a good log level beside a bad interval is not applied.
	bad = h.request("options", `{"options":{"log_level":"error","poll_interval":"1s"}}`)
	if bad["status"] != "error" {
		t.Errorf("a request with one bad option: %v", bad)
	}

	ok := h.request("options", `{"options":{"poll_interval":"4s"}}`)
	if ok["status"] != "ok" {
		t.Fatalf("poll_interval 4s: %v", ok)
	}
	// The cloud sees the new cadence: two reads of the device more than
	// 3.5 s apart on the clock. At the old 2 s they would be 3 s apart at
	// most (periodic reads fall on a one-second grid, and a read comes at
	// least 2 s after the last answer); at 4 s they are sent 4 s apart. The
	// clock jumps a tenth of a second at a time: a read goes out late by
	// a few of those at most.
	since := h.clock.Now().Add(time.Second) // the read already planned may still come
	var reads []time.Time
	h.jumpUntil(wait, 100*time.Millisecond, "two reads at the new interval", func() bool {
		reads = h.stateReads(d.Device, since)
		return len(reads) >= 2
	})
	for i := 1; i < len(reads); i++ {
		if g := reads[i].Sub(reads[i-1]); g <= 3500*time.Millisecond {
			t.Errorf("reads %v apart after the change to 4 s: %v", g, reads)
		}
	}
	m := info(h, func(m map[string]any) bool { return m["poll"].(map[string]any)["interval_seconds"] == float64(4) })
	if m["log_level"] != first["log_level"] {
		t.Errorf("log level %v after a refused request set it, want %v as before", m["log_level"], first["log_level"])
	}
	if m["sources"].(map[string]any)["poll_interval"] != "mqtt" {
		t.Errorf("bridge/info does not say the interval came over MQTT: %v", m["sources"])
	}

	// The option survives a restart with the same state directory (the
	// retained bridge/info is cleared first, so only the new run can
	// publish it).
	h.stop()
	h.watch.c.Publish("cloud2mqtt/bridge/info", 1, true, "").Wait()
	h.watch.until(5*time.Second, "bridge/info cleared", func() bool { p, _ := h.watch.get("cloud2mqtt/bridge/info"); return p == "" })
	h.restart(true)
	m = info(h, func(m map[string]any) bool { return m["poll"].(map[string]any)["interval_seconds"] == float64(4) })
	if m["sources"].(map[string]any)["poll_interval"] != "mqtt" {
		t.Errorf("after a restart: sources %v", m["sources"])
	}
	// null returns it to the environment's value (the answer says so;
	// bridge/info following a change is checked above).
	r := h.request("options", `{"options":{"poll_interval":null}}`)
	data, _ := r["data"].(map[string]any)
	if r["status"] != "ok" || data == nil || data["options"].(map[string]any)["poll_interval"] != "2s" ||
		data["sources"].(map[string]any)["poll_interval"] != "environment" {
		t.Fatalf("poll_interval null: %v, want 2s from the environment", r)
	}
}

// TestDeviceOptionsOverMQTT: a disabled device is not read, its discovery
// configs are emptied and its commands answered on <id>/error; a display name
// changes what Home Assistant shows, not the topics; read_all reads every enabled device.
func TestDeviceOptionsOverMQTT(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(3)}})
	d, id := h.firstLight()
	var mine []string
	h.watch.until(10*time.Second, "discovery configs of "+id, func() bool {
		mine = mine[:0]
		for tp := range h.watch.topics("homeassistant/") {
			if strings.Contains(tp, "/"+id+"/") {
				mine = append(mine, tp)
			}
		}
		return len(mine) > 0
	})

	if r := h.request("device/options", `{"device":"`+id+`","options":{"name":"Hall light"}}`); r["status"] != "ok" {
		t.Fatalf("name: %v", r)
	}
	h.watch.until(10*time.Second, "the display name in discovery", func() bool {
		for _, tp := range mine {
			if p, _ := h.watch.get(tp); strings.Contains(p, `"name":"Hall light"`) {
				return true
			}
		}
		return false
	})

	if r := h.request("device/options", `{"device":"`+id+`","options":{"disabled":true}}`); r["status"] != "ok" {
		t.Fatalf("disabled: %v", r)
	}
	h.watch.until(10*time.Second, "discovery configs emptied", func() bool {
		for _, tp := range mine {
			if p, _ := h.watch.get(tp); p != "" {
				return false
			}
		}
		return true
	})
	since := h.clock.Now().Add(500 * time.Millisecond)
	h.publish("cloud2mqtt/"+id+"/set/brightness", "10")
	e := h.watch.waitJSON(10*time.Second, "cloud2mqtt/"+id+"/error", func(m map[string]any) bool { return m["code"] == float64(403) })
	if !strings.Contains(e["error"].(string), "disabled") {
		t.Errorf("command for a disabled device: %v", e)
	}
	r := h.jumpRequest(500*time.Millisecond, "read_all", `{}`)
	if r["status"] != "ok" || r["data"].(map[string]any)["devices"] != float64(2) {
		t.Errorf("read_all: %v, want the 2 enabled devices read", r)
	}
	// Nothing happens to the disabled device while the others are read:
	// two reads of each of them since (read_all's and a periodic one) span
	// a whole poll interval, in which every enabled device is read. The
	// clock jumps a second at a time to the periodic reads.
	h.jumpUntil(wait, time.Second, "two reads of every other device", func() bool {
		for _, o := range h.sim.Devices() {
			if o.Device != d.Device && len(h.stateReads(o.Device, since)) < 2 {
				return false
			}
		}
		return true
	})
	if n := len(h.stateReads(d.Device, since)); n != 0 {
		t.Errorf("a disabled device was read %d times", n)
	}
	list := h.watch.waitJSON(10*time.Second, "cloud2mqtt/bridge/info", func(m map[string]any) bool {
		dev, ok := m["devices"].(map[string]any)[id].(map[string]any)
		return ok && dev["disabled"] == true && dev["name"] == "Hall light"
	})
	_ = list
	// Enabled again: read at once, configs back.
	if r := h.request("device/options", `{"device":"`+id+`","options":{"disabled":false,"name":null}}`); r["status"] != "ok" {
		t.Fatalf("enable: %v", r)
	}
	h.watch.until(10*time.Second, "read again", func() bool { return len(h.stateReads(d.Device, since)) > 0 })
	h.watch.until(10*time.Second, "discovery configs back", func() bool {
		p, _ := h.watch.get(mine[0])
		return p != "" && !strings.Contains(p, "Hall light")
	})
	if r := h.request("device/options", `{"device":"nope","options":{"disabled":true}}`); r["status"] != "error" {
		t.Errorf("options for an unknown device: %v", r)
	}
}

// TestLogLevelOverMQTT changes the process's log level, so it does not run
// in parallel with the tests that read debug lines. A read made after the
// change (a value changed in the cloud, read with read_all, seen on MQTT)
// must log nothing at debug, though every cloud request logs a debug line.
func TestLogLevelOverMQTT(t *testing.T) {
	defer zerolog.SetGlobalLevel(zerolog.TraceLevel)
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(1)}})
	d, id := h.firstLight()
	h.watch.waitJSON(wait, "cloud2mqtt/"+id+"/state", func(m map[string]any) bool { return m["brightness"] != nil })
	isDebug := func(l map[string]any) bool { return l["level"] == "debug" }
	if n := len(h.logLines(isDebug)); n == 0 {
		t.Fatal("no debug line before the change: the check below could not fail")
	}
	if r := h.request("options", `{"options":{"log_level":"loud"}}`); r["status"] != "error" || !strings.Contains(r["error"].(string), "LOG_LEVEL") {
		t.Errorf("a bad level: %v", r)
	}
	r := h.request("options", `{"options":{"log_level":"warn"}}`)
	if r["status"] != "ok" {
		t.Fatalf("log_level warn: %v", r)
	}
	if data, _ := r["data"].(map[string]any); data == nil || data["options"].(map[string]any)["log_level"] != "warn" {
		t.Errorf("the answer to log_level warn: %v, want the options with log_level warn", r)
	}
	before := len(h.logLines(isDebug))
	if err := h.sim.SetValue(d.Device, capability.InstanceBrightness, 37); err != nil {
		t.Fatal(err)
	}
	if r := h.jumpRequest(500*time.Millisecond, "read_all", `{}`); r["status"] != "ok" {
		t.Fatalf("read_all: %v", r)
	}
	h.watch.waitJSON(wait, "cloud2mqtt/"+id+"/state", func(m map[string]any) bool { return m["brightness"] == float64(37) })
	if after := len(h.logLines(isDebug)); after != before {
		t.Errorf("%d debug lines logged after the level went to warn", after-before)
	}
}

// TestWarningsOnBridgeLogging: every warning and error also goes out on
// bridge/logging as JSON, for Node-RED alerts.
func TestWarningsOnBridgeLogging(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(1)}})
	h.publish("cloud2mqtt/h0000_nosuchdevice/set/powerSwitch", "on")
	m := h.watch.waitJSON(10*time.Second, "cloud2mqtt/bridge/logging", func(m map[string]any) bool {
		return m["level"] == "warning" && m["message"] == "command rejected"
	})
	if code, _ := m["code"].(float64); code != 404 {
		t.Errorf("bridge/logging %v, want the rejection's fields (code 404)", m)
	}
}

// TestSettingsInInfoAtOnce: a change of settings, global or a device's,
// shows in bridge/info with no time passing on the daemon's clock. Whoever
// made it (Home Assistant's number entity, a script) reads it back at once
// instead of at the background loop's next look, up to 15 s and a read grid
// later.
func TestSettingsInInfoAtOnce(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(2)}, env: map[string]string{"POLL_INTERVAL": "60s"}, frozen: true})
	interval := func(m map[string]any) any { return m["poll"].(map[string]any)["interval_seconds"] }
	info(h, func(m map[string]any) bool { return interval(m) == float64(60) })
	start := h.clock.Now()
	if r := h.request("options", `{"options":{"poll_interval":"5m"}}`); r["status"] != "ok" {
		t.Fatalf("poll_interval 5m: %v", r)
	}
	info(h, func(m map[string]any) bool { return interval(m) == float64(300) })
	_, id := h.firstLight()
	if r := h.request("device/options", `{"device":"`+id+`","options":{"poll_interval":"10m"}}`); r["status"] != "ok" {
		t.Fatalf("device poll_interval 10m: %v", r)
	}
	info(h, func(m map[string]any) bool {
		dev, ok := m["devices"].(map[string]any)[id].(map[string]any)
		return ok && dev["poll_interval_seconds"] == float64(600)
	})
	if now := h.clock.Now(); !now.Equal(start) {
		t.Fatalf("the clock moved by %s: the test shows nothing", now.Sub(start))
	}
}
