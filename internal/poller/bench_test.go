package poller

import (
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

// instantScheduler answers every request at once, on the caller's
// goroutine: the report lands in the poller's queue before the call returns.
type instantScheduler struct{ state cloud.DeviceState }

func (s *instantScheduler) State(sku, device string, _ scheduler.Priority, report func(cloud.DeviceState, error)) error {
	report(s.state, nil)
	return nil
}

func (s *instantScheduler) ListDevices(report func([]cloud.Device, error)) error {
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

type nopConsumer struct{}

func (nopConsumer) Devices(all, added, removed []cloud.Device)                  {}
func (nopConsumer) State(dev cloud.Device, online bool, changed map[string]any) {}
func (nopConsumer) Unreachable(dev cloud.Device, err error)                     {}
func (nopConsumer) Scenes(dev cloud.Device, light, diy []cloud.Option)          {}

// BenchmarkIdleWake measures one wake of the poller's loop on an idle
// account of 1000 devices at the default interval: the previous read's
// answer is applied and the one device now due is read. That is what the
// daemon does at that size about 17 times a second, in two wakes each.
func BenchmarkIdleWake(b *testing.B) {
	const n = 1000
	list := make([]cloud.Device, n)
	for i := range list {
		list[i] = dev(fmt.Sprintf("B%04d", i), i%2 == 0)
	}
	s := &instantScheduler{state: mkState("H6072", "any", true, map[string]any{cloud.InstancePower: 1, cloud.InstanceBrightness: 40})}
	p := New(s, nopConsumer{}, Config{Interval: DefaultInterval, ListInterval: 365 * day}, zerolog.Nop())
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.mu.Lock()
	p.onList(now, list, nil)
	p.effects = nil
	p.mu.Unlock()

	step := DefaultInterval / n // one device falls due every step
	// One full interval first: every device has had its first read (which
	// reports all values) and the first scene round.
	clock := func() time.Time { return now }
	for range 2 * n {
		p.cycle(clock)
		now = now.Add(step)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p.cycle(clock)
		now = now.Add(step)
	}
}
