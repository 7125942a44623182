package web

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"cloud2mqtt/internal/capability"
)

//go:embed static
var static embed.FS

// Options configure a Handler.
type Options struct {
	// Source is what the page shows (required).
	Source Source
	// Actions carries out the page's buttons; nil offers none.
	Actions Actions
	// History feeds the budget's chart and pace; nil shows no chart.
	History *History
	// Addr is the configured HTTP_ADDR: actions without a token need it
	// to be a loopback address.
	Addr string
	// Token is HTTP_TOKEN ("" none): when set, actions need it.
	Token string
	// Interval is how often an open event stream looks for changes
	// (default and at most 1 s; tests set it short).
	Interval time.Duration
	// MaxStreams bounds the event streams open at once (default 16).
	MaxStreams int
	// Now is the clock (default time.Now); its location is the day's.
	Now func() time.Time
}

// Handler serves the page and its API. Close it (or register Close with
// http.Server.RegisterOnShutdown) so that open event streams end.
type Handler struct {
	opt   Options
	guard *guard
	mux   *http.ServeMux
	next  http.Handler
	files map[string]file

	failedLogins *rate.Limiter

	mu      sync.Mutex
	streams int
	done    chan struct{}
	closed  bool
}

type file struct {
	body []byte
	typ  string
}

// New returns the handler. It serves "/" and "/api/...": mount it at the
// root of a mux beside /healthz and /metrics.
func New(o Options) (*Handler, error) {
	if o.Source == nil {
		return nil, errors.New("web: Options.Source is required")
	}
	if o.Interval <= 0 || o.Interval > time.Second {
		o.Interval = time.Second
	}
	if o.MaxStreams <= 0 {
		o.MaxStreams = 16
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	g, err := newGuard(o.Addr, o.Token)
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	h := &Handler{opt: o, guard: g, mux: http.NewServeMux(), done: make(chan struct{}),
		failedLogins: rate.NewLimiter(rate.Every(time.Second), 5)}
	if err := h.loadFiles(); err != nil {
		return nil, err
	}
	h.routes()
	h.next = securityHeaders(h.mux)
	return h, nil
}

func (h *Handler) loadFiles() error {
	h.files = map[string]file{}
	for name, typ := range map[string]string{
		"index.html":  "text/html; charset=utf-8",
		"app.js":      "text/javascript; charset=utf-8",
		"app.css":     "text/css; charset=utf-8",
		"favicon.svg": "image/svg+xml",
	} {
		b, err := static.ReadFile("static/" + name)
		if err != nil {
			return fmt.Errorf("web: embedded %s: %w", name, err)
		}
		h.files[name] = file{b, typ}
	}
	return nil
}

func (h *Handler) routes() {
	m := h.mux
	m.HandleFunc("GET /{$}", h.serveFile("index.html"))
	m.HandleFunc("GET /app.js", h.serveFile("app.js"))
	m.HandleFunc("GET /app.css", h.serveFile("app.css"))
	m.HandleFunc("GET /favicon.svg", h.serveFile("favicon.svg"))
	m.HandleFunc("GET /api/session", h.session)
	m.HandleFunc("GET /api/devices", h.devices)
	m.HandleFunc("GET /api/devices/{id}", h.device)
	m.HandleFunc("GET /api/budget", h.budget)
	m.HandleFunc("GET /api/problems", h.problems)
	m.HandleFunc("GET /api/events", h.events)
	m.HandleFunc("POST /api/login", h.login)
	m.HandleFunc("POST /api/logout", h.logout)
	m.HandleFunc("POST /api/actions/{action}", h.action)
	m.HandleFunc("/api/actions/{action}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "web: actions are POSTs")
	})
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "web: no such API endpoint "+r.URL.Path+"; see docs/web.md")
	})
}

// ServeHTTP serves the page and the API.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.next.ServeHTTP(w, r) }

// Close ends the open event streams; later ones are refused.
func (h *Handler) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.done)
	}
}

func (h *Handler) serveFile(name string) http.HandlerFunc {
	f := h.files[name]
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", f.typ)
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // served as application/json with nosniff
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"status":"error","error":"web: cannot encode the answer"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// writeError answers like the MQTT responses: {"status":"error","error":…}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"status": "error", "error": msg})
}

// sessionJSON tells the page what it may do. It holds no secret but the
// CSRF token, which only a same-origin page can read.
type sessionJSON struct {
	CSRFToken     string `json:"csrf_token"`
	Actions       string `json:"actions"` // "open", "token" or "off"
	ActionsOffer  bool   `json:"actions_offered"`
	Authenticated bool   `json:"authenticated"`
	Reason        string `json:"reason,omitempty"`
}

func (h *Handler) session(w http.ResponseWriter, r *http.Request) {
	s := sessionJSON{CSRFToken: h.guard.csrf, Actions: h.guard.access(r), ActionsOffer: h.opt.Actions != nil}
	switch s.Actions {
	case accessOff:
		s.Reason = h.guard.offReason(r)
	case accessToken:
		s.Authenticated = h.guard.loggedIn(r) || h.guard.bearer(r)
		s.Reason = "actions need HTTP_TOKEN: log in with it"
	}
	writeJSON(w, http.StatusOK, s)
}

// devicesJSON is /api/devices.
type devicesJSON struct {
	Now     time.Time `json:"now"`
	Devices []Device  `json:"devices"`
}

func (h *Handler) deviceList() []Device {
	ds := h.opt.Source.Devices()
	if ds == nil {
		ds = []Device{}
	}
	return ds
}

func (h *Handler) devices(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, devicesJSON{Now: h.opt.Now(), Devices: h.deviceList()})
}

func (h *Handler) device(w http.ResponseWriter, r *http.Request) {
	d, ok := h.opt.Source.Device(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, "web: no device has the id "+quote(r.PathValue("id"))+"; the ids are those of /api/devices")
		return
	}
	if d.Values == nil {
		d.Values = map[string]any{}
	}
	if d.Capabilities == nil {
		d.Capabilities = []capability.Capability{}
	}
	writeJSON(w, http.StatusOK, d)
}

// budgetJSON is /api/budget: the scheduler's figures, the hourly chart
// and the projection to midnight.
type budgetJSON struct {
	Budget
	Now      time.Time `json:"now"`
	Midnight time.Time `json:"midnight"`
	// PacePerHour is the requests of the last hour (or since the start,
	// when more recent); null before a minute has been seen.
	PacePerHour *float64 `json:"pace_per_hour"`
	// Projected is RequestsToday plus the pace until midnight.
	Projected *int `json:"projected_today"`
	// OverLimit is true when the projection passes the daily limit.
	OverLimit bool   `json:"over_limit"`
	Hourly    []Hour `json:"hourly"`
}

func (h *Handler) budgetNow() budgetJSON {
	now := h.opt.Now()
	b := budgetJSON{Budget: h.opt.Source.Budget(), Now: now, Hourly: []Hour{}}
	if b.Buckets == nil {
		b.Buckets = []Bucket{}
	}
	y, m, d := now.Date()
	b.Midnight = time.Date(y, m, d+1, 0, 0, 0, 0, now.Location())
	if h.opt.History != nil {
		b.Hourly = h.opt.History.Hours(now)
		if pace, ok := h.opt.History.PerHour(now); ok {
			proj := b.RequestsToday + int(pace*b.Midnight.Sub(now).Hours()+0.5)
			b.PacePerHour, b.Projected = &pace, &proj
			b.OverLimit = b.DailyLimit > 0 && proj > b.DailyLimit
		}
	}
	return b
}

func (h *Handler) budget(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, h.budgetNow())
}

// problemsJSON is /api/problems.
type problemsJSON struct {
	Problems []Problem `json:"problems"`
}

func (h *Handler) problemList() []Problem {
	ps := slices.Clone(h.opt.Source.Problems())
	if ps == nil {
		ps = []Problem{}
	}
	slices.SortStableFunc(ps, func(a, b Problem) int { return b.Time.Compare(a.Time) })
	return ps
}

func (h *Handler) problems(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, problemsJSON{h.problemList()})
}

// loginJSON is the body of POST /api/login.
type loginJSON struct {
	Token string `json:"token"`
}

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if status, msg := h.guard.checkPost(r, true); status != 0 {
		writeError(w, status, msg)
		return
	}
	if h.guard.token == "" {
		writeError(w, http.StatusBadRequest, "web: there is nothing to log in to: HTTP_TOKEN is not set")
		return
	}
	var body loginJSON
	if err := decodeBody(w, r, &body); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !equalSecret(body.Token, h.guard.token) {
		if !h.failedLogins.Allow() {
			writeError(w, http.StatusTooManyRequests, "web: too many wrong tokens; wait a few seconds")
			return
		}
		writeError(w, http.StatusUnauthorized, "web: wrong token: it is the HTTP_TOKEN the bridge runs with")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: h.guard.cookie, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	if status, msg := h.guard.checkPost(r, true); status != 0 {
		writeError(w, status, msg)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// actionJSON is the body of POST /api/actions/{action}.
type actionJSON struct {
	Device       string  `json:"device"`
	Enabled      *bool   `json:"enabled"`
	PollInterval *string `json:"poll_interval"`
}

// decodeBody reads a small JSON object, naming what is wrong.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf(`web: the body must be a small JSON object such as {"device":"<id>"}: %v`, err)
	}
	return nil
}

// Action names (POST /api/actions/{action}).
const (
	actionRead         = "read"
	actionEnabled      = "enabled"
	actionPollInterval = "poll-interval"
	actionRefresh      = "refresh-devices"
	actionRepublish    = "republish-discovery"
)

func (h *Handler) action(w http.ResponseWriter, r *http.Request) {
	if status, msg := h.guard.checkPost(r, false); status != 0 {
		writeError(w, status, msg)
		return
	}
	a := h.opt.Actions
	if a == nil {
		writeError(w, http.StatusNotImplemented, "web: this bridge offers no actions here")
		return
	}
	var body actionJSON
	if err := decodeBody(w, r, &body); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	name := r.PathValue("action")
	needDevice := name == actionRead || name == actionEnabled || name == actionPollInterval
	if needDevice && body.Device == "" {
		writeError(w, http.StatusBadRequest, `web: `+name+` needs {"device":"<id>"}`)
		return
	}
	var err error
	switch name {
	case actionRead:
		err = a.ReadNow(body.Device)
	case actionEnabled:
		if body.Enabled == nil {
			writeError(w, http.StatusBadRequest, `web: enabled needs {"device":"<id>","enabled":true|false}`)
			return
		}
		err = a.SetEnabled(body.Device, *body.Enabled)
	case actionPollInterval:
		iv := ""
		if body.PollInterval != nil {
			iv = strings.TrimSpace(*body.PollInterval)
		}
		err = a.SetPollInterval(body.Device, iv)
	case actionRefresh:
		err = a.RefreshDevices()
	case actionRepublish:
		err = a.RepublishDiscovery()
	default:
		writeError(w, http.StatusNotFound, "web: unknown action "+quote(name)+"; the actions are "+
			strings.Join([]string{actionRead, actionEnabled, actionPollInterval, actionRefresh, actionRepublish}, ", "))
		return
	}
	switch {
	case errors.Is(err, ErrUnknownDevice):
		writeError(w, http.StatusNotFound, err.Error())
	case err != nil:
		writeError(w, http.StatusBadRequest, err.Error())
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
