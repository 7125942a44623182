package mqtt

import (
	"testing"
	"time"

	"cloud2mqtt/internal/clock/clocktest"
)

// TestMemoryReleasesSpaced: memory goes back to the system at once after a
// large message, then at most once a second on the client's clock, however
// many messages ask in between.
func TestMemoryReleasesSpaced(t *testing.T) {
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	clk := clocktest.NewFrozen(start)
	c := &Client{cfg: Config{Clock: clk}}
	releasedAt := func(want time.Time) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			c.mu.Lock()
			releasing, released := c.releasing, c.released
			c.mu.Unlock()
			if !releasing && released.Equal(want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("releasing %v, last release at %v; want one done at %v", releasing, released, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	c.releaseMemory()
	releasedAt(start)

	c.releaseMemory()
	c.releaseMemory()
	if d := clk.Deadlines(); len(d) != 1 || !d[0].Equal(start.Add(releaseEvery)) {
		t.Fatalf("releases planned at %v, want one at %v", d, start.Add(releaseEvery))
	}
	clk.Advance(releaseEvery)
	releasedAt(start.Add(releaseEvery))
	if n := clk.Pending(); n != 0 {
		t.Errorf("%d releases still planned", n)
	}
}
