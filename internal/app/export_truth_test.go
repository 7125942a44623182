package app

import "time"

// Tuning are Main's timings a test shortens: the cloud's grace before it
// counts as unreachable, the state directory's and the stats' gathering
// delays, the scheduler's hold-off after a 401 and its cap on Retry-After,
// and the poller's recheck of devices without state. Zero keeps a default.
type Tuning struct {
	CloudGrace, SaveDelay, StatsDelay time.Duration
	AuthHoldoff, MaxRetryAfter        time.Duration
	StatelessRecheck                  time.Duration
}

// SetTuning sets m's timings; call it before Run.
func (m *Main) SetTuning(t Tuning) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tune = tuning{cloudGrace: t.CloudGrace, saveDelay: t.SaveDelay, statsDelay: t.StatsDelay,
		authHoldoff: t.AuthHoldoff, maxRetryAfter: t.MaxRetryAfter, statelessRecheck: t.StatelessRecheck}
}
