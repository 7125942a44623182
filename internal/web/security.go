package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The page's guards, all in this file and limits.go (docs/security.md, "The status page"):
//   - every response carries a strict Content-Security-Policy, nosniff and no framing;
//   - a Host that is not one of the bridge's names gets 421 (DNS rebinding), except /healthz;
//   - actions are same-origin JSON POSTs carrying the CSRF token, or the bearer token;
//   - actions need HTTP_TOKEN when it is set or the page is not on loopback; through
//     ingress Home Assistant has already authenticated the user;
//   - wrong tokens are slowed per client and in all, and refusals are logged sparingly.

// csp is the Content-Security-Policy of every response; cspIngress lets Home
// Assistant's own page frame the ingress listener.
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

// isLoopbackAddr reports whether a listen address binds loopback only. A host
// name other than localhost is not trusted to stay local.
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

// sameOrigin refuses what a browser marks as cross-site (Sec-Fetch-Site, or an
// Origin whose host is not the request's). Scripts that send neither pass on
// HTTP_ADDR but still need a token; through ingress the Origin is required and
// must match X-Forwarded-Host, because every action there comes from a browser.
func sameOrigin(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return false
	}
	ingress := viaIngress(r)
	o := r.Header.Get("Origin")
	if o == "" {
		return !ingress
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	host := r.Host
	if ingress {
		// The first of a list is the host the browser used, before any
		// proxy in front of Home Assistant.
		host, _, _ = strings.Cut(r.Header.Get("X-Forwarded-Host"), ",")
	}
	return sameHost(u, strings.TrimSpace(host))
}

// sameHost reports whether a Host header (host or host:port) names the
// origin u, a port left out being its scheme's default.
func sameHost(u *url.URL, hostHeader string) bool {
	if hostHeader == "" {
		return false
	}
	port := func(p string) string {
		switch {
		case p != "":
			return p
		case u.Scheme == "https":
			return "443"
		}
		return "80"
	}
	host, p, err := net.SplitHostPort(hostHeader)
	if err != nil {
		host, p = hostHeader, ""
	}
	return normHost(u.Hostname()) == normHost(host) && port(u.Port()) == port(p)
}

// refusal is a refused request: its status, the error's text and, for
// 429 and 503, when to try again.
type refusal struct {
	status int
	msg    string
	retry  time.Duration
}

// tokenOK checks the bearer token, if any, against HTTP_TOKEN; it refuses a
// wrong one or a client that must wait. Without HTTP_TOKEN bearers are ignored.
func (h *Handler) tokenOK(r *http.Request) (bool, *refusal) {
	v, has := bearerOf(r)
	if !has || h.guard.token == "" {
		return false, nil
	}
	if ref := h.checkToken(r, v, "wrong bearer token: send Authorization: Bearer <HTTP_TOKEN>, the token the bridge runs with"); ref != nil {
		return false, ref
	}
	return true, nil
}

// checkToken compares a sent token with HTTP_TOKEN: nil when right, 401 when
// wrong, 429 while the client must wait (whatever it sent, so nothing leaks).
func (h *Handler) checkToken(r *http.Request, token, wrong string) *refusal {
	right := equalSecret(token, h.guard.token)
	wait, all := h.guesses.try(clientOf(r), right)
	switch {
	case wait > 0 && all:
		return &refusal{status: http.StatusTooManyRequests, retry: wait,
			msg: fmt.Sprintf("too many wrong tokens from many addresses: this address may try again in %s s", retryAfter(wait))}
	case wait > 0:
		return &refusal{status: http.StatusTooManyRequests, retry: wait,
			msg: fmt.Sprintf("too many wrong tokens from this address: try again in %s s", retryAfter(wait))}
	case !right:
		return &refusal{status: http.StatusUnauthorized, msg: wrong}
	}
	return nil
}

// checkPost is the guard of every POST: nil when allowed. login is the
// login request itself, which needs no token but the CSRF guard.
func (h *Handler) checkPost(r *http.Request, login bool) *refusal {
	g := h.guard
	if !sameOrigin(r) {
		return &refusal{status: http.StatusForbidden, msg: "cross-origin request refused"}
	}
	if !jsonType(r.Header.Get("Content-Type")) {
		return &refusal{status: http.StatusUnsupportedMediaType, msg: `web: send a JSON body with Content-Type: application/json, e.g. {"device":"<id>"}`}
	}
	authed, ref := h.tokenOK(r)
	if ref != nil {
		return ref
	}
	if !authed && !equalSecret(r.Header.Get(csrfHeader), g.csrf) {
		return &refusal{status: http.StatusForbidden, msg: "missing or wrong " + csrfHeader + " header: read csrf_token from GET /api/session (or send Authorization: Bearer <HTTP_TOKEN>)"}
	}
	if login {
		return nil
	}
	switch g.access(r) {
	case accessOff:
		return &refusal{status: http.StatusForbidden, msg: "actions are off: " + g.offReason(r)}
	case accessToken:
		if !authed && !g.loggedIn(r) {
			return &refusal{status: http.StatusUnauthorized, msg: "actions need HTTP_TOKEN: log in on the page, or send Authorization: Bearer <HTTP_TOKEN>"}
		}
	}
	return nil
}

// jsonType reports whether a Content-Type is application/json, with or without
// parameters, and not a type that merely starts alike.
func jsonType(ct string) bool {
	t, _, err := mime.ParseMediaType(ct)
	return err == nil && t == "application/json"
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
