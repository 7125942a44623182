package statuspage

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/settings"
	"cloud2mqtt/internal/statedir"
	"cloud2mqtt/internal/web"
)

// fakeMirror names the devices by topic id.
type fakeMirror struct{ ids map[capability.Key]string }

func (m fakeMirror) IDs() map[capability.Key]string { return m.ids }
func (m fakeMirror) Republish()                     {}
func (m fakeMirror) KeyOf(ref string) (capability.Key, string, bool) {
	for k, id := range m.ids {
		if ref == id || ref == k.String() {
			return k, id, true
		}
	}
	return capability.Key{}, "", false
}

// fakeSettings keeps the devices' options and where each change came from.
type fakeSettings struct {
	devices map[string]settings.Device
	origins []settings.Origin
}

func (s *fakeSettings) Devices() map[string]settings.Device { return s.devices }
func (s *fakeSettings) DailyLimit() int                     { return 0 }
func (s *fakeSettings) SetDeviceOptionsFrom(from settings.Origin, _ string, _ capability.Key, _ json.RawMessage) (any, error) {
	s.origins = append(s.origins, from)
	return nil, nil
}

var lamp = capability.Device{SKU: "H6008", Device: "AA:BB", Name: "cloud name"}

func lampParts() (Parts, *fakeSettings) {
	reg := registry.New(zerolog.Nop())
	reg.SetDevices([]capability.Device{lamp})
	set := &fakeSettings{devices: map[string]settings.Device{"h6008_aabb": {Name: "Hall lamp"}}}
	return Parts{Mirror: fakeMirror{map[capability.Key]string{lamp.Key(): "h6008_aabb"}}, Registry: reg, Settings: set}, set
}

// TestProblemsNameTheDevice: a problem about a device (its log line names
// it by sku/device or topic id) carries the device's name as the page
// shows it; the page's sentence has the name, not the id, and none of the
// log line's code or component.
func TestProblemsNameTheDevice(t *testing.T) {
	p := New(nil)
	parts, _ := lampParts()
	p.AddLog([]byte(`{"level":"warn","message":"command rejected","component":"bridge","code":400,"device":"H6008/AA:BB",` +
		`"instance":"brightness","error":"brightness: 250 is above the maximum 100","time":"2026-11-28T12:00:00Z"}`))
	p.AddLog([]byte(`{"level":"error","message":"read on request failed","device":"h6008_aabb","error":"cloud: state of H6008/AA:BB: 500",` +
		`"time":"2026-11-28T11:59:00Z"}`))
	p.AddLog([]byte(`{"level":"warn","message":"retained message ignored","topic":"c2m/x/set","clear_with":"mosquitto_pub -r -n -t 'c2m/x/set'",` +
		`"time":"2026-11-28T11:58:00Z"}`))
	h, err := p.Handler(web.Options{Addr: "127.0.0.1:8080"}, parts, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Problems []web.Problem }
	getJSON(t, h, "/api/problems", &got)
	want := []struct{ name, text, hint string }{
		{"Hall lamp", "Hall lamp: command rejected — brightness: 250 is above the maximum 100", ""},
		{"Hall lamp", "Hall lamp: read on request failed — cloud: state of Hall lamp: 500", ""},
		{"", "Retained message ignored", "mosquitto_pub -r -n -t 'c2m/x/set'"},
	}
	if len(got.Problems) != len(want) {
		t.Fatalf("problems: %+v", got.Problems)
	}
	for i, w := range want {
		g := got.Problems[i]
		if g.DeviceName != w.name || g.Text != w.text || g.Hint != w.hint {
			t.Errorf("problem %d: name %q, text %q, hint %q; want %q, %q, %q", i, g.DeviceName, g.Text, g.Hint, w.name, w.text, w.hint)
		}
		if strings.Contains(g.Text, "code") || strings.Contains(g.Text, "bridge") || strings.Contains(g.Text, "AA:BB") {
			t.Errorf("problem %d reads like a log line: %q", i, g.Text)
		}
	}
}

// TestChangesOnThePageSaySo: the page's settings changes are made as
// changes on the page, not over MQTT.
func TestChangesOnThePageSaySo(t *testing.T) {
	parts, set := lampParts()
	a := &actions{Parts: parts, errs: web.NewDeviceErrors(nil), log: zerolog.Nop()}
	if err := a.SetEnabled("h6008_aabb", false); err != nil {
		t.Fatal(err)
	}
	if err := a.SetPollInterval("h6008_aabb", "2m"); err != nil {
		t.Fatal(err)
	}
	if len(set.origins) != 2 || set.origins[0] != settings.OnThePage || set.origins[1] != settings.OnThePage {
		t.Errorf("origins %q, want both %q", set.origins, settings.OnThePage)
	}
}

// TestHistoryKeptAcrossARestart: the hours a run counted are in the chart
// of the next run over the same state directory, in the file's envelope;
// without a state directory nothing is written.
func TestHistoryKeptAcrossARestart(t *testing.T) {
	dir := statedir.Dir(t.TempDir())
	t0 := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	first := New(func() time.Time { return t0 })
	for i := range 150 {
		first.OnCounted(cloud.EndpointState, t0.Add(time.Duration(i)*30*time.Second)) // 9:30 to 10:44
	}
	first.OnCounted(cloud.EndpointDevices, t0)
	first.SaveHistory(dir, zerolog.Nop())
	first.SaveHistory("", zerolog.Nop())

	b, err := os.ReadFile(filepath.Join(string(dir), historyFile))
	if err != nil || !strings.Contains(string(b), `"format":"cloud2mqtt/history","version":1`) {
		t.Fatalf("history.json: %v %s", err, b)
	}
	later := t0.Add(2 * time.Hour)
	second := New(func() time.Time { return later })
	second.RestoreHistory(dir, zerolog.Nop())
	second.OnCounted(cloud.EndpointState, later)
	hours := second.history.Hours(later)
	total, byHour := 0, map[int]int{}
	for _, h := range hours {
		n := h.State + h.Control + h.List + h.Scenes + h.Other
		total += n
		byHour[h.Start.Hour()] += n
	}
	if total != 152 || byHour[9] != 61 || byHour[10] != 90 || byHour[11] != 1 {
		t.Errorf("after the restart: %d requests charted (%v), want 152: 61 at 9, 90 at 10, 1 at 11", total, byHour)
	}

	// A damaged file is a warning; the chart starts empty.
	if err := os.WriteFile(filepath.Join(string(dir), historyFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	third := New(func() time.Time { return later })
	third.RestoreHistory(dir, zerolog.Nop())
	if s := third.history.Saved(); len(s.Hours) != 0 {
		t.Errorf("from a damaged file: %+v", s)
	}
}

// getJSON decodes a GET of the handler's API.
func getJSON(t *testing.T, h http.Handler, path string, v any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080"+path, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}
