package web

import (
	"slices"
	"sync"
	"time"

	"cloud2mqtt/internal/cloud"
)

// History counts the cloud requests of the last 24 hours per clock hour and
// endpoint group, for the budget's chart, and of the last hour per minute, for
// the pace. Its hours survive a restart (Saved, Restore); it is safe for
// concurrent use and costs a lock and an increment.
type History struct {
	mu      sync.Mutex
	started time.Time
	hours   [24]hourSlot
	minutes [60]minuteSlot
}

type hourSlot struct {
	hour   int64 // Unix time / 3600 of the hour counted; 0: unused
	counts [groups]int
}

type minuteSlot struct {
	minute int64 // Unix time / 60
	n      int
}

// The endpoint groups of the chart.
const (
	groupState = iota
	groupControl
	groupList
	groupScenes
	groupOther
	groups
)

// Hour is one bar of the chart: the requests of the clock hour that
// starts at Start, by endpoint group.
type Hour struct {
	Start   time.Time `json:"start"`
	State   int       `json:"state"`
	Control int       `json:"control"`
	List    int       `json:"list"`
	Scenes  int       `json:"scenes"`
	Other   int       `json:"other"`
}

// NewHistory returns an empty history; the pace is measured from start.
func NewHistory(start time.Time) *History {
	return &History{started: start}
}

// group maps the cloud's endpoint names (cloud.Endpoint*) to the chart's.
func group(endpoint string) int {
	switch endpoint {
	case cloud.EndpointState:
		return groupState
	case cloud.EndpointControl:
		return groupControl
	case cloud.EndpointDevices:
		return groupList
	case cloud.EndpointScenes, cloud.EndpointDIYScenes:
		return groupScenes
	}
	return groupOther
}

// Observe counts one request to endpoint (a cloud.Endpoint* name) sent at t.
func (h *History) Observe(endpoint string, t time.Time) {
	g := group(endpoint)
	sec := t.Unix()
	hr, mn := sec/3600, sec/60
	h.mu.Lock()
	defer h.mu.Unlock()
	// A slot holds the latest hour (minute) that falls on it: a request
	// older than the one counted there is too old to show.
	if hs := &h.hours[hr%24]; hs.hour <= hr {
		if hs.hour != hr {
			*hs = hourSlot{hour: hr}
		}
		hs.counts[g]++
	}
	if ms := &h.minutes[mn%60]; ms.minute <= mn {
		if ms.minute != mn {
			*ms = minuteSlot{minute: mn}
		}
		ms.n++
	}
}

// Hours returns the 24 clock hours up to now's, oldest first.
func (h *History) Hours(now time.Time) []Hour {
	cur := now.Unix() / 3600
	out := make([]Hour, 24)
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range out {
		hr := cur - 23 + int64(i)
		o := Hour{Start: time.Unix(hr*3600, 0).In(now.Location())}
		if hs := h.hours[((hr%24)+24)%24]; hs.hour == hr {
			o.State, o.Control, o.List = hs.counts[groupState], hs.counts[groupControl], hs.counts[groupList]
			o.Scenes, o.Other = hs.counts[groupScenes], hs.counts[groupOther]
		}
		out[i] = o
	}
	return out
}

// PerHour is the steady pace: the last 60 whole minutes' requests per hour,
// counting only minutes that begin at least steadyAfter after the start, since
// a start's burst and the quiet before the second reads are not the pace.
// ok is false before a whole steady minute has passed.
func (h *History) PerHour(now time.Time, steadyAfter time.Duration) (rate float64, ok bool) {
	cur := now.Unix() / 60 // the minute under way, not counted
	h.mu.Lock()
	defer h.mu.Unlock()
	steady := h.started.Add(min(max(steadyAfter, 0), time.Hour))
	from := max((steady.Unix()+59)/60, cur-60) // the first whole steady minute
	if from >= cur {
		return 0, false
	}
	n := 0
	for _, ms := range h.minutes {
		if ms.minute >= from && ms.minute < cur {
			n += ms.n
		}
	}
	return float64(n) * 60 / float64(cur-from), true
}

// SavedHistory is what requests.json keeps across a restart so that the chart
// goes on with the day's count; the pace is measured again.
type SavedHistory struct {
	Hours []Hour `json:"hours"`
}

// Saved is the history's hours that counted requests, oldest first.
func (h *History) Saved() SavedHistory {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := SavedHistory{Hours: []Hour{}}
	for _, hs := range h.hours {
		if hs.hour == 0 || hs.counts == ([groups]int{}) {
			continue
		}
		c := hs.counts
		out.Hours = append(out.Hours, Hour{Start: time.Unix(hs.hour*3600, 0).UTC(), State: c[groupState],
			Control: c[groupControl], List: c[groupList], Scenes: c[groupScenes], Other: c[groupOther]})
	}
	slices.SortFunc(out.Hours, func(a, b Hour) int { return a.Start.Compare(b.Start) })
	return out
}

// maxSavedCount bounds a restored hour's count: far beyond any account's
// day, and far from an overflow of a 32-bit int when added to.
const maxSavedCount = 1 << 29

// Restore adds the hours a previous run saved, ignoring hours it cannot hold and
// clamping counts, since a state file is input like any other.
func (h *History) Restore(s SavedHistory) {
	h.mu.Lock()
	defer h.mu.Unlock()
	startHour := h.started.Unix() / 3600
	for _, o := range s.Hours {
		sec := o.Start.Unix()
		hr := sec / 3600
		if sec%3600 != 0 || hr <= 0 || hr > startHour {
			continue
		}
		hs := &h.hours[hr%24]
		if hs.hour > hr {
			continue
		}
		if hs.hour != hr {
			*hs = hourSlot{hour: hr}
		}
		for g, n := range [groups]int{o.State, o.Control, o.List, o.Scenes, o.Other} {
			hs.counts[g] = min(hs.counts[g]+min(max(n, 0), maxSavedCount), maxSavedCount)
		}
	}
}
