package poller

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
)

// simTransport hands each request to the simulator in the same process, so
// that the whole path runs on a synctest bubble's clock: the cloud client,
// its headers, the scheduler, the poller. Nothing else is fake.
type simTransport struct{ sim *cloudsim.Sim }

func (t simTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	in := r.Clone(r.Context())
	if in.Body == nil {
		in.Body = http.NoBody // as a server sees a GET
	}
	t.sim.ServeHTTP(rec, in)
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// quotaBridge is the bridge's cloud side (client, scheduler, registry,
// poller: what the daemon wires, less MQTT) against a simulated account.
type quotaBridge struct {
	sim   *cloudsim.Sim
	sched *scheduler.Scheduler
	poll  *Poller
	stop  func()
}

func startQuotaBridge(t *testing.T, devices int, quota cloudsim.Quota) *quotaBridge {
	t.Helper()
	cat, err := cloudsim.Household(devices)
	if err != nil {
		t.Fatal(err)
	}
	sim := cloudsim.New(cloudsim.Options{Catalogue: cat, Quota: quota})
	b := &quotaBridge{sim: sim}
	client, err := cloud.New(cloud.Config{BaseURL: "http://cloud.test", APIKey: sim.APIKey(), Logger: zerolog.Nop(),
		HTTPClient: &http.Client{Transport: simTransport{sim}},
		OnLimits:   func(l cloud.RateLimits) { b.sched.ObserveLimits(l) }})
	if err != nil {
		t.Fatal(err)
	}
	b.sched = scheduler.New(client, scheduler.Config{}, zerolog.Nop())
	reg := registry.New(zerolog.Nop())
	b.poll = New(b.sched, reg, Config{}, zerolog.Nop()) // nothing configured: the default poll
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = b.sched.Run(ctx) }()
	go func() { defer wg.Done(); _ = b.poll.Run(ctx) }()
	b.stop = func() { cancel(); wg.Wait() }
	return b
}

// command sends a command as the bridge does (and asks for its confirming
// read) and returns its outcome.
func (b *quotaBridge) command(t *testing.T, dev capability.Device) error {
	t.Helper()
	done := make(chan error, 1)
	err := b.sched.Control(cloud.ControlRequest{SKU: dev.SKU, Device: dev.Device, Type: capability.TypeOnOff,
		Instance: capability.InstancePower, Value: int64(1)}, func(r scheduler.CommandResult) { done <- r.Err })
	if err != nil {
		return err
	}
	err = <-done
	if err == nil {
		b.poll.Confirm(dev.SKU, dev.Device)
	}
	return err
}

// A small quota at its real size: 45 requests per 180 s told by
// the cloud, nothing configured (the default 60 s poll), 18 lights (the
// worst case: each has two scene lists to fetch at start). Over three
// windows no request is refused, every device is read in every window, a
// command late in each window goes through, and the scheduler reports the
// limit it learned.
//
// It runs on a synctest bubble's clock: the nine minutes take a fraction of
// a second, and the windows, the poll interval and the list and scene
// intervals keep their real sizes (a shorter window would need every other
// interval scaled with it, and the 2 s per-device floor cannot be).
func TestQuotaAtScale(t *testing.T) {
	for _, late := range lateStarts {
		t.Run(fmt.Sprintf("start %s into a window", late), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const window = 180 * time.Second
				time.Sleep(late) // the bubble's clock starts on a window's start
				b := startQuotaBridge(t, 18, cloudsim.Quota{Limit: 45, Window: window})
				defer b.stop()
				start := time.Now().Truncate(window)
				devs := b.sim.Devices()
				for w := range 3 {
					end := start.Add(time.Duration(w+1) * window)
					time.Sleep(time.Until(end.Add(-15 * time.Second)))
					if err := b.command(t, devs[w]); err != nil {
						t.Errorf("window %d: a command 15 s before its end: %v", w+1, err)
					}
					time.Sleep(time.Until(end))
				}
				checkQuotaRun(t, b.sim.Requests(), devs, start, window, 3, late)
				q := b.sched.Stats().Quota.Windows[scheduler.WindowQuota]
				if q.Limit != 45 || q.Span != window {
					t.Errorf("the scheduler learned %+v, want 45 per %v", q, window)
				}
				// (45-5-1)·0.9 reads per 180 s for 18 devices: every 93 s (a
				// little less when the window was first seen after its
				// start: a span that grows by less than a tenth is not
				// planned again).
				if st := b.poll.Stats(); st.Interval < 84*time.Second || st.Interval > 93*time.Second || st.Plan.Quota != st.Interval {
					t.Errorf("the poll interval %v (plan %+v), want about 93 s for the quota", st.Interval, st.Plan)
				}
			})
		})
	}
}

// checkQuotaRun checks the simulator's log of n windows from start: no
// 429, at most the quota in each window, every device read in each (the
// first window only from the bridge's start when it started late).
func checkQuotaRun(t *testing.T, log []cloudsim.Request, devs []capability.Device, start time.Time, window time.Duration, n int, late time.Duration) {
	t.Helper()
	type perWindow struct {
		requests int
		read     map[string]bool
		scenes   int
	}
	ws := make([]perWindow, n)
	for i := range ws {
		ws[i].read = map[string]bool{}
	}
	for _, r := range log {
		if r.HTTPStatus == http.StatusTooManyRequests || r.Code == http.StatusTooManyRequests {
			t.Errorf("%s %s at %v refused: %s (%s)", r.Endpoint, r.Device, r.Time, r.Msg, r.Bucket)
		}
		i := int(r.Time.Sub(start) / window)
		if i < 0 || i >= n {
			continue
		}
		ws[i].requests++
		switch r.Endpoint {
		case cloud.EndpointState:
			if r.Code == http.StatusOK {
				ws[i].read[r.Device] = true
			}
		case cloud.EndpointScenes, cloud.EndpointDIYScenes:
			ws[i].scenes++
		}
	}
	for i, w := range ws {
		t.Logf("window %d: %d requests, %d devices read, %d scene fetches", i+1, w.requests, len(w.read), w.scenes)
		if w.requests > 45 {
			t.Errorf("window %d: %d requests, more than the quota", i+1, w.requests)
		}
		for _, d := range devs {
			if !w.read[d.Device] {
				t.Errorf("window %d: %s not read", i+1, d.Device)
			}
		}
	}
}

// A quota larger than the reads need slows nothing down: the interval stays
// the configured one, and a start's reads and scene lists all go at once.
func TestQuotaAmpleSlowsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := startQuotaBridge(t, 18, cloudsim.Quota{Limit: 100_000, Window: 24 * time.Hour})
		defer b.stop()
		time.Sleep(5 * time.Second)
		c := b.sim.Counts()
		if r, s := c.Of(cloud.EndpointState, 200), c.Of(cloud.EndpointScenes, 200)+c.Of(cloud.EndpointDIYScenes, 200); r != 18 || s != 36 {
			t.Errorf("within 5 s of the start: %d reads and %d scene fetches, want 18 and 36", r, s)
		}
		time.Sleep(10 * time.Minute)
		st := b.poll.Stats()
		if st.Interval != DefaultInterval || st.Plan.Quota != 0 {
			t.Errorf("interval %v, plan %+v: the quota should not bind", st.Interval, st.Plan)
		}
		// 18 first reads, then one a minute each (the first of them spread
		// over the minute after the next).
		if n := b.sim.Counts().Of(cloud.EndpointState, 200); n < 18*10 || n > 18*11 {
			t.Errorf("%d reads in 10 min 5 s, want a read of each device a minute", n)
		}
		if q := b.sched.Stats().Quota.Windows[scheduler.WindowQuota]; q.Limit != 100_000 {
			t.Errorf("learned %+v", q)
		}
	})
}

var lateStarts = func() []time.Duration {
	var out []time.Duration
	for s := 0; s < 180; s += 10 {
		out = append(out, time.Duration(s)*time.Second)
	}
	return out
}()

// Other accounts, started at some point of a window: no request refused,
// and every device read in every whole window the quota has room for
// (36 devices and their scene lists at 45 per 180 s leave one unread in
// some window).
func TestQuotaOtherAccounts(t *testing.T) {
	for _, tc := range []struct {
		devices, limit int
		window, late   time.Duration
		run            time.Duration
		interval       time.Duration // the plan's, once the window's span is known
		unread         int           // devices a whole window may leave unread
	}{
		{5, 45, 180 * time.Second, 0, 9 * time.Minute, DefaultInterval, 0},
		{30, 45, 180 * time.Second, time.Minute, 9 * time.Minute, 154 * time.Second, 0},
		{36, 45, 180 * time.Second, 0, 9 * time.Minute, 185 * time.Second, 1},
		{16, 100, time.Hour, 20 * time.Minute, 5 * time.Hour, 762 * time.Second, 0},
		{18, 10_000, 24 * time.Hour, 22 * time.Hour, 3 * time.Hour, 196 * time.Second, 0}, // across midnight
	} {
		t.Run(fmt.Sprintf("%d devices, %d per %s", tc.devices, tc.limit, tc.window), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				time.Sleep(tc.late)
				b := startQuotaBridge(t, tc.devices, cloudsim.Quota{Limit: tc.limit, Window: tc.window})
				defer b.stop()
				time.Sleep(tc.run)
				for bucket, n := range b.sim.Counts().RateLimited {
					t.Errorf("%d requests refused by %s", n, bucket)
				}
				if st := b.poll.Stats(); st.Interval != tc.interval {
					t.Errorf("interval %v, want %v", st.Interval, tc.interval)
				}
				log := b.sim.Requests()
				for w := time.Now().Add(-tc.run).Truncate(tc.window).Add(tc.window); !w.Add(tc.window).After(time.Now()); w = w.Add(tc.window) {
					read := map[string]bool{}
					for _, r := range log {
						if r.Endpoint == cloud.EndpointState && r.Code == http.StatusOK && !r.Time.Before(w) && r.Time.Before(w.Add(tc.window)) {
							read[r.Device] = true
						}
					}
					if len(read) < tc.devices-tc.unread {
						t.Errorf("the window from %v: %d of %d devices read", w, len(read), tc.devices)
					}
				}
			})
		})
	}
}
