package web

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

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
	// Health and Metrics, when set, answer GET /healthz (to any Host, since a probe
	// may use any name) and GET /metrics, with the page's headers.
	Health, Metrics http.Handler
	// Addr is the configured HTTP_ADDR: actions without a token need it
	// to be a loopback address, and the Host rule admits its host.
	Addr string
	// Hosts are more names the endpoint answers to (HTTP_HOSTS).
	Hosts []string
	// HostName is the machine's host name, which the Host rule admits
	// (default os.Hostname()).
	HostName string
	// Token is HTTP_TOKEN ("" none): when set, actions need it.
	Token string
	// Log gets the refused requests (at most one line a second per
	// client); default none.
	Log zerolog.Logger
	// Interval is how often an open event stream looks for changes
	// (default and at most 1 s; tests set it short).
	Interval time.Duration
	// MaxStreams bounds the event streams open at once (default 16), and
	// MaxStreamsPerClient those of one source address (default 4).
	MaxStreams, MaxStreamsPerClient int
	// WriteTimeout bounds each write of an event stream, so that a client that
	// stops reading loses its stream (default 10 s).
	WriteTimeout time.Duration
	// Fallback is how often the page polls the API while it has no event stream,
	// retrying the stream each time (default 5 s).
	Fallback time.Duration
	// Now is the clock (default time.Now); its location is the day's.
	Now func() time.Time
}

// Handler serves the page and its API. Close it (or register Close with
// http.Server.RegisterOnShutdown) so that open event streams end.
type Handler struct {
	opt   Options
	guard *guard
	hosts hostRule
	mux   *http.ServeMux
	files map[string]file

	guesses guesses
	rejects *rejectLog
	slots   streamSlots

	mu     sync.Mutex
	done   chan struct{}
	closed bool
}

type file struct {
	body []byte
	typ  string
}

// New returns the handler. It serves "/", "/api/...", and /healthz and
// /metrics when given: mount it at the root of the server.
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
	if o.MaxStreamsPerClient <= 0 {
		o.MaxStreamsPerClient = 4
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.Fallback <= 0 {
		o.Fallback = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HostName == "" {
		o.HostName, _ = os.Hostname()
	}
	g, err := newGuard(o.Addr, o.Token)
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	h := &Handler{opt: o, guard: g, hosts: newHostRule(o.Addr, o.Hosts, o.HostName), mux: http.NewServeMux(),
		guesses: guesses{now: o.Now}, done: make(chan struct{}), rejects: &rejectLog{log: o.Log, every: time.Second},
		slots: streamSlots{max: o.MaxStreams, perClient: o.MaxStreamsPerClient}}
	if err := h.loadFiles(); err != nil {
		return nil, err
	}
	h.routes()
	return h, nil
}

func (h *Handler) loadFiles() error {
	h.files = map[string]file{}
	for name, typ := range map[string]string{
		"index.html":  "text/html; charset=utf-8",
		"app.js":      "text/javascript; charset=utf-8",
		"budget.js":   "text/javascript; charset=utf-8",
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
	if h.opt.Health != nil {
		m.Handle("GET /healthz", h.opt.Health)
	}
	if h.opt.Metrics != nil {
		m.Handle("GET /metrics", h.opt.Metrics)
	}
	m.HandleFunc("GET /{$}", h.serveFile("index.html"))
	m.HandleFunc("GET /app.js", h.serveFile("app.js"))
	m.HandleFunc("GET /budget.js", h.serveFile("budget.js"))
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
		writeError(w, http.StatusMethodNotAllowed, "actions are POSTs")
	})
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such API endpoint "+r.URL.Path+"; see docs/status-page.md, \"The API, for scripts\"")
	})
}

// ServeHTTP serves the page, the API, /healthz and /metrics on HTTP_ADDR; a
// Host that is not one of the bridge's names gets 421 (except /healthz).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w, false)
	if r.URL.Path != "/healthz" && !h.hosts.allows(r.Host) {
		h.refuse(w, r, &refusal{status: http.StatusMisdirectedRequest,
			msg: "this bridge does not answer to the name " + quote(clip(hostOnly(r.Host), 64)) +
				": open it by its address, this machine's name or localhost, or add the name to HTTP_HOSTS (e.g. a reverse proxy's)"})
		return
	}
	h.mux.ServeHTTP(w, r)
}

// Close ends the open event streams; later ones are refused.
func (h *Handler) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.done)
		h.slots.mu.Lock()
		h.slots.closed = true
		h.slots.mu.Unlock()
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
		buf.WriteString(`{"status":"error","error":"cannot encode the answer"}` + "\n")
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
	// Fallback is how often (seconds) the page reads the API while it
	// has no event stream, trying the stream again each time.
	Fallback Duration `json:"fallback_every"`
}

func (h *Handler) session(w http.ResponseWriter, r *http.Request) {
	authed, ref := h.tokenOK(r) // a wrong bearer here is a guess too
	if ref != nil && ref.status == http.StatusTooManyRequests {
		h.refuse(w, r, ref)
		return
	}
	s := sessionJSON{CSRFToken: h.guard.csrf, Actions: h.guard.access(r), ActionsOffer: h.opt.Actions != nil,
		Fallback: Duration(h.opt.Fallback)}
	switch s.Actions {
	case accessOff:
		s.Reason = h.guard.offReason(r)
	case accessToken:
		s.Authenticated = h.guard.loggedIn(r) || authed
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
		writeError(w, http.StatusNotFound, "no device has the id "+quote(r.PathValue("id"))+"; the ids are those of /api/devices")
		return
	}
	if d.Values == nil {
		d.Values = map[string]any{}
	}
	if d.Capabilities == nil {
		d.Capabilities = []capability.Capability{}
	}
	d.Readings = readings(d.Capabilities, d.Values)
	writeJSON(w, http.StatusOK, d)
}

// budgetJSON is /api/budget: the scheduler's figures, the hourly chart
// and the projection to midnight.
type budgetJSON struct {
	Budget
	Now      time.Time `json:"now"`
	Midnight time.Time `json:"midnight"`
	// PacePerHour is the steady pace (History.PerHour), null until a whole steady
	// minute has passed.
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
		if pace, ok := h.opt.History.PerHour(now, time.Duration(b.PollInterval)); ok {
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
	for i := range ps {
		ps[i].Text, ps[i].Hint = describe(ps[i])
	}
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
	if ref := h.checkPost(r, true); ref != nil {
		h.refuse(w, r, ref)
		return
	}
	if h.guard.token == "" {
		writeError(w, http.StatusBadRequest, "there is nothing to log in to: HTTP_TOKEN is not set")
		return
	}
	var body loginJSON
	if !h.decodeBody(w, r, &body) {
		return
	}
	if ref := h.checkToken(r, body.Token, "wrong token: it is the HTTP_TOKEN the bridge runs with"); ref != nil {
		h.refuse(w, r, ref)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: h.guard.cookie, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	if ref := h.checkPost(r, true); ref != nil {
		h.refuse(w, r, ref)
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

// maxBody bounds a POST's body.
const maxBody = 4096

// decodeBody reads a small JSON object into v; false when it answered the
// request (400 naming what is wrong, 413 for a body over maxBody).
func (h *Handler) decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var tooBig *http.MaxBytesError
	switch {
	case err == nil || errors.Is(err, io.EOF):
		return true
	case errors.As(err, &tooBig):
		h.refuse(w, r, &refusal{status: http.StatusRequestEntityTooLarge,
			msg: fmt.Sprintf(`web: the body is over %d bytes: send a small JSON object such as {"device":"<id>"}`, maxBody)})
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf(`web: the body must be a small JSON object such as {"device":"<id>"}: %v`, err))
	}
	return false
}

// Action names (POST /api/actions/{action}): the words of the MQTT
// requests (bridge/request/refresh, republish).
const (
	actionRead         = "read"
	actionEnabled      = "enabled"
	actionPollInterval = "poll-interval"
	actionRefresh      = "refresh"
	actionRepublish    = "republish"
)

// actionAliases are the actions' former names, kept for a release
// (CHANGELOG).
var actionAliases = map[string]string{"refresh-devices": actionRefresh, "republish-discovery": actionRepublish}

func (h *Handler) action(w http.ResponseWriter, r *http.Request) {
	if ref := h.checkPost(r, false); ref != nil {
		h.refuse(w, r, ref)
		return
	}
	a := h.opt.Actions
	if a == nil {
		writeError(w, http.StatusNotImplemented, "this bridge offers no actions here")
		return
	}
	var body actionJSON
	if !h.decodeBody(w, r, &body) {
		return
	}
	name := r.PathValue("action")
	if n, ok := actionAliases[name]; ok {
		name = n
	}
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
		writeError(w, http.StatusNotFound, "unknown action "+quote(name)+"; the actions are "+
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
