package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// GET /api/events is a stream of server-sent events: a "snapshot", then once an
// Interval what changed ("devices", "budget", "problems"). The Source is read
// only while a stream is open, so nothing is computed while nobody watches.

// snapshotJSON is the first event of a stream.
type snapshotJSON struct {
	Devices  []Device   `json:"devices"`
	Budget   budgetJSON `json:"budget"`
	Problems []Problem  `json:"problems"`
}

// devicesDelta is a "devices" event.
type devicesDelta struct {
	Upsert []Device `json:"upsert"`
	Remove []string `json:"remove"`
}

// stream is what one event stream last sent.
type stream struct {
	devices  map[string][]byte // id → JSON of the device as last sent
	problems []byte
}

func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	if _, ok := w.(http.Flusher); !ok {
		writeError(w, http.StatusInternalServerError, "this server cannot stream events")
		return
	}
	client, ingress := clientOf(r), viaIngress(r)
	if why := h.slots.open(client, ingress); why != "" {
		h.refuse(w, r, &refusal{status: http.StatusServiceUnavailable, retry: h.opt.Fallback,
			msg: why + "; close a page, or read /api/devices (the page does so by itself)"})
		return
	}
	defer h.slots.release(client, ingress)
	out := newEventWriter(w, h.opt.WriteTimeout)
	defer out.end()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	var s stream
	snap := snapshotJSON{Devices: h.deviceList(), Budget: h.budgetNow(), Problems: h.problemList()}
	s.remember(snap.Devices)
	s.problems, _ = json.Marshal(snap.Problems)
	if !out.send("snapshot", snap) {
		return
	}
	tick := time.NewTicker(h.opt.Interval)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		case <-tick.C:
		}
		if d, changed := s.delta(h.deviceList()); changed && !out.send("devices", d) {
			return
		}
		if p, _ := json.Marshal(h.problemList()); !bytes.Equal(p, s.problems) {
			s.problems = p
			if !out.sendRaw("problems", append([]byte(`{"problems":`), append(p, '}')...)) {
				return
			}
		}
		// The budget goes every tick: it carries the server's clock, by
		// which the page ages the reads.
		if !out.send("budget", h.budgetNow()) {
			return
		}
	}
}

// eventWriter writes each event within a deadline, so that a client that does
// not read loses its stream and slot; the server's ReadTimeout does not apply.
type eventWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     bytes.Buffer
}

func newEventWriter(w http.ResponseWriter, timeout time.Duration) *eventWriter {
	return &eventWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

// end lifts the write deadline: the connection may serve another request.
func (e *eventWriter) end() { _ = e.rc.SetWriteDeadline(time.Time{}) }

func (e *eventWriter) send(event string, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	return e.sendRaw(event, b)
}

// sendRaw writes one event; JSON has no raw newline, so data is one line.
func (e *eventWriter) sendRaw(event string, data []byte) bool {
	e.buf.Reset()
	e.buf.WriteString("event: ")
	e.buf.WriteString(event)
	e.buf.WriteString("\ndata: ")
	e.buf.Write(data)
	e.buf.WriteString("\n\n")
	if err := e.rc.SetWriteDeadline(time.Now().Add(e.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return false
	}
	if _, err := e.w.Write(e.buf.Bytes()); err != nil {
		return false
	}
	return e.rc.Flush() == nil
}

func (s *stream) remember(ds []Device) {
	s.devices = make(map[string][]byte, len(ds))
	for _, d := range ds {
		s.devices[d.ID], _ = json.Marshal(d)
	}
}

// delta compares the devices with what was last sent.
func (s *stream) delta(ds []Device) (devicesDelta, bool) {
	d := devicesDelta{Upsert: []Device{}, Remove: []string{}}
	seen := make(map[string]bool, len(ds))
	for _, dev := range ds {
		seen[dev.ID] = true
		b, _ := json.Marshal(dev)
		if !bytes.Equal(b, s.devices[dev.ID]) {
			s.devices[dev.ID] = b
			d.Upsert = append(d.Upsert, dev)
		}
	}
	for id := range s.devices {
		if !seen[id] {
			delete(s.devices, id)
			d.Remove = append(d.Remove, id)
		}
	}
	return d, len(d.Upsert) > 0 || len(d.Remove) > 0
}
