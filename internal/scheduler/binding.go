package scheduler

import "time"

// Binding is the account's quota as the bridge shows it (bridge/stats,
// /metrics, the status page): the window that binds now, the smaller
// winning (the learned windows and CLOUD_DAILY_LIMIT, the one whose
// remainder lasts the shortest at an even pace until it renews), where it
// comes from, and the forecast at the pace of the last ten minutes.
type Binding struct {
	Limit     int // 0 when the cloud said only what is left
	Remaining int
	Reset     time.Time // zero when unknown
	Source    string    // QuotaLearned or QuotaConfigured
	Window    string    // "API-RateLimit", "X-RateLimit" or "CLOUD_DAILY_LIMIT"
	// Fits says whether the requests at the current pace fit what is left
	// until the window renews; nil until a minute of requests was seen.
	Fits *bool
	// RunsOut is when what is left runs out at the current pace, when it
	// does not fit (zero otherwise).
	RunsOut time.Time
	// PacePerHour is the requests an hour over the last ten minutes.
	PacePerHour float64
}

// Binding picks the window that binds at now, with CLOUD_DAILY_LIMIT
// (dailyLimit, 0: none) of which requestsToday are spent, renewing at the
// next local midnight; ok is false when no quota is known (no rate-limit
// header seen, no daily limit).
func (q Quota) Binding(dailyLimit, requestsToday int, now time.Time) (v Binding, ok bool) {
	var cands []Binding
	for _, w := range q.Windows {
		if w.Known() && (w.Limit > 0 || w.HasRemaining) {
			rem := w.Remaining
			if !w.HasRemaining {
				rem = w.Limit
			}
			cands = append(cands, Binding{Limit: w.Limit, Remaining: rem, Reset: w.Reset, Source: QuotaLearned, Window: w.Name})
		}
	}
	if dailyLimit > 0 {
		y, m, d := now.Date()
		cands = append(cands, Binding{Limit: dailyLimit, Remaining: max(dailyLimit-requestsToday, 0),
			Reset: time.Date(y, m, d+1, 0, 0, 0, 0, now.Location()), Source: QuotaConfigured, Window: "CLOUD_DAILY_LIMIT"})
	}
	for _, c := range cands {
		if !ok || c.lasts(now) < v.lasts(now) {
			v, ok = c, true
		}
	}
	if !ok {
		return v, false
	}
	if q.PaceOver > 0 {
		v.PacePerHour = q.Pace * 3600
		fits := true
		if !v.Reset.IsZero() {
			fits = q.Pace*v.Reset.Sub(now).Seconds() <= float64(v.Remaining)
		}
		v.Fits = &fits
		if !fits && q.Pace > 0 {
			v.RunsOut = now.Add(time.Duration(float64(v.Remaining) / q.Pace * float64(time.Second))).Truncate(time.Minute)
		}
	}
	return v, true
}

// lasts is what is left a second until the window renews: the smaller
// binds. Without a reset, what is left over a day.
func (v Binding) lasts(now time.Time) float64 {
	left := 24 * time.Hour
	if !v.Reset.IsZero() {
		left = max(v.Reset.Sub(now), time.Second)
	}
	return float64(v.Remaining) / left.Seconds()
}
