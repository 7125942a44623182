package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"
)

// GET /api/events is a stream of server-sent events. It starts with
// "snapshot" (everything the page shows) and then, once an Interval,
// sends what changed: "devices" ({"upsert":[…],"remove":[ids]}),
// "budget" (as /api/budget) and "problems" (as /api/problems). Each
// stream reads the Source only while it is open: nothing is computed
// while nobody watches.

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
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "web: this server cannot stream events")
		return
	}
	if !h.openStream() {
		writeError(w, http.StatusServiceUnavailable, "web: too many event streams open; close a page or poll /api/devices")
		return
	}
	defer h.closeStream()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	var s stream
	snap := snapshotJSON{Devices: h.deviceList(), Budget: h.budgetNow(), Problems: h.problemList()}
	s.remember(snap.Devices)
	s.problems, _ = json.Marshal(snap.Problems)
	if !send(w, flusher, "snapshot", snap) {
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
		if d, changed := s.delta(h.deviceList()); changed && !send(w, flusher, "devices", d) {
			return
		}
		if p, _ := json.Marshal(h.problemList()); !bytes.Equal(p, s.problems) {
			s.problems = p
			if !sendRaw(w, flusher, "problems", append([]byte(`{"problems":`), append(p, '}')...)) {
				return
			}
		}
		// The budget goes every tick: it carries the server's clock, by
		// which the page ages the reads.
		if !send(w, flusher, "budget", h.budgetNow()) {
			return
		}
	}
}

func (h *Handler) openStream() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.streams >= h.opt.MaxStreams {
		return false
	}
	h.streams++
	return true
}

func (h *Handler) closeStream() {
	h.mu.Lock()
	h.streams--
	h.mu.Unlock()
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

func send(w http.ResponseWriter, f http.Flusher, event string, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	return sendRaw(w, f, event, b)
}

// sendRaw writes one event; JSON has no raw newline, so data is one line.
func sendRaw(w http.ResponseWriter, f http.Flusher, event string, data []byte) bool {
	var buf bytes.Buffer
	buf.WriteString("event: ")
	buf.WriteString(event)
	buf.WriteString("\ndata: ")
	buf.Write(data)
	buf.WriteString("\n\n")
	if _, err := w.Write(buf.Bytes()); err != nil {
		return false
	}
	f.Flush()
	return true
}
