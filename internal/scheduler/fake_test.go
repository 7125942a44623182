package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

// call is one request as the fake cloud saw it arrive.
type call struct {
	ep                    string
	sku, device, instance string
	value                 any
	at                    time.Time // arrival
}

func (c call) String() string {
	if c.instance != "" {
		return fmt.Sprintf("%s %s %s=%v", c.ep, c.device, c.instance, c.value)
	}
	return c.ep + " " + c.device
}

// fakeCloud records every request with its arrival instant (fake time in a
// synctest bubble), applies control values and answers as its hooks say.
type fakeCloud struct {
	// arrive is the latency from sending to arrival; respond from arrival
	// to the answer. Nil means none.
	arrive, respond func(call) time.Duration
	// fail decides the error for a request; nil means success. n counts
	// earlier requests to the same endpoint and device.
	fail func(c call, n int) error
	// limits, when set, are the rate-limit headers of each answer (the
	// request and its outcome): observe hears of them as the cloud
	// client's OnLimits would, and a failure carries them.
	limits  func(c call, err error) cloud.RateLimits
	observe func(cloud.RateLimits)

	mu     sync.Mutex
	calls  []call
	counts map[string]int
	values map[string]any // device/instance → last applied value
}

func newFake() *fakeCloud {
	return &fakeCloud{counts: map[string]int{}, values: map[string]any{}}
}

func (f *fakeCloud) do(ctx context.Context, c call) error {
	if f.arrive != nil {
		if d := f.arrive(c); d > 0 {
			time.Sleep(d)
		}
	}
	c.at = time.Now()
	f.mu.Lock()
	key := c.ep + " " + c.device
	n := f.counts[key]
	f.counts[key]++
	f.calls = append(f.calls, c)
	var err error
	if f.fail != nil {
		err = f.fail(c, n)
	}
	if err == nil && c.ep == cloud.EndpointControl {
		f.values[c.device+"/"+c.instance] = c.value
	}
	f.mu.Unlock()
	if f.limits != nil {
		l := f.limits(c, err)
		var ae *cloud.APIError
		if errors.As(err, &ae) {
			ae.Limits = l
		}
		if f.observe != nil && l.Known() {
			f.observe(l)
		}
	}
	if f.respond != nil {
		if d := f.respond(c); d > 0 {
			time.Sleep(d)
		}
	}
	if err == nil {
		err = ctx.Err()
	}
	return err
}

func (f *fakeCloud) ListDevices(ctx context.Context) ([]capability.Device, error) {
	if err := f.do(ctx, call{ep: cloud.EndpointDevices}); err != nil {
		return nil, err
	}
	return []capability.Device{{SKU: "H1", Device: "d1"}}, nil
}

func (f *fakeCloud) State(ctx context.Context, sku, device string) (cloud.DeviceState, error) {
	if err := f.do(ctx, call{ep: cloud.EndpointState, sku: sku, device: device}); err != nil {
		return cloud.DeviceState{}, err
	}
	return cloud.DeviceState{SKU: sku, Device: device}, nil
}

func (f *fakeCloud) Scenes(ctx context.Context, sku, device string) (cloud.Scenes, error) {
	if err := f.do(ctx, call{ep: cloud.EndpointScenes, sku: sku, device: device}); err != nil {
		return cloud.Scenes{}, err
	}
	return cloud.Scenes{SKU: sku, Device: device}, nil
}

func (f *fakeCloud) DIYScenes(ctx context.Context, sku, device string) (cloud.Scenes, error) {
	if err := f.do(ctx, call{ep: cloud.EndpointDIYScenes, sku: sku, device: device}); err != nil {
		return cloud.Scenes{}, err
	}
	return cloud.Scenes{SKU: sku, Device: device}, nil
}

func (f *fakeCloud) Control(ctx context.Context, req cloud.ControlRequest) (cloud.ControlResult, error) {
	c := call{ep: cloud.EndpointControl, sku: req.SKU, device: req.Device, instance: req.Instance, value: req.Value}
	if err := f.do(ctx, c); err != nil {
		return cloud.ControlResult{}, err
	}
	return cloud.ControlResult{Code: 200, Msg: "success"}, nil
}

func (f *fakeCloud) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeCloud) Value(device, instance string) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.values[device+"/"+instance]
}

// run starts s.Run in the bubble; stop cancels it and waits for it.
func run(t *testing.T, s *scheduler.Scheduler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	return func() {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

func newScheduler(f *fakeCloud, cfg scheduler.Config) *scheduler.Scheduler {
	return scheduler.New(f, cfg, zerolog.Nop())
}

func ctl(device, instance string, v any) cloud.ControlRequest {
	return cloud.ControlRequest{SKU: "H6008", Device: device, Type: capability.TypeRange, Instance: instance, Value: v}
}

// reports collects command results and proves each report is called once.
type reports struct {
	t  *testing.T
	mu sync.Mutex
	// by submission number
	got   map[int]scheduler.CommandResult
	calls map[int]int
	next  int
}

func newReports(t *testing.T) *reports {
	return &reports{t: t, got: map[int]scheduler.CommandResult{}, calls: map[int]int{}}
}

// fn returns a report function for the next submission and its number.
func (r *reports) fn() (func(scheduler.CommandResult), int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.next
	r.next++
	return func(res scheduler.CommandResult) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls[id]++
		r.got[id] = res
	}, id
}

func (r *reports) submit(s *scheduler.Scheduler, req cloud.ControlRequest) int {
	r.t.Helper()
	f, id := r.fn()
	if err := s.Control(req, f); err != nil {
		r.t.Fatalf("Control(%v): %v", req, err)
	}
	return id
}

func (r *reports) result(id int) scheduler.CommandResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[id]
}

// checkOnce fails unless every submission was reported exactly once.
func (r *reports) checkOnce() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.next {
		if n := r.calls[id]; n != 1 {
			r.t.Errorf("submission %d reported %d times, want exactly once", id, n)
		}
	}
}

// checkBucket replays arrival instants through a reference token bucket,
// the cloud's, and fails at the first request it would have answered 429.
func checkBucket(t *testing.T, name string, at []time.Time, l scheduler.Limit) {
	t.Helper()
	at = slices.Clone(at)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	lim := rate.NewLimiter(l.Rate, l.Burst)
	for i, a := range at {
		if !lim.AllowN(a, 1) {
			t.Errorf("%s: request %d of %d at %v exceeds %v/s burst %d (previous at %v)",
				name, i+1, len(at), a.Format("15:04:05.000000"), float64(l.Rate), l.Burst, at[max(i-1, 0)].Format("15:04:05.000000"))
			return
		}
	}
}

// byDevice groups arrival instants of one endpoint by device.
func byDevice(calls []call, ep string) map[string][]time.Time {
	out := map[string][]time.Time{}
	for _, c := range calls {
		if c.ep == ep {
			out[c.device] = append(out[c.device], c.at)
		}
	}
	return out
}

func instants(calls []call, ep string) []time.Time {
	var out []time.Time
	for _, c := range calls {
		if c.ep == ep {
			out = append(out, c.at)
		}
	}
	return out
}
