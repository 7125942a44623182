package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The page's security, in one place (docs/web.md, "What is guarded"):
//   - every response (/healthz and /metrics too) carries a strict
//     Content-Security-Policy (no inline script or style, nothing from
//     another origin), nosniff and no framing (but by Home Assistant's
//     own page, through ingress);
//   - a Host that is not a name of the bridge is answered 421 (hosts.go:
//     DNS rebinding), every path but /healthz;
//   - actions are POSTs with a JSON body, refused unless same-origin
//     (Origin and Sec-Fetch-Site, when the browser sends them) and
//     carrying the process's CSRF token in X-CSRF-Token, which only a
//     same-origin page can read (/api/session); a request with the bearer
//     token needs no CSRF token (no browser adds it by itself);
//   - actions need HTTP_TOKEN (bearer, or the cookie of /api/login)
//     whenever it is set, or when the page is not reached over loopback
//     (HTTP_ADDR not a loopback address, or a Host header that is not one);
//     without a token configured they are then off. Through ingress they
//     need none: Home Assistant authenticated the user;
//   - wrong tokens are counted per client and answered 429 after a few
//     (limits.go), and every refusal is logged, at most once a second per
//     client.

// csp is the Content-Security-Policy of every response; cspIngress that
// of the ingress listener, whose page Home Assistant shows in a frame of
// its own page (the same origin, through its proxy).
const (
	csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
		"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
	cspIngress = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
		"frame-ancestors 'self'; base-uri 'none'; form-action 'self'"
)

// cookieName is the login cookie's name.
const cookieName = "cloud2mqtt_session"

// csrfHeader carries the CSRF token.
const csrfHeader = "X-CSRF-Token"

// setSecurityHeaders puts the headers of every response.
func setSecurityHeaders(w http.ResponseWriter, viaIngress bool) {
	h := w.Header()
	if viaIngress {
		h.Set("Content-Security-Policy", cspIngress)
		h.Set("X-Frame-Options", "SAMEORIGIN")
	} else {
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Frame-Options", "DENY")
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// guard holds the secrets of one process: the CSRF token and the login
// cookie's value, both random per process (a restart logs everyone out).
type guard struct {
	token        string // HTTP_TOKEN; "" when not configured
	loopbackBind bool   // HTTP_ADDR's host is a loopback address
	addr         string
	csrf         string
	cookie       string // the login cookie's value, an HMAC of the token
}

func newGuard(addr, token string) (*guard, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	csrf := make([]byte, 24)
	if _, err := rand.Read(csrf); err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("session\x00" + token))
	return &guard{token: token, loopbackBind: isLoopbackAddr(addr), addr: addr,
		csrf: hex.EncodeToString(csrf), cookie: hex.EncodeToString(mac.Sum(nil))}, nil
}

// isLoopbackAddr reports whether a listen address (host:port) binds
// loopback only. An empty host or a wildcard binds every interface; a
// host name other than localhost is not trusted to stay local.
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return isLoopbackHost(host)
}

func isLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Access to the actions, as /api/session reports it.
const (
	accessOpen  = "open"  // loopback without a token, or ingress: no login
	accessToken = "token" // HTTP_TOKEN needed (bearer or login)
	accessOff   = "off"   // not loopback and no HTTP_TOKEN configured
)

// access says what actions need for this request.
func (g *guard) access(r *http.Request) string {
	switch {
	case viaIngress(r):
		return accessOpen
	case g.token != "":
		return accessToken
	case g.loopbackBind && isLoopbackHost(hostOnly(r.Host)):
		return accessOpen
	default:
		return accessOff
	}
}

// offReason says why actions are off, for the page.
func (g *guard) offReason(r *http.Request) string {
	if !g.loopbackBind {
		return "this page is served on HTTP_ADDR=" + g.addr + ", which is not a loopback address, and HTTP_TOKEN is not set: set HTTP_TOKEN to allow actions"
	}
	return "this page was reached by the name " + clip(hostOnly(r.Host), 64) + ", not a loopback address, and HTTP_TOKEN is not set: open it as http://localhost or 127.0.0.1, or set HTTP_TOKEN"
}

func equalSecret(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// bearerOf is the request's bearer token; false when it has none.
func bearerOf(r *http.Request) (string, bool) {
	v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return strings.TrimSpace(v), ok
}

// loggedIn reports whether the request carries the login cookie.
func (g *guard) loggedIn(r *http.Request) bool {
	c, err := r.Cookie(cookieName)
	return err == nil && g.token != "" && equalSecret(c.Value, g.cookie)
}

// sameOrigin refuses what a browser marks as coming from another site:
// Sec-Fetch-Site other than same-origin (or none: typed by the user), or
// an Origin whose host is not the request's. Clients that send neither
// (scripts) pass; they still need the CSRF token or the bearer token.
// Through ingress the browser's host is the one Home Assistant was
// reached by, which its proxy passes in X-Forwarded-Host.
func sameOrigin(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	host := r.Host
	if viaIngress(r) {
		host = r.Header.Get("X-Forwarded-Host")
		if host == "" { // the proxy does not say: the CSRF token decides
			return true
		}
	}
	return strings.EqualFold(u.Host, host)
}

// refusal is a refused request: its status, the error's text and, for
// 429 and 503, when to try again.
type refusal struct {
	status int
	msg    string
	retry  time.Duration
}

// tokenOK checks the request's bearer token, if any, against HTTP_TOKEN:
// ok when it matches; a refusal while the client has guessed wrong too
// often; a wrong one is counted. Without HTTP_TOKEN configured bearers
// are ignored.
func (h *Handler) tokenOK(r *http.Request) (bool, *refusal) {
	v, has := bearerOf(r)
	if !has || h.guard.token == "" {
		return false, nil
	}
	if ref := h.guessWait(r); ref != nil {
		return false, ref
	}
	if equalSecret(v, h.guard.token) {
		return true, nil
	}
	h.guesses.wrong(clientOf(r), h.opt.Now())
	return false, &refusal{status: http.StatusUnauthorized,
		msg: "web: wrong bearer token: send Authorization: Bearer <HTTP_TOKEN>, the token the bridge runs with"}
}

// guessWait refuses a client that guessed wrong too often, until it may
// try again.
func (h *Handler) guessWait(r *http.Request) *refusal {
	wait := h.guesses.wait(clientOf(r), h.opt.Now())
	if wait <= 0 {
		return nil
	}
	return &refusal{status: http.StatusTooManyRequests, retry: wait,
		msg: fmt.Sprintf("web: too many wrong tokens from this address: try again in %s s", retryAfter(wait))}
}

// checkPost is the guard of every POST: nil when allowed. login is the
// login request itself, which needs no token but the CSRF guard.
func (h *Handler) checkPost(r *http.Request, login bool) *refusal {
	g := h.guard
	if !sameOrigin(r) {
		return &refusal{status: http.StatusForbidden, msg: "web: cross-origin request refused"}
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		return &refusal{status: http.StatusUnsupportedMediaType, msg: `web: send a JSON body with Content-Type: application/json, e.g. {"device":"<id>"}`}
	}
	authed, ref := h.tokenOK(r)
	if ref != nil {
		return ref
	}
	if !authed && !equalSecret(r.Header.Get(csrfHeader), g.csrf) {
		return &refusal{status: http.StatusForbidden, msg: "web: missing or wrong " + csrfHeader + " header: read csrf_token from GET /api/session (or send Authorization: Bearer <HTTP_TOKEN>)"}
	}
	if login {
		return nil
	}
	switch g.access(r) {
	case accessOff:
		return &refusal{status: http.StatusForbidden, msg: "web: actions are off: " + g.offReason(r)}
	case accessToken:
		if !authed && !g.loggedIn(r) {
			return &refusal{status: http.StatusUnauthorized, msg: "web: actions need HTTP_TOKEN: log in on the page, or send Authorization: Bearer <HTTP_TOKEN>"}
		}
	}
	return nil
}

// refuse answers a refused request and logs it (at most once a second per
// client).
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, ref *refusal) {
	if ref.retry > 0 {
		w.Header().Set("Retry-After", retryAfter(ref.retry))
	}
	h.rejects.note(r, h.opt.Now(), ref.status, ref.msg)
	writeError(w, ref.status, ref.msg)
}
