package web

import (
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/time/rate"
)

// Per-client bounds: what one source address may cost the others. A
// client is its IP address; an IPv6 client its /64 (a host there picks
// any address of its network).

// maxClients bounds each per-client table; past it, the clients not in it
// share one entry (the overflow).
const maxClients = 4096

// overflow is the key the clients past maxClients share.
var overflow = netip.Prefix{}

// clientOf is the request's client: its source address.
func clientOf(r *http.Request) netip.Prefix {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return overflow
	}
	a := ap.Addr().Unmap().WithZone("")
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// clientText is a client for the log.
func clientText(p netip.Prefix) string {
	switch {
	case p == overflow:
		return "others"
	case p.Addr().Is4():
		return p.Addr().String()
	}
	return p.String()
}

// Wrong tokens: each client may guess tokenTries times, then one more
// every tokenEvery; beyond, every request with a token (bearer or login)
// is answered 429 with Retry-After before the token is even compared.
const (
	tokenTries = 5
	tokenEvery = 10 * time.Second
)

// guesses counts each client's wrong tokens.
type guesses struct {
	mu sync.Mutex
	m  map[netip.Prefix]*rate.Limiter
}

func (g *guesses) limiter(c netip.Prefix, now time.Time) *rate.Limiter {
	if g.m == nil {
		g.m = map[netip.Prefix]*rate.Limiter{}
	}
	if l := g.m[c]; l != nil {
		return l
	}
	if len(g.m) >= maxClients {
		for k, l := range g.m { // forget those that may guess fully again
			if l.TokensAt(now) >= tokenTries {
				delete(g.m, k)
			}
		}
		if len(g.m) >= maxClients {
			c = overflow
			if l := g.m[c]; l != nil {
				return l
			}
		}
	}
	l := rate.NewLimiter(rate.Every(tokenEvery), tokenTries)
	g.m[c] = l
	return l
}

// wait is how long the client must wait before its next guess; 0: now.
func (g *guesses) wait(c netip.Prefix, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m[c] == nil {
		return 0
	}
	t := g.m[c].TokensAt(now)
	if t >= 1 {
		return 0
	}
	return time.Duration((1 - t) * float64(tokenEvery))
}

// wrong counts a wrong token of the client.
func (g *guesses) wrong(c netip.Prefix, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.limiter(c, now).AllowN(now, 1)
}

// retryAfter is a wait as Retry-After's whole seconds, at least 1.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int((d+time.Second-1)/time.Second)))
}

// rejectLog logs refused requests, at most one line a second per client
// whatever the log level, each with the count of those not logged since
// (an attack must not flood the log, the page's problems or
// bridge/logging).
type rejectLog struct {
	log   zerolog.Logger
	every time.Duration
	mu    sync.Mutex
	m     map[netip.Prefix]*rejected
}

type rejected struct {
	last   time.Time
	unsaid int
}

// note logs a refusal of r with status and why, unless this client's last
// line is under a second old.
func (l *rejectLog) note(r *http.Request, now time.Time, status int, why string) {
	c := clientOf(r)
	l.mu.Lock()
	if l.m == nil {
		l.m = map[netip.Prefix]*rejected{}
	}
	e := l.m[c]
	if e == nil {
		if len(l.m) >= maxClients {
			for k, old := range l.m {
				if now.Sub(old.last) >= l.every && old.unsaid == 0 {
					delete(l.m, k)
				}
			}
			if len(l.m) >= maxClients {
				c = overflow
			}
		}
		if e = l.m[c]; e == nil {
			e = &rejected{}
			l.m[c] = e
		}
	}
	if !e.last.IsZero() && now.Sub(e.last) < l.every {
		e.unsaid++
		l.mu.Unlock()
		return
	}
	unsaid := e.unsaid
	e.last, e.unsaid = now, 0
	l.mu.Unlock()
	ev := l.log.Warn().Str("client", clientText(c)).Int("status", status).Str("method", clip(r.Method, 16)).
		Str("path", clip(r.URL.Path, 64)).Str("reason", why)
	if unsaid > 0 {
		ev = ev.Int("not_logged", unsaid)
	}
	ev.Msg("http request refused")
}

// clip cuts what a client sent to n bytes for the log (marked).
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// streamSlots bounds the open event streams: in all, and per client (a
// client holding many streams it never reads cannot take every slot).
// Streams through the ingress listener have their own pool: they all come
// from the one proxy, whose users Home Assistant authenticated.
type streamSlots struct {
	max, perClient int
	mu             sync.Mutex
	total, ingress int
	byClient       map[netip.Prefix]int
	closed         bool
}

// open takes a slot; "" when taken, else why not.
func (s *streamSlots) open(c netip.Prefix, viaIngress bool) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return "the bridge is stopping"
	case viaIngress:
		if s.ingress >= s.max {
			return "too many event streams open through Home Assistant"
		}
		s.ingress++
		return ""
	case s.total >= s.max:
		return "too many event streams open"
	case s.byClient[c] >= s.perClient:
		return "too many event streams open from this address"
	}
	if s.byClient == nil {
		s.byClient = map[netip.Prefix]int{}
	}
	s.total++
	s.byClient[c]++
	return ""
}

// release gives the slot back.
func (s *streamSlots) release(c netip.Prefix, viaIngress bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if viaIngress {
		s.ingress--
		return
	}
	s.total--
	if s.byClient[c]--; s.byClient[c] <= 0 {
		delete(s.byClient, c)
	}
}
