package cloudsim

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"

	"golang.org/x/time/rate"
)

// manyLights is a catalogue of n lights with a power switch.
func manyLights(n int) *Catalogue {
	c := &Catalogue{}
	for i := range n {
		c.Devices = append(c.Devices, CatalogueDevice{Device: capability.Device{
			SKU: "H6008", Device: fmt.Sprintf("AA:BB:CC:DD:EE:FF:20:%02d", i), Type: capability.DeviceLight,
			Capabilities: []capability.Capability{{Type: capability.TypeOnOff, Instance: capability.InstancePower,
				Parameters: &capability.Parameters{DataType: capability.DataEnum, Options: []capability.Option{{Name: "on", Value: int64(1)}, {Name: "off", Value: int64(0)}}}}},
		}})
	}
	return c
}

func lightID(i int) string { return fmt.Sprintf("AA:BB:CC:DD:EE:FF:20:%02d", i) }

func (h *harness) power(i int) reply {
	h.t.Helper()
	return h.control("H6008", lightID(i), capability.TypeOnOff, capability.InstancePower, 1)
}

func wantStatus(t *testing.T, what string, r reply, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: HTTP %d %s, want %d", what, r.status, r.raw, status)
	}
}

// The spec's table, proved with a frozen clock: the request after the burst
// is refused, the one before is not, and refilling takes exactly 1/rate.
func TestRateLimitsExactlyAsSpec(t *testing.T) {
	t.Run("device list 30 per minute per account", func(t *testing.T) {
		h := start(t, Options{Catalogue: manyLights(1)})
		for i := 1; i <= 30; i++ {
			wantStatus(t, fmt.Sprintf("list %d", i), h.list(), 200)
		}
		r := h.list()
		wantStatus(t, "list 31", r, 429)
		if got := r.header.Get("Retry-After"); got != "2" {
			t.Fatalf("Retry-After = %q, want 2 (one token per 2 s)", got)
		}
		h.clock.Advance(2*time.Second - time.Nanosecond)
		wantStatus(t, "list just before 2 s", h.list(), 429)
		h.clock.Advance(time.Nanosecond)
		wantStatus(t, "list after 2 s", h.list(), 200)
		wantStatus(t, "list after that", h.list(), 429)
		if n := h.sim.Counts().RateLimited[BucketDevices]; n != 3 {
			t.Fatalf("429s counted in devices bucket = %d, want 3", n)
		}
	})

	t.Run("control 80 burst per account over 14 devices, then 12 per second", func(t *testing.T) {
		h := start(t, Options{Catalogue: manyLights(14)})
		for i := range 80 {
			wantStatus(t, fmt.Sprintf("control %d", i+1), h.power(i%14), 200)
		}
		r := h.power(80 % 14)
		wantStatus(t, "control 81", r, 429)
		if r.header.Get("Retry-After") != "1" {
			t.Fatalf("Retry-After = %q, want 1", r.header.Get("Retry-After"))
		}
		if n := h.sim.Counts().RateLimited[BucketControlAccount]; n != 1 {
			t.Fatalf("account bucket refusals = %d", n)
		}
		h.clock.Advance(time.Second/12 - time.Millisecond)
		wantStatus(t, "control before 1/12 s", h.power(13), 429)
		h.clock.Advance(time.Millisecond + 1) // now 1/12 s (rounded up) later
		wantStatus(t, "control after 1/12 s", h.power(13), 200)
		wantStatus(t, "second control after 1/12 s", h.power(12), 429)
		// A whole second refills 12.
		h.clock.Advance(time.Second)
		for i := range 12 {
			wantStatus(t, fmt.Sprintf("refill %d", i+1), h.power(i), 200)
		}
		wantStatus(t, "refill 13", h.power(12), 429)
	})

	t.Run("control 6 burst per device, then 2 per second", func(t *testing.T) {
		h := start(t, Options{Catalogue: manyLights(2)})
		for i := 1; i <= 6; i++ {
			wantStatus(t, fmt.Sprintf("control %d", i), h.power(0), 200)
		}
		r := h.power(0)
		wantStatus(t, "control 7 to one device", r, 429)
		if n := h.sim.Counts().RateLimited[BucketControlDevice]; n != 1 {
			t.Fatalf("device bucket refusals = %d", n)
		}
		// Another device has its own bucket.
		for i := 1; i <= 6; i++ {
			wantStatus(t, fmt.Sprintf("other device %d", i), h.power(1), 200)
		}
		h.clock.Advance(500*time.Millisecond - time.Nanosecond)
		wantStatus(t, "before 0.5 s", h.power(0), 429)
		h.clock.Advance(time.Nanosecond)
		wantStatus(t, "after 0.5 s", h.power(0), 200)
		wantStatus(t, "again", h.power(0), 429)
	})

	for _, ep := range []struct{ name, path, bucket string }{
		{"state", cloud.PathState, BucketState},
		{"scenes", cloud.PathScenes, BucketScenes},
		{"diy-scenes", cloud.PathDIYScenes, BucketDIYScenes},
	} {
		t.Run(ep.name+" 30 per minute per device", func(t *testing.T) {
			h := start(t, Options{Catalogue: manyLights(2)})
			for i := 1; i <= 30; i++ {
				wantStatus(t, fmt.Sprintf("%s %d", ep.name, i), h.scenes(ep.path, "H6008", lightID(0)), 200)
			}
			r := h.scenes(ep.path, "H6008", lightID(0))
			wantStatus(t, ep.name+" 31", r, 429)
			if r.header.Get("Retry-After") != "2" {
				t.Fatalf("Retry-After = %q", r.header.Get("Retry-After"))
			}
			// Other device, other bucket; other endpoints untouched.
			wantStatus(t, "other device", h.scenes(ep.path, "H6008", lightID(1)), 200)
			for _, other := range []string{cloud.PathState, cloud.PathScenes, cloud.PathDIYScenes} {
				if other != ep.path {
					wantStatus(t, "other endpoint "+other, h.scenes(other, "H6008", lightID(0)), 200)
				}
			}
			h.clock.Advance(2 * time.Second)
			wantStatus(t, "after 2 s", h.scenes(ep.path, "H6008", lightID(0)), 200)
			wantStatus(t, "and then", h.scenes(ep.path, "H6008", lightID(0)), 429)
			if n := h.sim.Counts().RateLimited[ep.bucket]; n != 2 {
				t.Fatalf("%s refusals = %d", ep.bucket, n)
			}
		})
	}
}

// A control refused by one bucket costs the other bucket nothing.
func TestControlRefusalTakesNoToken(t *testing.T) {
	h := start(t, Options{Catalogue: manyLights(20)})
	// Device 0 uses its 6, then 10 refused requests must not touch the
	// account bucket: 74 more controls on other devices still pass.
	for range 6 {
		wantStatus(t, "device 0", h.power(0), 200)
	}
	for range 10 {
		wantStatus(t, "device 0 refused", h.power(0), 429)
	}
	for i := range 74 {
		wantStatus(t, fmt.Sprintf("account control %d", 7+i), h.power(1+i%19), 200)
	}
	wantStatus(t, "account control 81", h.power(19), 429)
	// The account refused that one: device 19's bucket still has its tokens
	// (it got 3 of the 74 above and keeps 3).
	h.clock.Advance(time.Second) // 12 account tokens, 2 more for device 19
	for i := range 5 {
		wantStatus(t, fmt.Sprintf("device 19 control %d", i+1), h.power(19), 200)
	}
	wantStatus(t, "device 19 control 6", h.power(19), 429)
}

// Wrong requests spend no token: the gate is after the request checks.
func TestBadRequestsSpendNoToken(t *testing.T) {
	h := start(t, Options{Catalogue: manyLights(1), Limits: Limits{ControlDevice: Limit{Rate: 1, Burst: 1}}})
	for range 5 {
		wantStatus(t, "bad json", h.do(http.MethodPost, cloud.PathControl, `{"requestId":`, nil), 400)
	}
	wantStatus(t, "first good control", h.power(0), 200)
	wantStatus(t, "second good control", h.power(0), 429)
}

func TestLimitsOverride(t *testing.T) {
	h := start(t, Options{Catalogue: manyLights(1), Limits: Limits{Devices: Unlimited, State: Limit{Rate: 1, Burst: 2}}})
	for i := range 100 {
		wantStatus(t, fmt.Sprintf("list %d", i), h.list(), 200)
	}
	wantStatus(t, "state 1", h.state("H6008", lightID(0)), 200)
	wantStatus(t, "state 2", h.state("H6008", lightID(0)), 200)
	wantStatus(t, "state 3", h.state("H6008", lightID(0)), 429)
	// Untouched rows keep the spec's numbers.
	if got := SpecLimits(); got.ControlAccount != (Limit{Rate: 12, Burst: 80}) || got.ControlDevice != (Limit{Rate: 2, Burst: 6}) ||
		got.Devices != (Limit{Rate: 0.5, Burst: 30}) || got.State != got.Devices || got.Scenes != got.Devices || got.DIYScenes != got.Devices {
		t.Fatalf("SpecLimits = %+v", got)
	}
}

func TestEmptyRateLimitBody(t *testing.T) {
	for _, empty := range []bool{false, true} {
		h := start(t, Options{Catalogue: manyLights(1), EmptyRateLimitBody: empty, Limits: Limits{Devices: Limit{Rate: 1, Burst: 1}}})
		h.list()
		r := h.list()
		wantStatus(t, "second list", r, 429)
		if empty && len(r.raw) != 0 {
			t.Fatalf("body %q, want empty", r.raw)
		}
		if !empty && (r.code() != 429 || r.msg() != "Too Many Requests") {
			t.Fatalf("body %s", r.raw)
		}
		if r.header.Get("Retry-After") != "1" {
			t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
		}
	}
}

func TestDrainControl(t *testing.T) {
	h := start(t, Options{Catalogue: manyLights(14)})
	if got := h.sim.DrainControl(75); got != 75 {
		t.Fatalf("drained %d, want 75", got)
	}
	for i := range 5 {
		wantStatus(t, fmt.Sprintf("control %d", i), h.power(i), 200)
	}
	wantStatus(t, "control 6", h.power(6), 429)
	if got := h.sim.DrainControl(10); got != 0 {
		t.Fatalf("drained %d from an empty bucket", got)
	}
	h.clock.Advance(time.Second)
	if got := h.sim.DrainControl(100); got != 12 {
		t.Fatalf("drained %d after 1 s, want 12", got)
	}
}

// allowedAt must agree with AllowN, which it stands in for, at arbitrary
// instants and rates (including the sub-nanosecond deficits AllowN forgives).
func TestAllowedAtAgreesWithAllowN(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	base := newClock().Now()
	for _, lim := range []Limit{{12, 80}, {2, 6}, {0.5, 30}, {7, 3}, {rate.Inf, 1}} {
		a, b := rate.NewLimiter(lim.Rate, lim.Burst), rate.NewLimiter(lim.Rate, lim.Burst)
		now := base
		for range 5000 {
			now = now.Add(time.Duration(r.Int64N(int64(time.Second / 6))))
			ok, wait := allowedAt(a, now)
			if got := b.AllowN(now, 1); got != ok {
				t.Fatalf("limit %+v at %v: allowedAt %v, AllowN %v", lim, now.Sub(base), ok, got)
			}
			if ok {
				a.AllowN(now, 1)
			} else if wait <= 0 {
				t.Fatalf("refused with wait %v", wait)
			}
		}
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	for wait, want := range map[time.Duration]int64{
		0: 1, time.Nanosecond: 1, time.Second: 1, time.Second + 1: 2, 2 * time.Second: 2, 83 * time.Millisecond: 1,
	} {
		if got := retryAfterSeconds(wait); got != want {
			t.Errorf("retryAfterSeconds(%v) = %d, want %d", wait, got, want)
		}
	}
}

// When both control buckets refuse, Retry-After covers the longer wait.
func TestRetryAfterCoversBothBuckets(t *testing.T) {
	h := start(t, Options{Catalogue: manyLights(1), Limits: Limits{
		ControlAccount: Limit{Rate: 1, Burst: 1}, ControlDevice: Limit{Rate: 0.25, Burst: 1}}})
	wantStatus(t, "first", h.power(0), 200)
	r := h.power(0)
	wantStatus(t, "second", r, 429)
	if r.header.Get("Retry-After") != "4" {
		t.Fatalf("Retry-After = %q, want 4 (the device bucket's wait)", r.header.Get("Retry-After"))
	}
	if n := h.sim.Counts().RateLimited[BucketControlAccount]; n != 1 {
		t.Fatalf("refusal counted against %v", h.sim.Counts().RateLimited)
	}
}
