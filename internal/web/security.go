package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// The page's security, in one place:
//   - every response carries a strict Content-Security-Policy (no inline
//     script or style, nothing from another origin) and nosniff;
//   - actions are POSTs with a JSON body, refused unless same-origin
//     (Origin and Sec-Fetch-Site, when the browser sends them) and
//     carrying the process's CSRF token in X-CSRF-Token, which only a
//     same-origin page can read (/api/session); a request with the bearer
//     token needs no CSRF token (no browser adds it by itself);
//   - actions need HTTP_TOKEN (bearer, or the cookie of /api/login)
//     whenever it is set, or when the page is not reached over loopback
//     (HTTP_ADDR not a loopback address, or a Host header that is not one:
//     a DNS-rebinding page cannot pass for localhost); without a token
//     configured they are then off.

// csp is the Content-Security-Policy of every response.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// cookieName is the login cookie's name.
const cookieName = "cloud2mqtt_session"

// csrfHeader carries the CSRF token.
const csrfHeader = "X-CSRF-Token"

// securityHeaders wraps every response.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
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
	accessOpen  = "open"  // loopback without a token: anyone on this machine
	accessToken = "token" // HTTP_TOKEN needed (bearer or login)
	accessOff   = "off"   // not loopback and no HTTP_TOKEN configured
)

// access says what actions need for this request.
func (g *guard) access(r *http.Request) string {
	switch {
	case g.token != "":
		return accessToken
	case g.loopbackBind && isLoopbackHost(requestHost(r)):
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
	return "this page was reached by the name " + requestHost(r) + ", not a loopback address, and HTTP_TOKEN is not set: open it as http://localhost or 127.0.0.1, or set HTTP_TOKEN"
}

func requestHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		return r.Host
	}
	return host
}

func equalSecret(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// bearer reports whether the request carries the token as a bearer.
func (g *guard) bearer(r *http.Request) bool {
	v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && g.token != "" && equalSecret(strings.TrimSpace(v), g.token)
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
func sameOrigin(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host || (u.Scheme != "http" && u.Scheme != "https") {
			return false
		}
	}
	return true
}

// checkPost is the guard of every POST: nil when allowed, else the
// status and message of the refusal. login is the login request itself,
// which needs no token but the CSRF guard.
func (g *guard) checkPost(r *http.Request, login bool) (int, string) {
	if !sameOrigin(r) {
		return http.StatusForbidden, "web: cross-origin request refused"
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		return http.StatusUnsupportedMediaType, `web: send a JSON body with Content-Type: application/json, e.g. {"device":"<id>"}`
	}
	authed := g.bearer(r)
	if !authed && !equalSecret(r.Header.Get(csrfHeader), g.csrf) {
		return http.StatusForbidden, "web: missing or wrong " + csrfHeader + " header: read csrf_token from GET /api/session (or send Authorization: Bearer <HTTP_TOKEN>)"
	}
	if login {
		return 0, ""
	}
	switch g.access(r) {
	case accessOff:
		return http.StatusForbidden, "web: actions are off: " + g.offReason(r)
	case accessToken:
		if !authed && !g.loggedIn(r) {
			return http.StatusUnauthorized, "web: actions need HTTP_TOKEN: log in on the page, or send Authorization: Bearer <HTTP_TOKEN>"
		}
	}
	return 0, ""
}
