package app_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/topic"
)

// firstStates waits until every device of the simulator has a state topic
// and returns how long after start that was.
func (h *harness) firstStates(timeout time.Duration, start time.Time) time.Duration {
	h.t.Helper()
	devs := h.sim.Devices()
	missing := func() int {
		n := 0
		for _, d := range devs {
			if p, _ := h.watch.get("cloud2mqtt/" + topic.DeviceID(d.SKU, d.Device) + "/state"); p == "" {
				n++
			}
		}
		return n
	}
	// On the still clock an idle daemon has done all it will: a state
	// still missing then never comes. timeout only bounds a machine so
	// slow that the start does not end.
	h.idle(start.Add(timeout), "a state of every device")
	if n := missing(); n > 0 {
		h.t.Fatalf("the daemon is idle on a still clock with %d of %d devices without a state", n, len(devs))
	}
	return time.Since(start)
}

func rateLimited(sim *cloudsim.Sim) int {
	n := 0
	for _, k := range sim.Counts().RateLimited {
		n += k
	}
	return n
}

// TestFirstStatesAtOnce: whatever the poll interval, every device has a state
// and every light its scene list at once after a start, without a 429. The
// daemon's clock stands still, so anything that waited for an interval, grid
// instant or pace would never come.
func TestFirstStatesAtOnce(t *testing.T) {
	t.Parallel()
	start := time.Now()
	h := startHarness(t, harnessOptions{env: map[string]string{"POLL_INTERVAL": "10m"}, frozen: true})
	took := h.firstStates(time.Minute, start)
	t.Logf("%d devices: every first state %v after start", len(h.sim.Devices()), took.Round(time.Millisecond))
	var lights []capability.Device
	for _, d := range h.sim.Devices() {
		if _, ok := d.Capability(capability.InstanceLightScene); ok {
			lights = append(lights, d)
		}
	}
	// Final: the scene endpoint answered for the light, and its config
	// (published after that answer) has the effect list.
	scenesServed := func(device string) bool {
		for _, r := range h.sim.Requests() {
			if r.Endpoint == cloud.EndpointScenes && r.Device == device && r.HTTPStatus == 200 {
				return true
			}
		}
		return false
	}
	var missing string
	defer func() {
		if t.Failed() {
			t.Logf("the light without its effect list: %s", missing)
		}
	}()
	h.watch.until(time.Minute, "every light's effect list", func() bool {
		for _, d := range lights {
			// A device with scenes but no light entity (a sync box) shows
			// them in a select; its scene fetch is what must be done.
			p, isLight := h.watch.get("homeassistant/light/" + topic.DeviceID(d.SKU, d.Device) + "/light/config")
			if !scenesServed(d.Device) || isLight && !strings.Contains(p, `"effect_list":["`) {
				missing = d.String()
				return false
			}
		}
		return true
	})
	t.Logf("%d lights: every effect list %v after start", len(lights), time.Since(start).Round(time.Millisecond))
	if n := rateLimited(h.sim); n != 0 {
		t.Errorf("%d × 429", n)
	}
}

// TestThousandDevicesFirstReads: 1000 devices at a 10-minute interval all have a
// state at once after a start, without a 429. The simulator's rate rows run on
// the same still clock, so the burst of first reads must fit each bucket as it
// stands. The bound only ends a test that will not pass; under -race it takes
// tens of seconds.
func TestThousandDevicesFirstReads(t *testing.T) {
	t.Parallel()
	cat, err := cloudsim.Household(1000)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: cat}, env: map[string]string{"POLL_INTERVAL": "10m", "LOG_LEVEL": "info"}, frozen: true,
		watch: "cloud2mqtt/+/state"})
	took := h.firstStates(10*time.Minute, start)
	t.Logf("1000 devices: every first state %v after start", took.Round(time.Millisecond))
	if n := rateLimited(h.sim); n != 0 {
		t.Errorf("%d × 429", n)
	}
}

// TestThousandDevicesFirstReadsWithinQuota: the same start against a daily quota
// of 1500, enough for the 1000 first reads beside the commands' reserve but not
// for the scene lists as well. Every first state comes at once, nothing is
// refused and the reserve is untouched, because first reads go through the
// poller's pacing like any read. The cloud's clock stands still too.
func TestThousandDevicesFirstReadsWithinQuota(t *testing.T) {
	t.Parallel()
	cat, err := cloudsim.Household(1000)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 1500
	start := time.Now()
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: cat, Quota: cloudsim.Quota{Limit: limit, Window: 24 * time.Hour}},
		env: map[string]string{"POLL_INTERVAL": "10m", "LOG_LEVEL": "info"}, frozen: true, watch: "cloud2mqtt/+/state"})
	took := h.firstStates(10*time.Minute, start)
	t.Logf("1000 devices, %d requests a day: every first state %v after start", limit, took.Round(time.Millisecond))
	for bucket, n := range h.sim.Counts().RateLimited {
		if n != 0 {
			t.Errorf("%d requests refused by %s", n, bucket)
		}
	}
	left, renews, ok := h.sim.QuotaLeft()
	if !ok {
		t.Fatal("the simulator keeps no quota")
	}
	reserve := poller.QuotaReserve(limit, renews.Sub(h.clock.Now()), poller.DefaultListInterval)
	if left < reserve {
		t.Errorf("%d of %d requests left after the start, less than the %d the bridge keeps for commands", left, limit, reserve)
	}
	t.Logf("%d of %d requests left after the start (the reserve: %d)", left, limit, reserve)
}

// TestFirstReadsCloseTheirConnections: a start's first reads go at once, a
// connection each (100 lights: about 100 at the cloud), and once they are
// answered the daemon closes the idle ones: what stays open is what the
// steady reads use (scheduler.DefaultMaxInFlight at most), not a hundred
// sockets for the transport's idle timeout.
func TestFirstReadsCloseTheirConnections(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: lights(t, 100)}, env: map[string]string{"POLL_INTERVAL": "60s"},
		frozen: true, watch: "cloud2mqtt/+/state", noStart: true})
	var mu sync.Mutex
	open, opened := 0, 0
	srv := httptest.NewUnstartedServer(h.sim)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch s {
		case http.StateNew:
			open++
			opened++
		case http.StateClosed, http.StateHijacked:
			open--
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	h.main.Config.Cloud.BaseURL = srv.URL
	h.start()
	h.firstStates(time.Minute, time.Now())
	// The steady slots, plus as many again: the idle connections are closed
	// when the burst is over, and the reads then in flight (the start's
	// scene lists) keep theirs (9 open once, beside the whole suite).
	h.watch.until(wait, "the first reads' connections closed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return open <= 2*scheduler.DefaultMaxInFlight
	})
	mu.Lock()
	defer mu.Unlock()
	// About 100 here (73 under -race beside the other tests): a read
	// answered before another starts lends it its connection, so only
	// "more than the steady slots" is certain on a slow machine.
	if opened <= scheduler.DefaultMaxInFlight {
		t.Errorf("%d connections opened for the first reads of 100 lights; want more than the steady %d (the reads at once, a connection each)", opened, scheduler.DefaultMaxInFlight)
	}
	t.Logf("%d connections opened, %d open after the first reads", opened, open)
}
