package cloudsim

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"cloud2mqtt/internal/cloud"

	"github.com/rs/zerolog"
)

// The quota: every answer to a request with the key says what is left, a
// request beyond it is answered 429 with Retry-After until the window
// renews, and a refusal costs nothing.
func TestQuotaHeadersAndRefusal(t *testing.T) {
	h := start(t, Options{Catalogue: manyLights(2), Quota: Quota{Limit: 3, Window: time.Minute}})
	h.clock.Advance(10 * time.Second) // 50 s before the window renews
	for i, r := range []reply{h.list(), h.state("H6008", lightID(0)), h.state("H6008", "nosuch")} {
		if r.status == 429 {
			t.Fatalf("request %d refused: %s", i+1, r.raw)
		}
		want := [3]string{"3", strconv.Itoa(2 - i), "50"}
		got := [3]string{r.header.Get(cloud.HeaderQuotaLimit), r.header.Get(cloud.HeaderQuotaRemaining), r.header.Get(cloud.HeaderQuotaReset)}
		if got != want {
			t.Errorf("answer %d (HTTP %d): headers %v, want %v", i+1, r.status, got, want)
		}
	}
	r := h.power(1)
	wantStatus(t, "the fourth request", r, 429)
	if r.header.Get("Retry-After") != "50" || r.header.Get(cloud.HeaderQuotaRemaining) != "0" {
		t.Errorf("the refusal's headers: %v", r.header)
	}
	if n := h.sim.Counts().RateLimited[BucketQuota]; n != 1 {
		t.Errorf("%d refusals counted against the quota, want 1", n)
	}
	if len(h.sim.ControlLog()) != 0 {
		t.Error("a control refused by the quota was applied")
	}
	// A wrong key is refused before the quota: it neither counts nor is told.
	bad := h.do(http.MethodGet, cloud.PathDevices, nil, map[string]string{DefaultKeyHeader: "wrong"})
	if bad.status != 401 || bad.header.Get(cloud.HeaderQuotaLimit) != "" {
		t.Errorf("a wrong key: HTTP %d, headers %v", bad.status, bad.header)
	}
	h.clock.Advance(50*time.Second - time.Nanosecond)
	wantStatus(t, "just before the window renews", h.list(), 429)
	h.clock.Advance(time.Nanosecond)
	r = h.list()
	wantStatus(t, "after the window renewed", r, 200)
	if r.header.Get(cloud.HeaderQuotaRemaining) != "2" || r.header.Get(cloud.HeaderQuotaReset) != "60" {
		t.Errorf("the new window's headers: %v", r.header)
	}
	if left, renews, ok := h.sim.QuotaLeft(); !ok || left != 2 || !renews.Equal(h.clock.Now().Add(time.Minute)) {
		t.Errorf("QuotaLeft = %d, %v, %v", left, renews, ok)
	}
	// Another app spends the rest.
	if n := h.sim.SpendQuota(5); n != 2 {
		t.Errorf("SpendQuota spent %d, want the 2 left", n)
	}
	wantStatus(t, "after another app spent the quota", h.list(), 429)
}

// Without a quota the answers carry no rate-limit header.
func TestNoQuotaNoHeaders(t *testing.T) {
	h := start(t, Options{Catalogue: manyLights(1)})
	for range 3 {
		r := h.list()
		for _, k := range []string{cloud.HeaderQuotaLimit, cloud.HeaderQuotaRemaining, cloud.HeaderQuotaReset,
			cloud.HeaderShortLimit, cloud.HeaderShortRemaining, cloud.HeaderShortReset} {
			if v := r.header.Get(k); v != "" {
				t.Fatalf("%s: %q without a quota", k, v)
			}
		}
	}
	if _, _, ok := h.sim.QuotaLeft(); ok {
		t.Error("QuotaLeft says there is a quota")
	}
}

// Both windows: a request must pass both and counts against both; the
// longer wait wins the Retry-After.
func TestShortQuota(t *testing.T) {
	h := start(t, Options{Catalogue: manyLights(1),
		Quota: Quota{Limit: 10, Window: time.Hour}, ShortQuota: Quota{Limit: 2, Window: 10 * time.Second}})
	wantStatus(t, "1", h.list(), 200)
	r := h.list()
	wantStatus(t, "2", r, 200)
	if r.header.Get(cloud.HeaderShortRemaining) != "0" || r.header.Get(cloud.HeaderQuotaRemaining) != "8" {
		t.Fatalf("headers %v", r.header)
	}
	r = h.list()
	wantStatus(t, "3", r, 429)
	if r.header.Get("Retry-After") != "10" || h.sim.Counts().RateLimited[BucketShortQuota] != 1 {
		t.Errorf("refused by the short window: Retry-After %q, counts %v", r.header.Get("Retry-After"), h.sim.Counts().RateLimited)
	}
	h.clock.Advance(10 * time.Second)
	r = h.list()
	wantStatus(t, "4", r, 200)
	if r.header.Get(cloud.HeaderQuotaRemaining) != "7" {
		t.Errorf("the refusal was counted against the quota: %v", r.header)
	}
}

// The three forms of Reset read back as the same instant by the bridge's
// client.
func TestQuotaResetFormats(t *testing.T) {
	for _, f := range []string{"seconds", "unix", "unix-ms"} {
		t.Run(f, func(t *testing.T) {
			format, ok := ParseResetFormat(f)
			if !ok {
				t.Fatal(f)
			}
			sim := New(Options{Catalogue: manyLights(1), Quota: Quota{Limit: 45, Window: 180 * time.Second, Reset: format}})
			srv := httptest.NewServer(sim)
			defer srv.Close()
			var mu sync.Mutex
			var got cloud.RateLimits
			c, err := cloud.New(cloud.Config{BaseURL: srv.URL, APIKey: sim.APIKey(), HTTPClient: srv.Client(), Logger: zerolog.Nop(),
				OnLimits: func(l cloud.RateLimits) { mu.Lock(); got = l; mu.Unlock() }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.ListDevices(context.Background()); err != nil {
				t.Fatal(err)
			}
			_, renews, _ := sim.QuotaLeft()
			mu.Lock()
			defer mu.Unlock()
			if d := got.Quota.Reset.Sub(renews); got.Quota.Limit != 45 || got.Quota.Remaining != 44 || d < -time.Second || d > time.Second {
				t.Errorf("read %+v, want 44 of 45 left until %v", got.Quota, renews)
			}
		})
	}
	if _, ok := ParseResetFormat("fortnights"); ok {
		t.Error("an unknown format parsed")
	}
}
