package cloudsim

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"cloud2mqtt/internal/capability"
)

// Request is one logged request.
type Request struct {
	Time     time.Time
	Endpoint string // Endpoint* name; AnyEndpoint for an unknown path
	Method   string
	Path     string
	SKU      string
	Device   string
	Instance string // control requests
	// HTTPStatus is the status sent (0 when the connection was reset or the
	// client gave up on a hung request); Code is the code in the body, which
	// differs from HTTPStatus in ErrorsAs200 mode.
	HTTPStatus int
	Code       int
	Msg        string
	Bucket     string // the refusing bucket of a 429
	Fault      string // "fail", "malformed", "reset", "hang" when a fault acted
}

// ControlRecord is one control request that named an existing device, with
// the outcome: Code 200 means the value was applied.
type ControlRecord struct {
	Time     time.Time
	SKU      string
	Device   string
	Type     string
	Instance string
	Value    any
	Code     int
	Msg      string
}

// Counts are running totals that tests and benchmarks read.
type Counts struct {
	// Requests counts answers by endpoint and body code (the logical
	// outcome, also in ErrorsAs200 mode); code 0 counts requests that got
	// no answer (reset, abandoned while hung).
	Requests map[string]map[int]int
	// RateLimited counts 429s by the Bucket* name of the refusing bucket.
	RateLimited map[string]int
}

func newCounts() Counts {
	return Counts{Requests: map[string]map[int]int{}, RateLimited: map[string]int{}}
}

// Of is the number of answers of the endpoint with the code.
func (c Counts) Of(endpoint string, code int) int { return c.Requests[endpoint][code] }

// Total is the number of requests to the endpoint.
func (c Counts) Total(endpoint string) int {
	n := 0
	for _, v := range c.Requests[endpoint] {
		n += v
	}
	return n
}

func (c Counts) copy() Counts {
	out := Counts{Requests: make(map[string]map[int]int, len(c.Requests)), RateLimited: maps.Clone(c.RateLimited)}
	for ep, m := range c.Requests {
		out.Requests[ep] = maps.Clone(m)
	}
	return out
}

// record logs a request; s.mu must be held.
func (s *Sim) record(r Request) {
	m := s.counts.Requests[r.Endpoint]
	if m == nil {
		m = map[int]int{}
		s.counts.Requests[r.Endpoint] = m
	}
	m[r.Code]++
	if r.Bucket != "" {
		s.counts.RateLimited[r.Bucket]++
	}
	s.requests = appendBounded(s.requests, r, s.logLimit)
}

func appendBounded[T any](list []T, v T, limit int) []T {
	if len(list) >= limit {
		n := copy(list, list[len(list)-limit+1:])
		list = list[:n]
	}
	return append(list, v)
}

// Requests returns the request log, oldest first.
func (s *Sim) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ControlLog returns every logged control request, oldest first.
func (s *Sim) ControlLog() []ControlRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ControlRecord, len(s.controls))
	for i, c := range s.controls {
		c.Value = clone(c.Value)
		out[i] = c
	}
	return out
}

// Counts returns a copy of the running totals.
func (s *Sim) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts.copy()
}

// ResetLog empties the request log, the control log and the counts.
func (s *Sim) ResetLog() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests, s.controls, s.counts = nil, nil, newCounts()
}

// Event is a device event as the service pushes it.
type Event struct {
	SKU      string
	Device   string
	Instance string
	// Payload is the JSON the live service publishes on its MQTT topic:
	// {"sku","device","deviceName","capabilities":[{"type":
	// "devices.capabilities.event","instance":…,"state":[{"name","value","message"}]}]}
	Payload []byte
}

// OnEvent registers a listener for raised events and returns a function
// that removes it. Listeners are called in RaiseEvent's goroutine, in the
// order they registered; they must not call back into RaiseEvent.
func (s *Sim) OnEvent(fn func(Event)) (remove func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextListener
	s.nextListener++
	s.listeners[id] = fn
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.listeners, id)
	}
}

// RaiseEvent makes a device report an event of one of its event
// capabilities: option names the eventState option ("lack"); empty means
// the first. Every listener gets it; the event is returned too.
func (s *Sim) RaiseEvent(device, instance, option string) (Event, error) {
	s.mu.Lock()
	sd, err := s.lookup(device)
	if err != nil {
		s.mu.Unlock()
		return Event{}, err
	}
	if !sd.online {
		s.mu.Unlock()
		return Event{}, fmt.Errorf("cloudsim: raise %s on %s: the device is offline; SetOnline it first", instance, device)
	}
	c, ok := sd.dev.Capability(instance)
	if !ok || c.Type != capability.TypeEvent {
		s.mu.Unlock()
		return Event{}, fmt.Errorf("cloudsim: raise %s on %s: the device has no such event capability", instance, device)
	}
	var opt capability.EventOption
	found := false
	if c.EventState != nil {
		for _, o := range c.EventState.Options {
			if option == "" || o.Name == option {
				opt, found = o, true
				break
			}
		}
	}
	if !found {
		s.mu.Unlock()
		return Event{}, fmt.Errorf("cloudsim: raise %s on %s: no event option %q in its definition", instance, device, option)
	}
	type eventState struct {
		Name    string `json:"name"`
		Value   any    `json:"value"`
		Message string `json:"message"`
	}
	type eventCap struct {
		Type     string       `json:"type"`
		Instance string       `json:"instance"`
		State    []eventState `json:"state"`
	}
	payload, err := json.Marshal(struct {
		SKU          string     `json:"sku"`
		Device       string     `json:"device"`
		DeviceName   string     `json:"deviceName"`
		Capabilities []eventCap `json:"capabilities"`
	}{sd.dev.SKU, sd.dev.Device, sd.dev.Name, []eventCap{{
		Type: capability.TypeEvent, Instance: instance,
		State: []eventState{{Name: opt.Name, Value: opt.Value, Message: opt.Message}},
	}}})
	if err != nil {
		s.mu.Unlock()
		return Event{}, fmt.Errorf("cloudsim: encode event %s of %s: %w", instance, device, err)
	}
	ev := Event{SKU: sd.dev.SKU, Device: sd.dev.Device, Instance: instance, Payload: payload}
	ids := make([]int, 0, len(s.listeners))
	for id := range s.listeners {
		ids = append(ids, id)
	}
	fns := make([]func(Event), 0, len(ids))
	slices.Sort(ids)
	for _, id := range ids {
		fns = append(fns, s.listeners[id])
	}
	s.mu.Unlock()
	for _, fn := range fns {
		p := append([]byte(nil), ev.Payload...)
		fn(Event{SKU: ev.SKU, Device: ev.Device, Instance: ev.Instance, Payload: p})
	}
	return ev, nil
}

// RaiseEventsEvery raises an event of a random online device every interval
// until ctx ends, for the demo's stream of events; nil rnd means a fixed seed.
func (s *Sim) RaiseEventsEvery(ctx context.Context, every time.Duration, rnd *rand.Rand) {
	if every <= 0 {
		return
	}
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(s.seed, 1))
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		type source struct{ device, instance string }
		var sources []source
		for _, d := range s.Devices() {
			for _, c := range d.Capabilities {
				if c.Type == capability.TypeEvent {
					sources = append(sources, source{d.Device, c.Instance})
				}
			}
		}
		if len(sources) == 0 {
			continue
		}
		src := sources[rnd.IntN(len(sources))]
		_, _ = s.RaiseEvent(src.device, src.instance, "") // an offline device raises nothing
	}
}
