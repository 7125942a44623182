package scheduler_test

// Benchmarks of the scheduler against the simulator, in process: an
// httptest server on 127.0.0.1 serving cloudsim, the real cloud.Client,
// real time. They take minutes in all; run them with
//
//	go test ./internal/scheduler -run '^$' -bench . -benchtime 1x
//
// Figures are reported with b.ReportMetric; docs/benchmarks.md records a run.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/scheduler"
)

// simHarness is a simulated account of n lights behind a loopback HTTP
// server, a real client and a running scheduler.
type simHarness struct {
	sim     *cloudsim.Sim
	sched   *scheduler.Scheduler
	lights  []capability.Device
	srv     *httptest.Server
	tr      *http.Transport
	cancel  context.CancelFunc
	runDone chan error
}

func newSimHarness(b *testing.B, n int, cfg scheduler.Config) *simHarness {
	b.Helper()
	var proto capability.Device
	for _, d := range cloudsim.DemoCatalogue().Devices {
		if d.SKU == "H6008" {
			proto = d.Device
		}
	}
	if proto.SKU == "" {
		b.Fatal("the demo catalogue has no H6008 light to copy")
	}
	h := &simHarness{sim: cloudsim.New(cloudsim.Options{Catalogue: &cloudsim.Catalogue{}})}
	for i := range n {
		d := proto
		d.Device = fmt.Sprintf("BE:NC:00:00:00:00:%02X:%02X", i/256, i%256)
		d.Name = fmt.Sprintf("bench light %d", i)
		if err := h.sim.AddDevice(d); err != nil {
			b.Fatal(err)
		}
		h.lights = append(h.lights, d)
	}
	h.srv = httptest.NewServer(h.sim)
	h.tr = &http.Transport{MaxIdleConnsPerHost: 32}
	c, err := cloud.New(cloud.Config{
		BaseURL:    h.srv.URL,
		APIKey:     h.sim.APIKey(),
		HTTPClient: &http.Client{Transport: h.tr, Timeout: 10 * time.Second},
		Logger:     zerolog.Nop(),
	})
	if err != nil {
		b.Fatal(err)
	}
	h.sched = scheduler.New(c, cfg, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.runDone = make(chan error, 1)
	go func() { h.runDone <- h.sched.Run(ctx) }()
	return h
}

func (h *simHarness) close(b *testing.B) {
	h.cancel()
	if err := <-h.runDone; err != nil {
		b.Error(err)
	}
	h.srv.Close()
	h.tr.CloseIdleConnections()
}

func brightness(d capability.Device, v int) cloud.ControlRequest {
	return cloud.ControlRequest{SKU: d.SKU, Device: d.Device, Type: capability.TypeRange, Instance: capability.InstanceBrightness, Value: v}
}

// waiter counts reports and remembers the failures.
type waiter struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
	last time.Time
}

func (w *waiter) report(res scheduler.CommandResult) {
	defer w.wg.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	if res.Done.After(w.last) {
		w.last = res.Done
	}
	if res.Err != nil && !isSuperseded(res.Err) {
		w.errs = append(w.errs, res.Err)
	}
}

func isSuperseded(err error) bool { return errors.Is(err, capability.ErrSuperseded) }

func (w *waiter) submit(b *testing.B, s *scheduler.Scheduler, req cloud.ControlRequest) {
	w.wg.Add(1)
	if err := s.Control(req, w.report); err != nil {
		w.wg.Done()
		b.Fatalf("submit: %v", err)
	}
}

func (w *waiter) check(b *testing.B) {
	b.Helper()
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, err := range w.errs {
		if i < 5 {
			b.Errorf("command failed: %v", err)
		}
	}
	if len(w.errs) > 0 {
		b.Errorf("%d commands failed (not counting superseded ones)", len(w.errs))
	}
}

func rateLimited429(sim *cloudsim.Sim) int {
	return sim.Counts().Of(cloud.EndpointControl, http.StatusTooManyRequests) +
		sim.Counts().Of(cloud.EndpointState, http.StatusTooManyRequests)
}

// Storm: 20 lights, 50 brightness commands each, all within one second (a
// slider dragged on every light at once). Expect no 429, every light at its
// last value, far fewer requests than commands.
func BenchmarkStorm(b *testing.B) {
	const lights, perLight = 20, 50
	for b.Loop() {
		h := newSimHarness(b, lights, scheduler.Config{})
		var w waiter
		start := time.Now()
		for k := range lights * perLight {
			// One command per millisecond, lights in turn; values 1..50.
			if d := time.Until(start.Add(time.Duration(k) * time.Millisecond)); d > 0 {
				time.Sleep(d)
			}
			w.submit(b, h.sched, brightness(h.lights[k%lights], k/lights+1))
		}
		stormEnd := time.Since(start)
		w.check(b)
		final := time.Duration(0)
		log := h.sim.ControlLog()
		for _, d := range h.lights {
			v, _ := h.sim.Value(d.Device, capability.InstanceBrightness)
			if !capability.Equal(v, int64(perLight)) {
				b.Errorf("%s ends at brightness %v, want the last command's %d", d.Device, v, perLight)
			}
			for _, r := range slices.Backward(log) {
				if r.Device == d.Device && r.Code == http.StatusOK {
					final = max(final, r.Time.Sub(start))
					break
				}
			}
		}
		st := h.sched.Stats()
		sent := h.sim.Counts().Total(cloud.EndpointControl)
		n429 := rateLimited429(h.sim)
		h.close(b)
		if n429 != 0 {
			b.Errorf("%d answers were 429, want none", n429)
		}
		// ideal: a scheduler that knew which values were the last would
		// send only those, all at the storm's end (20 fit the burst).
		// budget: when the account bucket (80 + 12/s) allowed the requests
		// that were sent; final ≈ budget means no time lost beyond it.
		ideal := stormEnd
		budget := time.Duration(float64(max(sent-80, 0)) / 12 * float64(time.Second))
		b.ReportMetric(float64(lights*perLight), "commands")
		b.ReportMetric(float64(sent), "requests")
		b.ReportMetric(float64(st.Coalesced), "coalesced")
		b.ReportMetric(float64(n429), "429s")
		b.ReportMetric(stormEnd.Seconds(), "storm_s")
		b.ReportMetric(final.Seconds(), "final_state_s")
		b.ReportMetric(ideal.Seconds(), "ideal_s")
		b.ReportMetric(budget.Seconds(), "budget_s")
	}
}

// Saturation: 300 lights, one command each, at once. The account bucket
// allows 80 at once and 12/s after: ideal (300-80)/12 ≈ 18.3 s.
func BenchmarkSaturation(b *testing.B) {
	const n = 300
	ideal := (n - 80) * time.Second / 12
	for b.Loop() {
		h := newSimHarness(b, n, scheduler.Config{})
		var w waiter
		start := time.Now()
		for i, d := range h.lights {
			w.submit(b, h.sched, brightness(d, i%100+1))
		}
		w.check(b)
		took := w.last.Sub(start)
		n429 := rateLimited429(h.sim)
		sent := h.sim.Counts().Of(cloud.EndpointControl, http.StatusOK)
		h.close(b)
		if n429 != 0 {
			b.Errorf("%d answers were 429, want none", n429)
		}
		if sent != n {
			b.Errorf("%d controls applied, want %d", sent, n)
		}
		if d := math.Abs(took.Seconds()-ideal.Seconds()) / ideal.Seconds(); d > 0.10 {
			b.Errorf("all %d commands done in %v, more than 10%% from the ideal %v", n, took, ideal)
		}
		b.ReportMetric(took.Seconds(), "done_s")
		b.ReportMetric(ideal.Seconds(), "ideal_s")
		b.ReportMetric(float64(n429), "429s")
	}
}

// Freshness: 500 devices, each read every 10 s for 60 s by a ticker-driven
// driver (as the poller does). Every device should be read every 10 s ± 1 s.
func BenchmarkFreshness(b *testing.B) {
	const (
		n      = 500
		every  = 10 * time.Second
		period = 60 * time.Second
	)
	for b.Loop() {
		h := newSimHarness(b, n, scheduler.Config{})
		start := time.Now()
		next := make([]time.Time, n)
		for i := range next {
			next[i] = start.Add(time.Duration(i) * every / n) // spread over the period
		}
		var pending sync.WaitGroup
		var failed atomic.Int64
		tick := time.NewTicker(50 * time.Millisecond)
		// Run a little past the period so the reads due just before its
		// end (the last devices' sixth) are submitted.
		for now := start; now.Sub(start) < period+every/n+100*time.Millisecond; now = <-tick.C {
			for i, d := range h.lights {
				if next[i].After(now) {
					continue
				}
				next[i] = next[i].Add(every)
				pending.Add(1)
				err := h.sched.State(d.SKU, d.Device, scheduler.PriorityPoll, func(_ cloud.DeviceState, err error) {
					if err != nil {
						failed.Add(1)
					}
					pending.Done()
				})
				if err != nil {
					pending.Done()
					b.Fatalf("submit read: %v", err)
				}
			}
		}
		tick.Stop()
		pending.Wait()
		reads := map[string][]time.Time{}
		for _, r := range h.sim.Requests() {
			if r.Endpoint == cloud.EndpointState && r.Code == http.StatusOK {
				reads[r.Device] = append(reads[r.Device], r.Time)
			}
		}
		n429 := rateLimited429(h.sim)
		h.close(b)
		var worst time.Duration
		var gaps []time.Duration
		outside, total := 0, 0
		for _, d := range h.lights {
			at := reads[d.Device]
			if len(at) < int(period/every) {
				b.Errorf("%s read %d times in %v, want %d", d.Device, len(at), period, period/every)
			}
			for i := 1; i < len(at); i++ {
				gap := at[i].Sub(at[i-1])
				dev := (gap - every).Abs()
				worst = max(worst, dev)
				gaps = append(gaps, dev)
				total++
				if dev > time.Second {
					outside++
				}
			}
		}
		slices.Sort(gaps)
		if outside > 0 {
			b.Errorf("%d of %d intervals outside 10 s ± 1 s (worst off by %v)", outside, total, worst)
		}
		if n429 != 0 || failed.Load() != 0 {
			b.Errorf("%d answers were 429 and %d reads failed, want none", n429, failed.Load())
		}
		b.ReportMetric(float64(total), "intervals")
		b.ReportMetric(float64(outside), "outside_1s")
		b.ReportMetric(worst.Seconds()*1000, "worst_dev_ms")
		if len(gaps) > 0 {
			b.ReportMetric(gaps[len(gaps)*99/100].Seconds()*1000, "p99_dev_ms")
		}
		b.ReportMetric(float64(n429), "429s")
	}
}

// Shared account: another client has taken half of the account's control
// bucket just before 100 lights get one command each. The scheduler cannot
// know; it must absorb the 429s and lose nothing. Ideal: (100-40)/12 = 5 s.
func BenchmarkSharedAccount(b *testing.B) {
	const n = 100
	for b.Loop() {
		h := newSimHarness(b, n, scheduler.Config{})
		drained := h.sim.DrainControl(40)
		ideal := time.Duration(float64(n-(80-drained)) / 12 * float64(time.Second))
		var w waiter
		start := time.Now()
		for i, d := range h.lights {
			w.submit(b, h.sched, brightness(d, i%100+1))
		}
		w.check(b)
		took := w.last.Sub(start)
		for i, d := range h.lights {
			if v, _ := h.sim.Value(d.Device, capability.InstanceBrightness); !capability.Equal(v, int64(i%100+1)) {
				b.Errorf("%s at brightness %v, want %d: a command was lost", d.Device, v, i%100+1)
			}
		}
		n429 := rateLimited429(h.sim)
		st := h.sched.Stats()
		h.close(b)
		b.ReportMetric(float64(drained), "drained")
		b.ReportMetric(float64(n429), "429s")
		b.ReportMetric(float64(st.Retries), "retries")
		b.ReportMetric(took.Seconds(), "done_s")
		b.ReportMetric(ideal.Seconds(), "ideal_s")
	}
}

// instantCloud answers every request at once, for the overhead benchmark.
type instantCloud struct{}

func (instantCloud) ListDevices(context.Context) ([]capability.Device, error) { return nil, nil }
func (instantCloud) State(context.Context, string, string) (cloud.DeviceState, error) {
	return cloud.DeviceState{}, nil
}
func (instantCloud) Scenes(context.Context, string, string) (cloud.Scenes, error) {
	return cloud.Scenes{}, nil
}
func (instantCloud) DIYScenes(context.Context, string, string) (cloud.Scenes, error) {
	return cloud.Scenes{}, nil
}
func (instantCloud) Control(context.Context, cloud.ControlRequest) (cloud.ControlResult, error) {
	return cloud.ControlResult{Code: 200}, nil
}

// Overhead: the cost of scheduling one command end to end (submit, queue,
// dispatch, answer, report) with budgets that never bind and a cloud that
// answers at once.
func BenchmarkOverhead(b *testing.B) {
	huge := scheduler.PerSecond(1e9, 1_000_000)
	s := scheduler.New(instantCloud{}, scheduler.Config{
		ControlAccount: huge, ControlDevice: huge, MaxInFlight: 64,
	}, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	const window = 512 // commands outstanding at once, below MaxQueuedCommands
	sem := make(chan struct{}, window)
	report := func(scheduler.CommandResult) { <-sem }
	reqs := make([]cloud.ControlRequest, 1000)
	for i := range reqs {
		reqs[i] = cloud.ControlRequest{SKU: "H6008", Device: fmt.Sprintf("dev%03d", i), Type: capability.TypeOnOff, Instance: capability.InstancePower, Value: int64(1)}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		sem <- struct{}{}
		if err := s.Control(reqs[i%len(reqs)], report); err != nil {
			b.Fatal(err)
		}
	}
	for range window {
		sem <- struct{}{}
	}
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Error(err)
	}
}

// BenchmarkObserveLimits is the scheduler's share of an answer that told
// the quota: what is left taken in, the windows renewed when due, a hold
// started when spent (not here).
func BenchmarkObserveLimits(b *testing.B) {
	s := scheduler.New(instantCloud{}, scheduler.Config{}, zerolog.Nop())
	reset := time.Now().Add(time.Hour)
	l := cloud.RateLimits{Quota: cloud.RateLimit{Limit: 10000, Remaining: 9876, HasRemaining: true, Reset: reset},
		Short: cloud.RateLimit{Limit: 100, Remaining: 99, HasRemaining: true, Reset: time.Now().Add(42 * time.Second)}}
	b.ReportAllocs()
	for b.Loop() {
		l.At = time.Now()
		s.ObserveLimits(l)
	}
}

// BenchmarkQuotaSnapshot is what the poller's look at the quota costs the
// scheduler once a wake: Quota() with both windows known.
func BenchmarkQuotaSnapshot(b *testing.B) {
	s := scheduler.New(instantCloud{}, scheduler.Config{}, zerolog.Nop())
	s.ObserveLimits(cloud.RateLimits{At: time.Now(), Quota: cloud.RateLimit{Limit: 10000, Remaining: 9876, HasRemaining: true, Reset: time.Now().Add(time.Hour)},
		Short: cloud.RateLimit{Limit: 100, Remaining: 99, HasRemaining: true, Reset: time.Now().Add(42 * time.Second)}})
	b.ReportAllocs()
	for b.Loop() {
		if q := s.Quota(); !q.Known() {
			b.Fatal(q)
		}
	}
}
