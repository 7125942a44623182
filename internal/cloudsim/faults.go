package cloudsim

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Malformation is how a malformed answer is broken.
type Malformation int

const (
	// MalformedNonJSON replaces the body with an HTML error page, as a proxy
	// in front of the service might send.
	MalformedNonJSON Malformation = iota + 1
	// MalformedTruncated cuts the JSON body in half.
	MalformedTruncated
)

// Faults injects failures into the simulator's answers; its methods are
// safe for concurrent use. An endpoint is an Endpoint* name or AnyEndpoint.
// A failed, reset or hung request costs no token and changes no state; a
// malformed answer is broken after the request took effect.
type Faults struct {
	mu        sync.Mutex
	latency   map[string]time.Duration
	rules     []*faultRule
	fractions map[string]fraction
	hangs     map[string]chan struct{}
	rng       *rand.Rand
	hung      atomic.Int64
}

type faultKind int

const (
	faultNone faultKind = iota
	faultFail
	faultMalform
	faultReset
)

type faultRule struct {
	endpoint  string
	remaining int
	kind      faultKind
	status    int
	malform   Malformation
}

type fraction struct {
	p      float64
	status int
}

// action is what the faults decided for one request.
type action struct {
	latency time.Duration
	hang    <-chan struct{}
	kind    faultKind
	status  int
	malform Malformation
}

func newFaults(seed uint64) *Faults {
	return &Faults{
		latency:   map[string]time.Duration{},
		fractions: map[string]fraction{},
		hangs:     map[string]chan struct{}{},
		rng:       rand.New(rand.NewPCG(seed, 0x5eed)),
	}
}

// SetLatency delays every answer of the endpoint by d (0 removes the delay).
// A delay for AnyEndpoint adds to an endpoint's own.
func (f *Faults) SetLatency(endpoint string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d <= 0 {
		delete(f.latency, endpoint)
		return
	}
	f.latency[endpoint] = d
}

// FailNext answers the next n requests of the endpoint with the HTTP status
// (normally a 5xx) and a JSON error body, without processing them.
func (f *Faults) FailNext(endpoint string, n, status int) {
	f.add(&faultRule{endpoint: endpoint, remaining: n, kind: faultFail, status: status})
}

// FailFraction answers a fraction (0 to 1) of the endpoint's requests with
// the status, chosen by the simulator's seeded generator; 0 switches it off.
func (f *Faults) FailFraction(endpoint string, p float64, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p <= 0 {
		delete(f.fractions, endpoint)
		return
	}
	f.fractions[endpoint] = fraction{p: min(p, 1), status: status}
}

// MalformNext breaks the answers of the next n requests of the endpoint.
func (f *Faults) MalformNext(endpoint string, n int, m Malformation) {
	f.add(&faultRule{endpoint: endpoint, remaining: n, kind: faultMalform, malform: m})
}

// ResetNext closes the connection of the next n requests of the endpoint
// without answering (a TCP reset where the connection allows it).
func (f *Faults) ResetNext(endpoint string, n int) {
	f.add(&faultRule{endpoint: endpoint, remaining: n, kind: faultReset})
}

// Hang makes the endpoint's requests block until their context ends (the
// client gives up) or release is called; released requests are then served
// normally. Calling release more than once is harmless.
func (f *Faults) Hang(endpoint string) (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch, ok := f.hangs[endpoint]
	if !ok {
		ch = make(chan struct{})
		f.hangs[endpoint] = ch
	}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if cur, ok := f.hangs[endpoint]; ok && cur == ch {
			delete(f.hangs, endpoint)
			close(ch)
		}
	}
}

// Hung is the number of requests blocked by Hang right now, so a test can
// wait until its request is stuck before acting.
func (f *Faults) Hung() int { return int(f.hung.Load()) }

// Clear removes every fault and releases every hung request.
func (f *Faults) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ep, ch := range f.hangs {
		close(ch)
		delete(f.hangs, ep)
	}
	clear(f.latency)
	clear(f.fractions)
	f.rules = nil
}

func (f *Faults) add(r *faultRule) {
	if r.remaining <= 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, r)
}

// next decides the faults of one request of the endpoint and uses up a
// counted rule if one matches (the oldest first).
func (f *Faults) next(endpoint string) action {
	f.mu.Lock()
	defer f.mu.Unlock()
	var a action
	a.latency = f.latency[AnyEndpoint]
	if endpoint != AnyEndpoint {
		a.latency += f.latency[endpoint]
	}
	if ch, ok := f.hangs[endpoint]; ok {
		a.hang = ch
	} else if ch, ok := f.hangs[AnyEndpoint]; ok {
		a.hang = ch
	}
	for i, r := range f.rules {
		if r.endpoint != AnyEndpoint && r.endpoint != endpoint {
			continue
		}
		r.remaining--
		if r.remaining <= 0 {
			f.rules = append(f.rules[:i:i], f.rules[i+1:]...)
		}
		a.kind, a.status, a.malform = r.kind, r.status, r.malform
		return a
	}
	for _, ep := range []string{endpoint, AnyEndpoint} {
		if fr, ok := f.fractions[ep]; ok {
			if f.rng.Float64() < fr.p {
				a.kind, a.status = faultFail, fr.status
			}
			return a
		}
	}
	return a
}
