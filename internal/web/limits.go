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

// Per-client bounds, so that one source address cannot cost the others. A
// client is its IP address, or its /64 for IPv6, where a host may pick any address.

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

// Wrong tokens: each client may guess tokenTries times, then one more every
// tokenEvery, and all clients together globalTries times, then one every
// globalEvery, so that many addresses do not multiply the rate. The shared
// budget only raises the cost: a client with its own tries whole always has its
// token compared, so nobody else can lock a resident out.
const (
	tokenTries  = 5
	tokenEvery  = 10 * time.Second
	globalTries = 20
	globalEvery = 10 * time.Second
)

// guesses counts wrong tokens, per client and in all, on the handler's clock,
// read under the lock so that a limiter's instants never go back.
type guesses struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[netip.Prefix]*rate.Limiter
	all *rate.Limiter
}

// slot is the key of client c's entry: c, or the overflow when the table
// is full of clients that may not guess fully yet.
func (g *guesses) slot(c netip.Prefix, now time.Time) netip.Prefix {
	if g.m[c] != nil || len(g.m) < maxClients {
		return c
	}
	for k, l := range g.m { // forget those that may guess fully again
		if l.TokensAt(now) >= tokenTries {
			delete(g.m, k)
		}
	}
	if len(g.m) < maxClients {
		return c
	}
	return overflow
}

// tries is what the client at key k has left at now: tokenTries for one
// that guessed wrong long enough ago (or never).
func (g *guesses) tries(k netip.Prefix, now time.Time) float64 {
	if l := g.m[k]; l != nil {
		return l.TokensAt(now)
	}
	return tokenTries
}

// try accounts a token that client c presents now; right says whether it is
// HTTP_TOKEN. wait is 0 when the token counts as compared, else how long c must
// wait, and the answer must then not depend on right. all says the shared
// budget is what made the wait longer.
func (g *guesses) try(c netip.Prefix, right bool) (wait time.Duration, all bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if g.all == nil {
		g.all = rate.NewLimiter(rate.Every(globalEvery), globalTries)
	}
	k := g.slot(c, now)
	have, spent := g.tries(k, now), g.all.TokensAt(now) < 1
	cost := 1.0
	if spent {
		cost = tokenTries
	}
	if have < cost {
		// Whichever comes first: its tries whole, or a try of its own
		// once the budget of all has one again.
		wait = untilTokens(cost-have, tokenEvery)
		if spent {
			wait = min(wait, max(untilTokens(1-have, tokenEvery), untilTokens(1-g.all.TokensAt(now), globalEvery)))
		}
		return wait, spent && have >= 1
	}
	if right {
		return 0, false
	}
	if g.m == nil {
		g.m = map[netip.Prefix]*rate.Limiter{}
	}
	if g.m[k] == nil {
		g.m[k] = rate.NewLimiter(rate.Every(tokenEvery), tokenTries)
	}
	g.m[k].AllowN(now, int(cost))
	g.all.AllowN(now, 1) // refused while spent: wrong tokens then cost their clients only
	return 0, false
}

// untilTokens is how long a bucket refilling one token every every takes
// to gain n (0 when n ≤ 0).
func untilTokens(n float64, every time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	return time.Duration(n * float64(every))
}

// retryAfter is a wait as Retry-After's whole seconds, at least 1.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int((d+time.Second-1)/time.Second)))
}

// rejectLog logs refused requests at most once a second per client, with the
// count not logged since, so that an attack cannot flood the log or the page.
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

// streamSlots bounds the open event streams in all and per client, so that one
// client cannot take every slot; ingress streams, all from Home Assistant's
// proxy, have a pool of their own.
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
