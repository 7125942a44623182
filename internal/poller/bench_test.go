package poller

import (
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
)

// instantScheduler answers every request at once, on the caller's
// goroutine: the report lands in the poller's queue before the call returns.
type instantScheduler struct{ state cloud.DeviceState }

func (s *instantScheduler) State(sku, device string, _ scheduler.Priority, report func(cloud.DeviceState, error)) error {
	report(s.state, nil)
	return nil
}

func (s *instantScheduler) Held(sku, device string) (scheduler.Hold, bool) {
	return scheduler.Hold{}, false
}

func (s *instantScheduler) Quota() scheduler.Quota { return scheduler.Quota{} }

func (s *instantScheduler) ListDevices(report func([]capability.Device, error)) error {
	report(nil, fmt.Errorf("bench: no list"))
	return nil
}

func (s *instantScheduler) Scenes(sku, device string, report func(cloud.Scenes, error)) error {
	report(cloud.Scenes{}, nil)
	return nil
}

func (s *instantScheduler) DIYScenes(sku, device string, report func(cloud.Scenes, error)) error {
	report(cloud.Scenes{}, nil)
	return nil
}

// handClock is a clock a test or a benchmark sets by hand, for those that
// drive the loop's cycle themselves: Run is not called, so nothing makes a
// timer.
type handClock struct{ now time.Time }

func (c *handClock) Now() time.Time                       { return c.now }
func (c *handClock) NewTimer(time.Duration) clock.Timer   { panic("handClock: no timers") }
func (c *handClock) NewTicker(time.Duration) clock.Ticker { panic("handClock: no tickers") }
func (c *handClock) AfterFunc(time.Duration, func()) clock.Timer {
	panic("handClock: no timers")
}

// BenchmarkIdleWake measures one wake of the poller's loop on an idle
// account of 1000 devices: the previous batch's answers are applied and
// the 100 devices due at this 6 s grid instant are read. Compare per read,
// not per wake, since the grid decides how many reads a wake holds.
func BenchmarkIdleWake(b *testing.B) {
	const n = 1000
	list := make([]capability.Device, n)
	for i := range list {
		list[i] = dev(fmt.Sprintf("B%04d", i), i%2 == 0)
	}
	s := &instantScheduler{state: mkState("H6072", "any", true, map[string]any{capability.InstancePower: 1, capability.InstanceBrightness: 40})}
	clk := &handClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := New(s, registry.New(zerolog.Nop()), Config{Interval: DefaultInterval, ListInterval: 365 * day, Clock: clk}, zerolog.Nop())
	p.mu.Lock()
	p.onList(clk.now, list, nil)
	p.effects = nil
	p.nextList = clk.now.Add(365 * day)
	p.mu.Unlock()

	// The loop wakes a little after the grid instant it asked for, as a
	// timer does.
	const late = 50 * time.Microsecond
	clk.now = clk.now.Add(late)
	// cycle is one wake of the loop at clk.now; it returns the next.
	cycle := func() time.Time {
		next := p.cycle()
		// The answers of this wake's reads came at once (on the caller's
		// goroutine) and kicked the loop: as Run does, it looks again at
		// the same instant to apply them.
		for kicked := true; kicked; {
			select {
			case <-p.kick.C():
				p.kick.Take()()
				next = p.cycle()
			default:
				kicked = false
			}
		}
		return next
	}
	grid := p.Stats().Grid
	if grid != 6*time.Second {
		b.Fatalf("grid of 1000 devices at %v: %v, want 6s", DefaultInterval, grid)
	}
	wake := func() {
		next := cycle()
		if next.Sub(clk.now) != grid-late {
			b.Fatalf("next wake %v after this one, want the next grid instant", next.Sub(clk.now))
		}
		clk.now = next.Add(late)
	}
	// Three intervals first: every device has had its first read (which
	// reports all values), its second at its place in the spread (the
	// interval after the first's) and the first scene round.
	for end := clk.now.Add(3 * DefaultInterval); clk.now.Before(end); {
		clk.now = cycle().Add(late)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		wake()
	}
	// The reads of a wake: what to compare with a finer grid's figure.
	perWake := float64(n) * grid.Seconds() / DefaultInterval.Seconds()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/perWake, "ns/read")
}

// BenchmarkPacerLook is the pacer's share of a wake of the loop with a
// quota known: the quota taken, whether it binds decided, a read paced.
func BenchmarkPacerLook(b *testing.B) {
	q := quotaOf(10000, 6000, 12*time.Hour, 24*time.Hour)
	q.Windows[scheduler.WindowShort] = scheduler.QuotaWindow{Name: "X-RateLimit", Limit: 100, Remaining: 80,
		HasRemaining: true, Reset: paceNow.Add(30 * time.Second), Span: time.Minute, Observed: paceNow}
	pc := newPacer()
	now := paceNow
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		pc.look(now, q, DefaultListInterval)
		pc.decide(0.3, 0.25, 18)
		pc.take(now, 1, false)
	}
}
