package poller

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"cloud2mqtt/internal/scheduler"
)

var paceNow = time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC)

// quotaOf is a scheduler's quota of one window: remaining of limit left,
// renewing in left, spanning span.
func quotaOf(limit, remaining int, left, span time.Duration) scheduler.Quota {
	var q scheduler.Quota
	q.Windows[scheduler.WindowQuota] = scheduler.QuotaWindow{Name: "API-RateLimit", Limit: limit, Remaining: remaining,
		HasRemaining: true, Reset: paceNow.Add(left), Span: span, Observed: paceNow}
	return q
}

// The reserve: a tenth of the limit (at least 2) for commands and reads on
// request, and the device-list refreshes due before the window renews.
func TestReserve(t *testing.T) {
	for _, tc := range []struct {
		limit int
		d     time.Duration
		want  int
	}{
		{45, 180 * time.Second, 5 + 1},
		{10000, 24 * time.Hour, 1000 + 144},
		{5, 10 * time.Second, 2 + 1},
		{45, 0, 5},
	} {
		if got := reserve(tc.limit, tc.d, DefaultListInterval); got != tc.want {
			t.Errorf("reserve(%d, %v) = %d, want %d", tc.limit, tc.d, got, tc.want)
		}
	}
}

// The pacer at explicit instants: a bucket filled at what is left over the
// time left, starting full up to the readers; scene rounds from their
// share and only beside the reads; nothing paced below the reserve.
func TestPacer(t *testing.T) {
	t.Run("no quota: everything goes", func(t *testing.T) {
		pc := newPacer()
		pc.look(paceNow, scheduler.Quota{}, DefaultListInterval)
		pc.decide(100, 100, 1000)
		for range 1000 {
			if at := pc.take(paceNow, 2, true); !at.Equal(paceNow) {
				t.Fatalf("paced to %v without a quota", at)
			}
		}
		if !pc.held().IsZero() || pc.capacity != 0 {
			t.Errorf("held %v, capacity %v", pc.held(), pc.capacity)
		}
	})
	t.Run("tight", func(t *testing.T) {
		pc := newPacer()
		q := quotaOf(45, 26, 100*time.Second, 180*time.Second)
		q.Pending = 6
		pc.look(paceNow, q, DefaultListInterval)
		// 26 left, 6 pending, reserve 5+1: 14 for the 100 s left.
		if pc.budget != 14 || math.Abs(pc.rate-0.14) > 1e-9 {
			t.Fatalf("budget %d, rate %v; want 14 and 0.14/s", pc.budget, pc.rate)
		}
		// (45-6)·0.9 per 180 s in the long run.
		if want := 39 * readsShare / 180; math.Abs(pc.capacity-want) > 1e-9 {
			t.Errorf("capacity %v, want %v", pc.capacity, want)
		}
		pc.decide(0.3, 0.05, 5)
		if !pc.tight || pc.burst != 5 {
			t.Fatalf("tight %v burst %v, want tight with a burst of the 5 readers", pc.tight, pc.burst)
		}
		for i := range 5 {
			if at := pc.take(paceNow, 1, false); !at.Equal(paceNow) {
				t.Fatalf("read %d of the burst paced to %v", i+1, at)
			}
		}
		// The sixth waits for a token: 1/0.14 s, on the grid.
		if at, want := pc.take(paceNow, 1, false), paceNow.Add(8*time.Second); !at.Equal(want) {
			t.Errorf("the sixth read at %v, want %v", at, want)
		}
		later := paceNow.Add(8 * time.Second)
		if at := pc.take(later, 1, false); !at.Equal(later) {
			t.Errorf("the sixth read asked again at %v: %v", later, at)
		}
		// A scene round: its share is full (2) but the bucket is not.
		if at := pc.take(later, 2, true); !at.After(later) {
			t.Error("a scene round went with an empty bucket")
		}
		if pc.budget != 8 {
			t.Errorf("budget %d after 6 reads, want 8", pc.budget)
		}
	})
	t.Run("scenes only beside the reads", func(t *testing.T) {
		pc := newPacer()
		pc.look(paceNow, quotaOf(10000, 2000, 12*time.Hour, 24*time.Hour), DefaultListInterval)
		// 2000-1000-72 = 928 left for 12 h; reads need 0.02/s · 43200 s = 864.
		pc.decide(0.001, 0.02, 18)
		if pc.tight {
			t.Fatal("tight though the reads fit")
		}
		for i := range 32 {
			if at := pc.take(paceNow, 2, true); !at.Equal(paceNow) {
				t.Fatalf("scene round %d paced", i+1)
			}
		}
		if at := pc.take(paceNow, 2, true); at.Equal(paceNow) {
			t.Error("a scene round took what the reads need")
		}
		if at := pc.take(paceNow, 1, false); !at.Equal(paceNow) {
			t.Error("a read waits though the reads fit")
		}
	})
	t.Run("the reserve is a floor", func(t *testing.T) {
		pc := newPacer()
		pc.look(paceNow, quotaOf(45, 6, 100*time.Second, 180*time.Second), DefaultListInterval)
		pc.decide(0.3, 0.2, 18)
		if at := pc.take(paceNow, 1, false); !at.Equal(paceNow.Add(time.Minute)) {
			t.Errorf("a read with only the reserve left: %v, want asked again in a minute", at)
		}
		if h := pc.held(); !h.Equal(paceNow.Add(100 * time.Second)) {
			t.Errorf("held until %v, want the window's renewal", h)
		}
		pc.look(paceNow, quotaOf(45, 6, 20*time.Second, 180*time.Second), DefaultListInterval)
		if at := pc.take(paceNow, 1, false); !at.Equal(paceNow.Add(20 * time.Second)) {
			t.Errorf("asked again at %v, want at the renewal", at)
		}
	})
}

// The interval the quota allows in the long run.
func TestQuotaInterval(t *testing.T) {
	pc := newPacer()
	pc.look(paceNow, quotaOf(45, 45, 180*time.Second, 180*time.Second), DefaultListInterval)
	// 18 devices, 39·0.9/180 reads a second: 18·180/35.1 = 92.3 s.
	if got := pc.quotaInterval(18, 0); got != 93*time.Second {
		t.Errorf("18 devices: %v, want 93s", got)
	}
	// README's table: 10 000 a day, (10000-1000-144)·0.9 = 7970 reads:
	// 18 devices every 3 min 16 s; 100 000 a day does not bind at 60 s.
	for _, tc := range []struct {
		limit int
		want  time.Duration
	}{{10_000, 196 * time.Second}, {100_000, 20 * time.Second}} {
		pd := newPacer()
		pd.look(paceNow, quotaOf(tc.limit, tc.limit, 24*time.Hour, 24*time.Hour), DefaultListInterval)
		if got := pd.quotaInterval(18, 0); got != tc.want {
			t.Errorf("18 devices, %d a day: %v, want %v", tc.limit, got, tc.want)
		}
	}
	if got := pc.quotaInterval(18, 1); got != day {
		t.Errorf("own reads beyond the quota: %v, want a day", got)
	}
	if none := newPacer(); none.quotaInterval(18, 0) != 0 {
		t.Error("an interval without a quota")
	}
}

// Only the periodic reads wait for the quota: a confirming read, a read on
// request and the device list go at once, out of the reserve.
func TestQuotaPacesOnlyPeriodicReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(3)...)
		h := start(t, f, Config{Interval: time.Minute, ListInterval: time.Hour, SceneInterval: time.Hour})
		time.Sleep(90 * time.Second) // first reads done, the second ones spread
		// Only the reserve is left of a window that renews in 5 min.
		setQuota := func(remaining int) time.Time {
			f.mu.Lock()
			defer f.mu.Unlock()
			now := time.Now()
			f.quota.Windows[scheduler.WindowQuota] = scheduler.QuotaWindow{Name: "API-RateLimit", Limit: 45, Remaining: remaining,
				HasRemaining: true, Reset: now.Add(5 * time.Minute), Span: 5 * time.Minute, Observed: now}
			return now.Add(5 * time.Minute)
		}
		renews := setQuota(6)
		before := len(f.filter(func(c call) bool { return c.kind == "state" }))
		time.Sleep(4 * time.Minute)
		if n := len(f.filter(func(c call) bool { return c.kind == "state" })); n != before {
			t.Errorf("%d periodic reads with only the reserve left", n-before)
		}
		if st := h.p.Stats(); !st.QuotaWait.Equal(renews) || st.Interval != time.Minute {
			t.Errorf("Stats() = %+v, want the interval unchanged and the reads waiting until %v", st, renews)
			t.Errorf("Stats().QuotaWait = %v, want the renewal", st.QuotaWait)
		}
		d := f.list[0]
		var o outcome
		if err := h.p.ReadNow(d.SKU, d.Device, o.done); err != nil {
			t.Fatal(err)
		}
		h.p.Confirm(f.list[1].SKU, f.list[1].Device)
		time.Sleep(3 * time.Second)
		if _, once, err := o.get(); !once || err != nil {
			t.Errorf("a read on request: once %v, err %v", once, err)
		}
		if n := len(f.reads(f.list[1].Device)); n == 0 || f.reads(f.list[1].Device)[n-1].prio != scheduler.PriorityConfirm {
			t.Error("the confirming read did not go")
		}
		// The window renews: the periodic reads resume.
		time.Sleep(time.Until(renews))
		setQuota(45)
		time.Sleep(2 * time.Minute)
		if n := len(f.reads(f.list[2].Device)); n < 3 {
			t.Errorf("%d reads of the third device once the quota renewed", n)
		}
	})
}

// Lights reached over the LAN cost the quota (almost) nothing: the quota's
// interval is planned for the devices the cloud reads.
func TestQuotaLeavesLocalLightsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(10)...)
		now := time.Now()
		f.quota.Windows[scheduler.WindowQuota] = scheduler.QuotaWindow{Name: "API-RateLimit", Limit: 2000, Remaining: 2000,
			HasRemaining: true, Reset: now.Add(24 * time.Hour), Span: 24 * time.Hour, Observed: now}
		h := start(t, f, Config{Interval: time.Minute, ListInterval: 10 * time.Minute})
		synctest.Wait()
		all := h.p.Stats().Interval
		for i := range 8 {
			h.p.SetLocal(key(devs(10)[i].Device), true, 0)
		}
		st := h.p.Stats()
		h.stop()
		// (2000-200-144)·0.9 = 1490 reads a day: 10 devices every 9 min
		// 40 s; the 2 the cloud reads (beside a read a day of each local
		// one) every 1 min 57 s.
		if all != 580*time.Second || st.Interval != 117*time.Second || st.Plan.Quota != st.Interval {
			t.Errorf("interval %v for 10 cloud devices, %v (plan %+v) for 2 beside 8 local ones", all, st.Interval, st.Plan)
		}
	})
}
