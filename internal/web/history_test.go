package web

import (
	"testing"
	"time"
)

func TestHistory(t *testing.T) {
	start := time.Date(2026, 11, 25, 0, 10, 0, 0, time.UTC)
	h := NewHistory(start)
	if _, ok := h.PerHour(start.Add(59 * time.Second)); ok {
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
	if r, ok := h.PerHour(start.Add(10 * time.Minute)); !ok || r != 7*6 {
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
	if r, ok := h.PerHour(day.Add(61 * time.Minute)); !ok || r != 0 {
		t.Errorf("pace an hour after the last request: %v", r)
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
