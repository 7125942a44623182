package app_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/topic"
)

// The status page over the whole daemon (internal/web's handlers are
// tested on their own there): what it shows is what the bridge publishes,
// and its actions take the MQTT requests' paths.

// startPage is a daemon with the status page on a loopback port.
func startPage(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	if o.env == nil {
		o.env = map[string]string{}
	}
	o.env["HTTP_ADDR"] = "127.0.0.1:0"
	return startHarness(t, o)
}

// apiGet decodes a GET of the page's API.
func apiGet[T any](t *testing.T, h *harness, path string) T {
	t.Helper()
	resp, err := http.Get(h.main.HTTPURL() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v T
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s %s", path, resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return v
}

// action POSTs an action as the page does (the CSRF token of
// /api/session), or with a bearer token; it returns the status and the
// error's text.
func action(t *testing.T, h *harness, name string, body any, bearer string) (int, string) {
	t.Helper()
	return actionAs(t, h, "", name, body, bearer)
}

// actionAs is action with the Host header host ("": the URL's).
func actionAs(t *testing.T, h *harness, host, name string, body any, bearer string) (int, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, h.main.HTTPURL()+"/api/actions/"+name, bytes.NewReader(b))
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	} else {
		req.Header.Set("X-CSRF-Token", apiGet[struct {
			CSRF string `json:"csrf_token"`
		}](t, h, "/api/session").CSRF)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Error string `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out.Error
}

type pageDevice struct {
	ID           string  `json:"id"`
	Name         string  `json:"name"`
	Model        string  `json:"model"`
	Status       string  `json:"status"`
	Disabled     bool    `json:"disabled"`
	Path         string  `json:"path"`
	LastRead     *string `json:"last_read"`
	PollInterval float64 `json:"poll_interval"`
	OwnInterval  bool    `json:"own_interval"`
	LastError    string  `json:"last_error"`
}

type pageBudget struct {
	RequestsToday int `json:"requests_today"`
	DailyLimit    int `json:"daily_limit"`
	Hourly        []struct {
		State, Control, List, Scenes, Other int
	} `json:"hourly"`
	Buckets []struct {
		Name     string  `json:"name"`
		Capacity float64 `json:"capacity"`
	} `json:"buckets"`
}

func (b pageBudget) charted() int {
	n := 0
	for _, h := range b.Hourly {
		n += h.State + h.Control + h.List + h.Scenes + h.Other
	}
	return n
}

func pageDevices(t *testing.T, h *harness) map[string]pageDevice {
	t.Helper()
	out := map[string]pageDevice{}
	for _, d := range apiGet[struct{ Devices []pageDevice }](t, h, "/api/devices").Devices {
		out[d.ID] = d
	}
	return out
}

// statsRequests is requests_today of the retained bridge/stats.
func statsRequests(h *harness) int {
	p, _ := h.watch.get("cloud2mqtt/bridge/stats")
	var s struct {
		N int `json:"requests_today"`
	}
	_ = json.Unmarshal([]byte(p), &s)
	return s.N
}

// simRequests counts what the simulated cloud answered.
func simRequests(h *harness) int {
	n := 0
	for ep := range h.sim.Counts().Requests {
		n += h.sim.Counts().Total(ep)
	}
	return n
}

// TestStatusPageShowsTheBridge: every device with its name, model and
// status; the budget as bridge/stats and the cloud count it, the chart
// adding up to the same; the buckets' capacities of the configuration.
func TestStatusPageShowsTheBridge(t *testing.T) {
	t.Parallel()
	// Reads every minute: between two rounds the stats' delay passes with
	// nothing new to count, so the page, bridge/stats and the cloud can
	// agree.
	h := startPage(t, harnessOptions{
		env: map[string]string{"CLOUD_DAILY_LIMIT": "5000", "LIMIT_STATE_PER_MINUTE": "20", "POLL_INTERVAL": "60s"},
		sim: cloudsim.Options{Catalogue: firstDevices(4)},
	})
	availability(h.watch, wait, "online", h.ids()...)
	var devs map[string]pageDevice
	h.watch.until(wait, "every device online on the page", func() bool {
		devs = pageDevices(t, h)
		for _, id := range h.ids() {
			if devs[id].Status != "online" {
				return false
			}
		}
		return len(devs) == len(h.ids())
	})
	for _, d := range h.sim.Devices() {
		p := devs[topic.DeviceID(d.SKU, d.Device)]
		if p.Name != d.Name || p.Model != d.SKU || p.Path != "cloud" || p.LastRead == nil || p.PollInterval < 2 || p.LastError != "" || p.Disabled {
			t.Errorf("device %s on the page: %+v", d.Name, p)
		}
	}

	var b pageBudget
	// The stats follow the count within seconds: the clock jumps them.
	h.jumpUntil(wait, time.Second, "the page, bridge/stats and the cloud agreeing on today's requests", func() bool {
		b = apiGet[pageBudget](t, h, "/api/budget")
		return b.RequestsToday > 0 && b.RequestsToday == statsRequests(h) && b.RequestsToday == simRequests(h) && b.charted() == b.RequestsToday
	})
	if b.DailyLimit != 5000 {
		t.Errorf("daily limit %d, want 5000", b.DailyLimit)
	}
	caps := map[string]float64{}
	for _, bk := range b.Buckets {
		caps[bk.Name] = bk.Capacity
	}
	if caps["state (fewest of any device)"] != 20 || caps["control (account)"] != 80 || len(caps) != 5 {
		t.Errorf("buckets %v: want the state bucket of LIMIT_STATE_PER_MINUTE=20 and the default control burst 80", caps)
	}
}

// TestStatusPageActions: the page's actions do what the MQTT requests do
// (bridge/devices shows the options; the cloud sees the reads) and fail
// alike; a rejected command is the device's last error and a problem.
func TestStatusPageActions(t *testing.T) {
	t.Parallel()
	h := startPage(t, harnessOptions{env: map[string]string{"POLL_INTERVAL": "1m"},
		sim: cloudsim.Options{Catalogue: firstDevices(2)}})
	ids := h.ids()
	id := ids[0]
	availability(h.watch, wait, "online", ids...)
	h.devices() // and their discovery configs, sent after the states

	// Disable and enable, as device/options does.
	if code, msg := action(t, h, "enabled", map[string]any{"device": id, "enabled": false}, ""); code != 200 {
		t.Fatalf("disable: %d %s", code, msg)
	}
	h.watch.until(wait, "the device disabled in bridge/devices", func() bool {
		p, _ := h.watch.get("cloud2mqtt/bridge/devices")
		return strings.Contains(p, `"options":{"disabled":true}`)
	})
	if d := pageDevices(t, h)[id]; !d.Disabled {
		t.Errorf("disabled device on the page: %+v", d)
	}
	if code, msg := action(t, h, "read", map[string]any{"device": id}, ""); code != 400 || !strings.Contains(msg, "disabled") {
		t.Errorf("read of a disabled device: %d %q, want 400 saying it is disabled", code, msg)
	}
	if code, msg := action(t, h, "enabled", map[string]any{"device": id, "enabled": true}, ""); code != 200 {
		t.Fatalf("enable: %d %s", code, msg)
	}
	if d := pageDevices(t, h)[id]; d.Disabled {
		t.Errorf("enabled device on the page: %+v", d)
	}

	// The poll interval: refused under the floor with the bridge's words,
	// set, and returned to the bridge's.
	if code, msg := action(t, h, "poll-interval", map[string]any{"device": id, "poll_interval": "1s"}, ""); code != 400 || !strings.Contains(msg, "floor") {
		t.Errorf("1s: %d %q, want 400 naming the floor", code, msg)
	}
	if code, msg := action(t, h, "poll-interval", map[string]any{"device": id, "poll_interval": "5m"}, ""); code != 200 {
		t.Fatalf("5m: %d %s", code, msg)
	}
	if d := pageDevices(t, h)[id]; !d.OwnInterval || d.PollInterval != 300 {
		t.Errorf("after 5m: %+v", d)
	}
	h.watch.until(wait, "the interval in bridge/devices", func() bool {
		p, _ := h.watch.get("cloud2mqtt/bridge/devices")
		return strings.Contains(p, `"poll_interval":"5m0s"`)
	})
	if code, msg := action(t, h, "poll-interval", map[string]any{"device": id, "poll_interval": nil}, ""); code != 200 {
		t.Fatalf("reset: %d %s", code, msg)
	}
	// Back to the bridge's shared interval: 60 s, or up to the floor
	// (4 × 60 s) once adaptive polling has found the device quiet.
	if d := pageDevices(t, h)[id]; d.OwnInterval || d.PollInterval < 1 || d.PollInterval > 240 {
		t.Errorf("after the reset: %+v, want the shared interval (60–240 s)", d)
	}

	// Read now: the cloud is asked.
	reads := func() int { return h.sim.Counts().Total(cloud.EndpointState) }
	before := reads()
	if code, msg := action(t, h, "read", map[string]any{"device": id}, ""); code != 200 {
		t.Fatalf("read: %d %s", code, msg)
	}
	h.watch.until(wait, "the read at the cloud", func() bool { return reads() > before })
	if code, _ := action(t, h, "read", map[string]any{"device": "no_such_device"}, ""); code != 404 {
		t.Errorf("read of an unknown device: %d, want 404", code)
	}

	// Refresh the device list; republish discovery.
	lists := func() int { return h.sim.Counts().Total(cloud.EndpointDevices) }
	before = lists()
	if code, msg := action(t, h, "refresh", map[string]any{}, ""); code != 200 {
		t.Fatalf("refresh: %d %s", code, msg)
	}
	h.watch.until(wait, "the device list read again", func() bool { return lists() > before })
	cfgTopic := ""
	for tp := range h.watch.topics("homeassistant/") {
		if strings.Contains(tp, id) {
			cfgTopic = tp
			break
		}
	}
	seen := h.watch.seen(cfgTopic)
	if code, msg := action(t, h, "republish", map[string]any{}, ""); code != 200 {
		t.Fatalf("republish: %d %s", code, msg)
	}
	h.watch.until(wait, "the discovery config published again", func() bool { return h.watch.seen(cfgTopic) > seen })

	// A command the bridge rejects: the device's last error, and a
	// problem as on bridge/logging.
	h.publish("cloud2mqtt/"+id+"/set/brightness", "250")
	var dev pageDevice
	h.watch.until(wait, "the rejection as the device's last error", func() bool {
		dev = pageDevices(t, h)[id]
		return dev.LastError != ""
	})
	e := h.watch.waitJSON(wait, "cloud2mqtt/"+id+"/error", func(map[string]any) bool { return true })
	if dev.LastError != e["error"] {
		t.Errorf("last error %q, <id>/error says %q", dev.LastError, e["error"])
	}
	type problem struct {
		Level, Message string
		Fields         map[string]any
	}
	h.watch.until(wait, "the rejection among the problems", func() bool {
		ps := apiGet[struct{ Problems []problem }](t, h, "/api/problems").Problems
		return slices.ContainsFunc(ps, func(p problem) bool { return p.Level == "warning" && p.Message == "command rejected" })
	})
}

// TestStatusPageToken: off loopback, an action needs HTTP_TOKEN (as a
// bearer here), and without one configured actions are off; reading
// stays open.
func TestStatusPageToken(t *testing.T) {
	t.Parallel()
	const token = "page-token-8c1d2e"
	h := startPage(t, harnessOptions{env: map[string]string{"HTTP_TOKEN": token},
		sim: cloudsim.Options{Catalogue: firstDevices(1)}})
	h.devices()
	lists := func() int { return h.sim.Counts().Total(cloud.EndpointDevices) }
	before := lists()
	if code, msg := action(t, h, "refresh", map[string]any{}, ""); code != 401 || !strings.Contains(msg, "HTTP_TOKEN") {
		t.Errorf("without the token: %d %q, want 401 naming HTTP_TOKEN", code, msg)
	}
	if code, _ := action(t, h, "refresh", map[string]any{}, "wrong-"+token); code != 401 && code != 403 {
		t.Errorf("with a wrong token: %d, want a refusal", code)
	}
	if lists() != before {
		t.Error("a refused action reached the cloud")
	}
	if code, msg := action(t, h, "refresh", map[string]any{}, token); code != 200 {
		t.Errorf("with the token: %d %q", code, msg)
	}
	h.watch.until(wait, "the device list read again", func() bool { return lists() > before })
	if n := len(apiGet[struct{ Devices []pageDevice }](t, h, "/api/devices").Devices); n != 1 {
		t.Errorf("reading without the token: %d devices", n)
	}
	for _, path := range []string{"/", "/api/session", "/api/devices", "/api/budget", "/api/problems"} {
		if _, body := getURL(t, h.main.HTTPURL()+path); strings.Contains(body, token) {
			t.Errorf("%s shows the token", path)
		}
	}
	if strings.Contains(h.logs.String(), token) {
		t.Error("the log shows the token")
	}

	// Reached off loopback (by a name of HTTP_HOSTS): actions are off.
	off := startPage(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(1)},
		env: map[string]string{"HTTP_HOSTS": "bridge.example.org"}})
	off.devices()
	if code, msg := actionAs(t, off, "bridge.example.org", "refresh", map[string]any{}, ""); code != 403 || !strings.Contains(msg, "HTTP_TOKEN") {
		t.Errorf("no token configured, off loopback: %d %q, want 403 naming HTTP_TOKEN", code, msg)
	}
}

// TestStatusPageEndsWithTheDaemon: an open event stream ends when the
// daemon stops (it would otherwise outlive the HTTP server's shutdown).
func TestStatusPageEndsWithTheDaemon(t *testing.T) {
	t.Parallel()
	h := startPage(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(1)}})
	resp, err := http.Get(h.main.HTTPURL() + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line := make([]byte, 64)
	if n, err := resp.Body.Read(line); err != nil || !strings.HasPrefix(string(line[:n]), "event: snapshot") {
		t.Fatalf("the stream's first bytes: %q, %v", line[:n], err)
	}
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		ended <- err
	}()
	h.stop()
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("the stream ended with %v, want its end", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the event stream is still open after the daemon stopped")
	}
}

// TestStatusPageLocalInterval: a light the LAN reaches shows the LAN poll
// interval (LAN_POLL_INTERVAL), and one it does not reach keeps the cloud's.
func TestStatusPageLocalInterval(t *testing.T) {
	t.Parallel()
	h := startLANHarness(t, map[string]string{"LAN_POLL_INTERVAL": "1500ms", "POLL_INTERVAL": "2s"})
	h.waitConnection(lanQuietLight, "local")
	h.waitConnection(lanCloudLight, "cloud")
	h.watch.until(wait, "the page showing the LAN's and the cloud's intervals", func() bool {
		var list struct{ Devices []pageDevice }
		if code := getJSONURL(t, h.main.HTTPURL()+"/api/devices", &list); code != 200 {
			return false
		}
		ok := 0
		for _, d := range list.Devices {
			switch d.ID {
			case h.ids[lanQuietLight]:
				if d.Path == "local" && d.PollInterval == 1.5 && !d.OwnInterval {
					ok++
				}
			case h.ids[lanCloudLight]:
				if d.Path == "cloud" && d.PollInterval == 2 {
					ok++
				}
			}
		}
		return ok == 2
	})
}
