package web

import (
	"math"
	"testing"
	"time"
)

func TestHistory(t *testing.T) {
	start := time.Date(2026, 11, 25, 0, 10, 0, 0, time.UTC)
	h := NewHistory(start)
	if _, ok := h.PerHour(start.Add(59*time.Second), 0); ok {
		t.Error("a pace before a whole minute")
	}
	for _, ep := range []string{"state", "state", "control", "devices", "scenes", "diy-scenes", "weird"} {
		h.Observe(ep, start.Add(5*time.Second))
	}
	hrs := h.Hours(start.Add(time.Minute))
	if got := hrs[23]; got.State != 2 || got.Control != 1 || got.List != 1 || got.Scenes != 2 || got.Other != 1 || !got.Start.Equal(start.Truncate(time.Hour)) {
		t.Errorf("this hour: %+v", got)
	}
	// 10 minutes after the start, the pace counts the 10 minutes.
	if r, ok := h.PerHour(start.Add(10*time.Minute), 0); !ok || r != 7*6 {
		t.Errorf("pace after 10 minutes: %v %v, want 42", r, ok)
	}
	// A day later the slot is reused: the old hour is gone, not added.
	day := start.Add(24 * time.Hour)
	h.Observe("state", day)
	hrs = h.Hours(day)
	if got := hrs[23]; got.State != 1 || got.Control != 0 || !got.Start.Equal(day.Truncate(time.Hour)) {
		t.Errorf("the same hour a day later: %+v", got)
	}
	for i, hr := range hrs[:23] {
		if hr != (Hour{Start: hr.Start}) {
			t.Errorf("hour %d holds counts of the day before: %+v", i, hr)
		}
		if want := day.Truncate(time.Hour).Add(time.Duration(i-23) * time.Hour); !hr.Start.Equal(want) {
			t.Errorf("hour %d starts %v, want %v", i, hr.Start, want)
		}
	}
	// An hour later the pace has forgotten it; a request older than
	// what a slot holds is not counted there.
	h.Observe("state", day.Add(-24*time.Hour-time.Hour))
	if r, ok := h.PerHour(day.Add(61*time.Minute), 0); !ok || r != 0 {
		t.Errorf("pace an hour after the last request: %v", r)
	}
}

// TestHistorySavedAndRestored: the hours a run counted go on in the next
// run's chart; what a damaged or forged file holds beyond the hours it can
// be (not on the hour, after the start, negative, huge) is not counted.
func TestHistorySavedAndRestored(t *testing.T) {
	start := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	h := NewHistory(start)
	for i := range 90 {
		h.Observe("state", start.Add(time.Duration(i)*time.Minute))
	}
	h.Observe("control", start.Add(70*time.Minute))
	saved := h.Saved()
	if len(saved.Hours) != 2 || saved.Hours[0].State != 60 || saved.Hours[1].State != 30 || saved.Hours[1].Control != 1 {
		t.Fatalf("saved: %+v", saved)
	}
	restart := start.Add(3 * time.Hour)
	forged := append(saved.Hours,
		Hour{Start: start.Add(30 * time.Minute), State: 1000},             // not on the hour
		Hour{Start: restart.Add(5 * time.Hour), State: 1000},              // after the start
		Hour{Start: start.Add(-time.Hour), State: -5, Other: math.MaxInt}, // negative, huge
		Hour{Start: start.Add(-30 * time.Hour), State: 1000},              // older than a day
	)
	next := NewHistory(restart)
	next.Restore(SavedHistory{Hours: forged})
	next.Observe("state", restart)
	total := 0
	for _, hr := range next.Hours(restart) {
		total += hr.State + hr.Control + hr.List + hr.Scenes + hr.Other
	}
	if want := 60 + 31 + 1 + maxSavedCount; total != want {
		t.Errorf("restored: %d requests charted, want %d", total, want)
	}
}

// TestPaceLeavesOutTheStart: a start reads every device at once and then
// nothing until the second reads, one poll interval later; the pace is
// the steady reads', not the burst's.
func TestPaceLeavesOutTheStart(t *testing.T) {
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	h := NewHistory(start)
	for i := range 80 { // the burst: every device, its scenes, the list
		h.Observe("state", start.Add(time.Duration(i)*100*time.Millisecond))
	}
	for m := 1; m < 30; m++ { // from one interval on, 10 reads a minute
		for i := range 10 {
			h.Observe("state", start.Add(time.Duration(m)*time.Minute+time.Duration(i)*6*time.Second))
		}
	}
	for _, c := range []struct {
		at   time.Duration
		ok   bool
		want float64
	}{
		{30 * time.Second, false, 0},
		{90 * time.Second, false, 0},   // no whole steady minute yet
		{125 * time.Second, true, 600}, // 12:01 to 12:02
		{10 * time.Minute, true, 600},
	} {
		if got, ok := h.PerHour(start.Add(c.at), time.Minute); ok != c.ok || got != c.want {
			t.Errorf("pace %v after the start: %v %v, want %v %v", c.at, got, ok, c.want, c.ok)
		}
	}
}

func TestProblemLog(t *testing.T) {
	l := NewProblemLog(3, func() time.Time { return t0.Add(time.Hour) })
	for i, m := range []string{"a", "b", "c", "d"} {
		l.Add(Problem{Time: t0.Add(time.Duration(i) * time.Second), Message: m})
	}
	got := l.Problems()
	if len(got) != 3 || got[0].Message != "d" || got[1].Message != "c" || got[2].Message != "b" {
		t.Errorf("the last 3, newest first: %+v", got)
	}
	if l.AddJSON([]byte(`not json`)) || l.AddJSON([]byte(`[1]`)) {
		t.Error("a payload that is not an object was kept")
	}
	if !l.AddJSON([]byte(`{"level":"warn","message":"no time","dropped":3}`)) {
		t.Fatal("payload refused")
	}
	p := l.Problems()[0]
	if p.Level != "warning" || p.Message != "no time" || !p.Time.Equal(t0.Add(time.Hour)) || p.Fields["dropped"] != 3.0 {
		t.Errorf("journal line without a time: %+v", p)
	}
}
