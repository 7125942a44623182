package app_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"cloud2mqtt/internal/app"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/scheduler"
)

// faultyTransport stands between the bridge and the simulated cloud: it
// refuses connections (nothing reaches the cloud) or answers state reads
// with 429 and a Retry-After, as a test says.
type faultyTransport struct {
	base    http.RoundTripper
	mu      sync.Mutex
	mode    string // "", "refuse", "429"
	refused atomic.Int64
}

func (f *faultyTransport) set(mode string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode = mode
}

func (f *faultyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	mode := f.mode
	f.mu.Unlock()
	switch {
	case mode == "refuse":
		f.refused.Add(1)
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	case mode == "429" && cloud.EndpointOf(r.URL.Path) == cloud.EndpointState:
		if r.Body != nil {
			_, _ = io.Copy(io.Discard, r.Body)
		}
		return &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"999999"}},
			Body: io.NopCloser(strings.NewReader(`{"code":429,"msg":"Too Many Requests"}`)), Request: r}, nil
	}
	return f.base.RoundTrip(r)
}

// startFaulty starts a bridge whose cloud requests go through a
// faultyTransport.
func startFaulty(t *testing.T, o harnessOptions) (*harness, *faultyTransport) {
	t.Helper()
	o.noStart = true
	h := startHarness(t, o)
	ft := &faultyTransport{base: http.DefaultTransport}
	h.main.HTTPClient = &http.Client{Transport: ft, Timeout: 5 * time.Second}
	h.start()
	return h, ft
}

func getHealth(t *testing.T, h *harness) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(h.main.HTTPURL() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

func metricValue(t *testing.T, h *harness, series string) int {
	t.Helper()
	resp, err := http.Get(h.main.HTTPURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return int(n)
		}
	}
	t.Fatalf("no %s in /metrics", series)
	return 0
}

func savedRequests(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "requests.json"))
	if err != nil {
		return -1
	}
	var env struct {
		Data struct {
			Requests int `json:"requests"`
		} `json:"data"`
	}
	if json.Unmarshal(b, &env) != nil {
		return -1
	}
	return env.Data.Requests
}

// TestHealthAndCountFollowTheCloud: while nothing reaches the cloud,
// /healthz is 503 with a reason naming it, the Cloud sensor is off and the
// day's count stands still (in bridge/stats, /metrics and requests.json
// alike); once it answers, health is 200 again and the count grows by what
// reached it.
func TestHealthAndCountFollowTheCloud(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Reads every minute: between two rounds the stats' and the state
	// directory's delays (5 s, 8 s) pass with nothing new to count, so the
	// three can agree.
	h, ft := startFaulty(t, harnessOptions{
		env: map[string]string{"HTTP_ADDR": "127.0.0.1:0", "STATE_DIR": dir, "POLL_INTERVAL": "60s"},
		sim: cloudsim.Options{Catalogue: firstDevices(2)},
	})
	h.devices()
	h.watch.until(wait, "/healthz 200", func() bool { code, _ := getHealth(t, h); return code == 200 })
	stats := func(cond func(map[string]any) bool) func() bool {
		return func() bool {
			p, _ := h.watch.get("cloud2mqtt/bridge/stats")
			var m map[string]any
			return json.Unmarshal([]byte(p), &m) == nil && cond(m)
		}
	}
	// The clock jumps a second at a time: reads, their retries and the
	// stats' delay come at once.
	h.jumpUntil(wait, time.Second, "bridge/stats with the cloud connected", stats(func(m map[string]any) bool { return m["cloud_connected"] == true }))

	ft.set("refuse")
	var reasons string
	h.jumpUntil(wait, time.Second, "/healthz 503 naming the cloud", func() bool {
		code, body := getHealth(t, h)
		reasons = strings.ToLower(strings.Join(toStrings(body["reasons"]), "; "))
		return code == 503 && strings.Contains(reasons, "cloud")
	})
	if !strings.Contains(reasons, "not reachable") {
		t.Errorf("reasons %q, want it to say the cloud is not reachable", reasons)
	}
	h.jumpUntil(wait, time.Second, "bridge/stats with the cloud not connected", stats(func(m map[string]any) bool { return m["cloud_connected"] == false }))
	before := metricValue(t, h, "cloud2mqtt_requests_today")
	refusedBefore := ft.refused.Load()
	// The failing devices' reads back off to minutes: larger jumps.
	h.jumpUntil(wait, 5*time.Second, "more refused requests", func() bool { return ft.refused.Load() >= refusedBefore+6 })
	if got := metricValue(t, h, "cloud2mqtt_requests_today"); got != before {
		t.Errorf("requests today went from %d to %d while every connection was refused", before, got)
	}

	ft.set("")
	h.jumpUntil(faultWait, 5*time.Second, "/healthz 200 again", func() bool { code, _ := getHealth(t, h); return code == 200 })
	h.jumpUntil(wait, time.Second, "bridge/stats with the cloud connected again", stats(func(m map[string]any) bool { return m["cloud_connected"] == true }))
	// The three agree (each follows the count within its delay).
	var statsN, metric, saved int
	h.jumpUntil(wait, time.Second, "bridge/stats, /metrics and requests.json agreeing", func() bool {
		p, _ := h.watch.get("cloud2mqtt/bridge/stats")
		var s map[string]any
		_ = json.Unmarshal([]byte(p), &s)
		n, _ := s["requests_today"].(float64)
		statsN, metric, saved = int(n), metricValue(t, h, "cloud2mqtt_requests_today"), savedRequests(dir)
		return statsN == metric && metric == saved && metric > before
	})
	// Everything the simulator answered is counted, nothing else.
	if answered := len(h.sim.Requests()); metric != answered {
		t.Errorf("requests today %d, the simulator answered %d", metric, answered)
	}
}

func toStrings(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, s := range l {
			out = append(out, strings.TrimSpace(toString(s)))
		}
	}
	return out
}

func toString(v any) string {
	s, _ := v.(string)
	return s
}

// TestReadsHeldAreAnswered: after a 429 with Retry-After: 999999 a read on
// request is answered at once on <id>/error with code 429, read_all with
// an error, no device goes offline, the wait is capped (and said once),
// and the device is read when reads resume.
func TestReadsHeldAreAnswered(t *testing.T) {
	t.Parallel()
	h, ft := startFaulty(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(2)}})
	ids := h.ids()
	availability(h.watch, wait, "online", ids...)
	ft.set("429")
	h.jumpUntil(wait, time.Second, "a capped Retry-After", func() bool {
		return strings.Contains(h.logs.String(), "waiting the most it waits")
	})
	h.publish("cloud2mqtt/"+ids[0]+"/get", "")
	e := h.watch.waitJSON(wait, "cloud2mqtt/"+ids[0]+"/error", func(map[string]any) bool { return true })
	if e["code"] != float64(429) {
		t.Errorf("<id>/get while reads wait: %v, want code 429", e)
	}
	h.publish("cloud2mqtt/bridge/request/read_all", `{"transaction":"ra"}`)
	r := h.watch.waitJSON(wait, "cloud2mqtt/bridge/response/read_all", func(m map[string]any) bool { return m["transaction"] == "ra" })
	if r["status"] != "error" || !strings.Contains(toString(r["error"]), "429") {
		t.Errorf("read_all while reads wait: %v, want an error naming the 429", r)
	}
	before := len(h.sim.Requests())
	ft.set("")
	// The wait is capped at MaxRetryAfter: jumped over, the reads resume.
	h.clock.Advance(scheduler.MaxRetryAfter)
	h.jumpUntil(wait, time.Second, "reads resuming", func() bool {
		for _, q := range h.sim.Requests()[before:] {
			if q.Endpoint == cloud.EndpointState && q.HTTPStatus == 200 {
				return true
			}
		}
		return false
	})
	for _, m := range h.watch.messages() {
		if strings.HasSuffix(m.topic, "/availability") && m.payload == "offline" {
			t.Errorf("%s went offline while reads waited for a 429", m.topic)
		}
	}
	if n := strings.Count(h.logs.String(), "waiting the most it waits"); n != 1 {
		t.Errorf("the capped Retry-After was logged %d times, want once", n)
	}
}

// TestGroupDevice: an app-made group (state reads answer "devices not
// exist") is read once, shown online, controllable, with what was sent as
// its state and one warning, while the other devices are polled.
func TestGroupDevice(t *testing.T) {
	t.Parallel()
	cat := firstDevices(1)
	if err := cloudsim.AddGroups(cat, 1); err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: cat, ErrorsAs200: true}})
	ids := h.ids()
	light, group := h.sim.Devices()[0], h.sim.Devices()[1]
	availability(h.watch, wait, "online", ids...)
	reads := func(device string) int {
		n := 0
		for _, q := range h.sim.Requests() {
			if q.Endpoint == cloud.EndpointState && q.Device == device {
				n++
			}
		}
		return n
	}
	h.publish("cloud2mqtt/"+ids[1]+"/set/brightness", "40")
	h.waitCommands("a command to the group", []command{{group.Device, ids[1], "brightness", int64(40)}})
	h.watch.waitJSON(wait, "cloud2mqtt/"+ids[1]+"/state", func(m map[string]any) bool { return m["brightness"] == float64(40) })
	// Four more reads of the light (one each 2-3 s: the poll floor counts
	// from the last answer, on a 1 s grid). A group polled as the light is
	// would be read at least five times by then (its first read, the
	// command's confirming read, four periodic ones); it is read at most
	// twice in all, and not once in the window beyond the confirming read.
	start, groupStart := reads(light.Device), reads(group.Device)
	h.jumpUntil(wait, time.Second, "four more reads of the light", func() bool { return reads(light.Device) >= start+4 })
	if n := reads(group.Device); n > 2 || n-groupStart > 1 {
		t.Errorf("the group was read %d times (%d while the light was read 4 times), want at most twice in all", n, n-groupStart)
	}
	if p, _ := h.watch.get("cloud2mqtt/" + ids[1] + "/availability"); p != "online" {
		t.Errorf("group availability %q, want online", p)
	}
	warnings := h.logLines(func(m map[string]any) bool {
		return m["level"] == "warn" && strings.Contains(toString(m["message"]), "keeps no state")
	})
	if len(warnings) != 1 {
		t.Errorf("%d warnings about the group, want one", len(warnings))
	}
}

// TestStateSavedWithinSeconds: a command's value and the day's count are in
// the state directory within 10 s of the change (the default delay); a
// bridge started from a copy of the directory taken then (as after a
// kill -9), with no cloud and a fresh broker, publishes the device with
// that value.
func TestStateSavedWithinSeconds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := startHarness(t, harnessOptions{env: map[string]string{"STATE_DIR": dir}, sim: cloudsim.Options{Catalogue: firstDevices(1)}})
	ids := h.ids()
	availability(h.watch, wait, "online", ids...)
	h.devicesWithScenes() // the list's last change is in
	h.publish("cloud2mqtt/"+ids[0]+"/set/brightness", "33")
	h.waitCommands("the command", []command{{h.sim.Devices()[0].Device, ids[0], "brightness", int64(33)}})
	sent := h.clock.Now()
	saved := func(name string) string { b, _ := os.ReadFile(filepath.Join(dir, name)); return string(b) }
	// Once the value is the registry's (the bridge shows it), the clock
	// jumps over the writer's delay; the rest is counted on it as it flows.
	h.watch.waitJSON(wait, "cloud2mqtt/"+ids[0]+"/state", func(m map[string]any) bool { return m["brightness"] == float64(33) })
	h.clock.Advance(app.SaveDelay)
	h.watch.until(wait, "the value sent in the state directory", func() bool {
		return strings.Contains(saved("states.json")+saved("devices.json"), `"brightness":33`)
	})
	h.watch.until(wait, "requests.json with the day's count", func() bool { return savedRequests(dir) > 0 })
	if took := h.clock.Now().Sub(sent); took > 10*time.Second {
		t.Errorf("the value and the day's count reached the state directory %v after the change, want within 10 s", took.Round(time.Millisecond))
	}

	// The moment of the crash: what is on disk now is all there is.
	crashed := t.TempDir()
	for _, name := range []string{"devices.json", "states.json", "requests.json"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			if err := os.WriteFile(filepath.Join(crashed, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	noCloud := "http://" + ln.Addr().String()
	ln.Close()
	h2 := startHarness(t, harnessOptions{env: map[string]string{"STATE_DIR": crashed, "CLOUD_BASE_URL": noCloud},
		sim: cloudsim.Options{Catalogue: firstDevices(1)}})
	h2.watch.waitJSON(wait, "cloud2mqtt/"+ids[0]+"/state", func(m map[string]any) bool { return m["brightness"] == float64(33) })
}
