package web

import (
	"strings"
	"testing"
	"time"
)

// What the page gets reads as a person means it: values with units and names,
// problems as sentences naming the device, and a projection that does not take
// a start's burst for the pace.

// TestDeviceReadings: /api/devices/{id} gives each value as a person
// reads it: a colour as its hex code (and the colour, for a swatch), a
// temperature with its unit, a mode by its name, a level in percent; the
// raw values stay for scripts.
func TestDeviceReadings(t *testing.T) {
	e := newEnv(t, "127.0.0.1:8080", "")
	e.src.devices = append(e.src.devices, richDevice(t0))
	var d struct {
		Values   map[string]any `json:"values"`
		Readings []Reading      `json:"readings"`
	}
	e.getJSON("/api/devices/office_heater", &d)
	got := map[string]Reading{}
	for _, r := range d.Readings {
		got[r.Instance] = r
	}
	for in, want := range map[string]Reading{
		"colorRgb":          {Text: "#FF8800", Color: "#FF8800"},
		"colorTemperatureK": {Text: "2700 K"},
		"sensorTemperature": {Text: "21.5 °C"},
		"targetTemperature": {Text: "22 °C · Maintain"},
		"fanSpeed":          {Text: "Medium"},
		"workMode":          {Text: "gearMode · High"},
		"brightness":        {Text: "80 %"},
		"powerSwitch":       {Text: "on"},
		"online":            {Text: "online"},
	} {
		want.Instance = in
		if got[in] != want {
			t.Errorf("%s: %+v, want %+v", in, got[in], want)
		}
	}
	if len(d.Readings) != len(d.Values) || d.Values["colorRgb"] != 16746496.0 {
		t.Errorf("readings %d for %d values; raw colour %v", len(d.Readings), len(d.Values), d.Values["colorRgb"])
	}
}

// TestReadingsOfOddValues: a value the definition does not describe is
// shown as it is, never dropped nor taken for what it is not.
func TestReadingsOfOddValues(t *testing.T) {
	rich := richDevice(t0)
	for _, c := range []struct {
		instance string
		v        any
		want     string
	}{
		{"colorRgb", int64(-1), "-1"},
		{"colorRgb", "red", "red"},
		{"colorRgb", int64(0), "#000000"},
		{"fanSpeed", int64(9), "9"},
		{"workMode", map[string]any{"workMode": int64(5), "modeValue": int64(0)}, "Sleep"},
		{"workMode", map[string]any{"workMode": int64(7)}, "7"},
		{"targetTemperature", map[string]any{"temperature": int64(72), "unit": "Fahrenheit"}, "72 °F"},
		{"sensorTemperature", nil, "–"},
		{"unknownThing", map[string]any{"a": []any{int64(1)}}, `{"a":[1]}`},
		{"brightness", 1e300, "1e+300 %"},
	} {
		var r Reading
		if rs := readings(rich.Capabilities, map[string]any{c.instance: c.v}); len(rs) == 1 {
			r = rs[0]
		}
		if r.Text != c.want || (r.Color != "" && c.instance != "colorRgb") {
			t.Errorf("%s=%v: %+v, want %q", c.instance, c.v, r, c.want)
		}
	}
}

// TestProblemsAsSentences: a problem reads as a sentence naming the
// device (the Source's name, not its id), what happened and why, with a
// hint where the log line gives one; the log line's code and component
// are not in it.
func TestProblemsAsSentences(t *testing.T) {
	e := newEnv(t, "127.0.0.1:8080", "")
	e.src.problems.Add(Problem{Time: t0.Add(-time.Second), Level: "warning", Message: "command rejected", DeviceName: "Hall light",
		Fields: map[string]any{"device": "H6008/AA:BB", "code": 400.0, "component": "bridge", "error": "brightness: 250 is above the maximum 100"}})
	e.src.problems.Add(Problem{Time: t0, Level: "warning", Message: "retained message ignored: clear it with clear_with",
		Fields: map[string]any{"topic": "c2m/hall_light/set", "clear_with": "mosquitto_pub -r -n -t 'c2m/hall_light/set'"}})
	var p problemsJSON
	e.getJSON("/api/problems", &p)
	want := map[string]string{
		"command rejected":   "Hall light: command rejected — brightness: 250 is above the maximum 100",
		"read failed":        "kitchen_strip: read failed — cloud: device offline", // a device the source does not name
		"rate limited":       "Rate limited",
		"retained message …": "Retained message ignored: clear it with clear_with",
	}
	seen := 0
	for _, pr := range p.Problems {
		key := pr.Message
		if strings.HasPrefix(key, "retained") {
			key = "retained message …"
			if pr.Hint != "mosquitto_pub -r -n -t 'c2m/hall_light/set'" {
				t.Errorf("hint: %q", pr.Hint)
			}
		}
		if w, ok := want[key]; ok {
			seen++
			if pr.Text != w {
				t.Errorf("%q reads %q, want %q", pr.Message, pr.Text, w)
			}
		}
		if strings.Contains(pr.Text, "code") || strings.Contains(pr.Text, "component") || strings.Contains(pr.Text, "H6008/AA:BB") {
			t.Errorf("a log dump, not a sentence: %q", pr.Text)
		}
	}
	if seen != len(want) {
		t.Errorf("%d of %d problems found: %+v", seen, len(want), p.Problems)
	}
}

// TestProjectionAfterAStart: right after a start (the clock is the
// handler's Options.Now), the burst of first reads is not projected as an
// hourly rate: the projection waits for a whole minute of steady reads
// (one poll interval after the start), then goes at their pace.
func TestProjectionAfterAStart(t *testing.T) {
	start := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	now := start
	src := newFakeSourceAt(start)
	src.setBudget(func(b *Budget) { b.RequestsToday, b.DailyLimit, b.PollInterval = 0, 10000, Duration(time.Minute) })
	hist := NewHistory(start)
	count := func(n int, at time.Time) {
		for range n {
			hist.Observe("state", at)
		}
		src.setBudget(func(b *Budget) { b.RequestsToday += n })
	}
	h, err := New(Options{Source: src, History: hist, Addr: "127.0.0.1:8080", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	e := &env{t: t, src: src, h: h}
	budget := func() budgetJSON {
		var b budgetJSON
		e.getJSON("/api/budget", &b)
		return b
	}
	count(78, start.Add(2*time.Second)) // every device's first read, the list, the scenes
	for m := 1; m <= 3; m++ {           // then 20 reads a minute from one interval on
		count(20, start.Add(time.Duration(m)*time.Minute+30*time.Second))
	}
	now = start.Add(59 * time.Second)
	if b := budget(); b.Projected != nil || b.PacePerHour != nil || b.OverLimit {
		t.Errorf("within the start's burst: projected %v, pace %v, over %v; want none yet", b.Projected, b.PacePerHour, b.OverLimit)
	}
	now = start.Add(4 * time.Minute)
	b := budget()
	// 138 so far + 1200 an hour until midnight (15 h 56 min): 19258. The
	// burst taken for the pace (138 in 4 minutes: 2070 an hour) would
	// have projected 33120.
	if b.PacePerHour == nil || *b.PacePerHour != 1200 || b.Projected == nil || *b.Projected != 19258 || !b.OverLimit {
		t.Errorf("steady: pace %v, projected %v, over %v; want 1200 an hour, 19258", deref(b.PacePerHour), deref(b.Projected), b.OverLimit)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
