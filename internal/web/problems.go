package web

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// ProblemLog keeps the last warnings and errors for the page, fed with what
// bridge/logging publishes so that both show the same, redacted records.
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

// AddJSON adds a bridge/logging payload; one that is not a JSON object is
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

// describe writes a problem in a person's words: the device's name rather than
// its id, what happened and why. Other fields are for the curious.
func describe(p Problem) (text, hint string) {
	ref, _ := p.Fields["device"].(string)
	subject := p.DeviceName
	if subject == "" {
		subject = ref // a device the bridge no longer lists: its id is all there is
	}
	why, _ := p.Fields["error"].(string)
	if p.DeviceName != "" {
		for _, r := range append([]string{ref}, p.DeviceRefs...) {
			if r != "" {
				why = strings.ReplaceAll(why, r, p.DeviceName)
			}
		}
	}
	what := strings.TrimSpace(p.Message)
	switch {
	case what == "":
		what, why = why, ""
	case why != "":
		what += " — " + why
	}
	if subject != "" {
		text = subject + ": " + what
	} else {
		text = upperFirst(what)
	}
	for _, k := range []string{"clear_with", "hint"} {
		if s, ok := p.Fields[k].(string); ok && s != "" {
			hint = s
			break
		}
	}
	return text, hint
}

// upperFirst is s with its first letter a capital.
func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 || !unicode.IsLower(r) {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}
