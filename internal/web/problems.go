package web

import (
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// ProblemLog keeps the last warnings and errors for the page. The app adds
// what logging.Forwarder publishes on bridge/logging (AddJSON), so the
// page and the topic show the same records, redacted alike.
type ProblemLog struct {
	mu   sync.Mutex
	max  int
	next int
	ring []Problem
	now  func() time.Time
}

// NewProblemLog keeps the last n problems (50 when n <= 0); now stamps
// lines without a time (nil: time.Now).
func NewProblemLog(n int, now func() time.Time) *ProblemLog {
	if n <= 0 {
		n = 50
	}
	if now == nil {
		now = time.Now
	}
	return &ProblemLog{max: n, now: now}
}

// Add keeps p, forgetting the oldest beyond the log's size.
func (l *ProblemLog) Add(p Problem) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ring) < l.max {
		l.ring = append(l.ring, p)
		return
	}
	l.ring[l.next] = p
	l.next = (l.next + 1) % l.max
}

// AddJSON adds a bridge/logging payload: {"level":…,"message":…,
// "time":RFC 3339,…fields}. A payload that is not a JSON object is
// ignored (false).
func (l *ProblemLog) AddJSON(payload []byte) bool {
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil || m == nil {
		return false
	}
	p := Problem{Time: l.now()}
	if s, ok := m["level"].(string); ok {
		p.Level = s
		if s == "warn" {
			p.Level = "warning"
		}
	}
	if s, ok := m["message"].(string); ok {
		p.Message = s
	}
	if s, ok := m["time"].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			p.Time = t
		}
	}
	delete(m, "level")
	delete(m, "message")
	delete(m, "time")
	if len(m) > 0 {
		p.Fields = m
	}
	l.Add(p)
	return true
}

// Problems returns the problems kept, newest first.
func (l *ProblemLog) Problems() []Problem {
	l.mu.Lock()
	out := append(slices.Clone(l.ring[l.next:]), l.ring[:l.next]...) // oldest first
	l.mu.Unlock()
	sortProblems(out)
	return out
}

// sortProblems orders problems newest first (stable: equal times keep
// their order reversed, the later added first).
func sortProblems(ps []Problem) {
	slices.Reverse(ps)
	slices.SortStableFunc(ps, func(a, b Problem) int { return b.Time.Compare(a.Time) })
}
