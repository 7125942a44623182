package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// streamWriter is a ResponseWriter of an event stream: each Write is one
// event, handed to the test.
type streamWriter struct {
	header http.Header
	status int
	events chan string
}

func newStreamWriter() *streamWriter {
	return &streamWriter{header: http.Header{}, events: make(chan string, 100)}
}

func (w *streamWriter) Header() http.Header { return w.header }
func (w *streamWriter) WriteHeader(s int)   { w.status = s }
func (w *streamWriter) Flush()              {}
func (w *streamWriter) Write(p []byte) (int, error) {
	w.events <- string(p)
	return len(p), nil
}

// next returns the next event's name and data, skipping budget events
// unless asked for.
func (w *streamWriter) next(t *testing.T, name string) string {
	t.Helper()
	for {
		select {
		case ev := <-w.events:
			head, data, _ := strings.Cut(ev, "\ndata: ")
			if strings.TrimPrefix(head, "event: ") == name {
				return strings.TrimSuffix(data, "\n\n")
			}
		default:
			t.Fatalf("no %s event", name)
		}
	}
}

func openStream(h *Handler) (*streamWriter, context.CancelFunc, chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	w := newStreamWriter()
	r := httptest.NewRequest("GET", "/api/events", nil).WithContext(ctx)
	r.Host = "127.0.0.1:8080"
	done := make(chan struct{})
	go func() { defer close(done); h.ServeHTTP(w, r) }()
	return w, cancel, done
}

func TestEventStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, "127.0.0.1:8080", "")
		w, cancel, done := openStream(e.h)
		synctest.Wait()
		if ct := w.header.Get("Content-Type"); w.status != 200 || ct != "text/event-stream" || w.header.Get("Content-Security-Policy") != csp {
			t.Fatalf("stream: %d %q %v", w.status, ct, w.header)
		}
		var snap struct {
			Devices  []Device        `json:"devices"`
			Budget   json.RawMessage `json:"budget"`
			Problems []Problem       `json:"problems"`
		}
		if err := json.Unmarshal([]byte(w.next(t, "snapshot")), &snap); err != nil {
			t.Fatal(err)
		}
		if len(snap.Devices) != 4 || len(snap.Problems) != 2 || !strings.Contains(string(snap.Budget), `"requests_today":6234`) {
			t.Fatalf("snapshot: %+v", snap)
		}

		// One device changes: only it is sent.
		e.src.update("hall_light", func(d *DeviceDetail) { d.Status = StatusOffline; d.LastError = "cloud: device offline" })
		e.src.setBudget(func(b *Budget) { b.RequestsToday++ })
		time.Sleep(e.h.opt.Interval)
		synctest.Wait()
		var delta devicesDelta
		if err := json.Unmarshal([]byte(w.next(t, "devices")), &delta); err != nil {
			t.Fatal(err)
		}
		if len(delta.Upsert) != 1 || delta.Upsert[0].ID != "hall_light" || delta.Upsert[0].Status != StatusOffline || len(delta.Remove) != 0 {
			t.Errorf("delta: %+v", delta)
		}
		if b := w.next(t, "budget"); !strings.Contains(b, `"requests_today":6235`) {
			t.Errorf("budget event: %s", b)
		}

		// Nothing changed: no devices event, the budget still goes.
		time.Sleep(e.h.opt.Interval)
		synctest.Wait()
		if ev := <-w.events; !strings.HasPrefix(ev, "event: budget\n") {
			t.Errorf("without a change, only the budget is sent: %q", ev)
		}

		// A device goes, a problem comes.
		e.src.remove("garden_plug")
		e.src.problems.Add(Problem{Time: t0, Level: "error", Message: "list failed"})
		time.Sleep(e.h.opt.Interval)
		synctest.Wait()
		delta = devicesDelta{}
		if err := json.Unmarshal([]byte(w.next(t, "devices")), &delta); err != nil || len(delta.Upsert) != 0 || len(delta.Remove) != 1 || delta.Remove[0] != "garden_plug" {
			t.Errorf("removal: %+v %v", delta, err)
		}
		if p := w.next(t, "problems"); !strings.HasPrefix(p, `{"problems":[{"time":"2026-11-25T14:30:00Z","level":"error","message":"list failed","text":"List failed"}`) {
			t.Errorf("problems event: %s", p)
		}

		// The watcher leaves: nothing is read any more.
		cancel()
		<-done
		reads := e.src.readCount()
		time.Sleep(100 * e.h.opt.Interval)
		synctest.Wait()
		if n := e.src.readCount(); n != reads {
			t.Errorf("the source was read %d times with nobody watching", n-reads)
		}
		if e.h.slots.count() != 0 {
			t.Errorf("streams open: %d", e.h.slots.count())
		}
	})
}

func TestEventStreamsBoundedAndClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		h, err := New(Options{Source: src, MaxStreams: 2, Interval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		w1, cancel1, done1 := openStream(h)
		_, cancel2, done2 := openStream(h)
		defer cancel1()
		defer cancel2()
		synctest.Wait()
		w3 := httptest.NewRecorder()
		h.ServeHTTP(w3, localRequest("GET", "/api/events"))
		if w3.Code != http.StatusServiceUnavailable || !strings.Contains(w3.Body.String(), "too many event streams") {
			t.Errorf("a third stream: %d %s", w3.Code, w3.Body)
		}
		w1.next(t, "snapshot")
		// Close (the server's shutdown) ends the streams.
		h.Close()
		<-done1
		<-done2
		w4 := httptest.NewRecorder()
		h.ServeHTTP(w4, localRequest("GET", "/api/events"))
		if w4.Code != http.StatusServiceUnavailable {
			t.Errorf("a stream after Close: %d", w4.Code)
		}
	})
}
