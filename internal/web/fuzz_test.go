package web

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// FuzzActionRequest sends anything to the actions: the handler answers
// every request with JSON, never panics, and nothing reaches the bridge
// without the CSRF token and a well-formed body.
func FuzzActionRequest(f *testing.F) {
	f.Add("read", `{"device":"hall_light"}`, true, "application/json")
	f.Add("enabled", `{"device":"hall_light","enabled":true}`, true, "application/json")
	f.Add("poll-interval", `{"device":"hall_light","poll_interval":null}`, true, "application/json; charset=utf-8")
	f.Add("refresh-devices", ``, false, "application/json")
	f.Add("read", `{"device":"\u0000"}`, true, "text/plain")
	f.Add("..%2f", `{"device":1}`, true, "application/json")
	src := newFakeSource()
	act := &fakeActions{src: src}
	h, err := New(Options{Source: src, Actions: act, Addr: "127.0.0.1:8080", Now: func() time.Time { return t0 }})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, action, body string, withCSRF bool, contentType string) {
		r := httptest.NewRequest("POST", "/api/actions/"+url.PathEscape(action), strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		if withCSRF {
			r.Header.Set(csrfHeader, h.guard.csrf)
		}
		before := len(act.log())
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code == 307 || w.Code == 301 { // "." or "..": the mux redirects to the clean path
			if len(act.log()) > before || w.Header().Get("Location") == "" {
				t.Fatalf("%d redirect: %v %v", w.Code, w.Header(), act.log()[before:])
			}
			return
		}
		var answer struct {
			Status, Error string
		}
		if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil {
			t.Fatalf("%d, not JSON: %q", w.Code, w.Body)
		}
		called := len(act.log()) > before
		if w.Code == 200 {
			if answer.Status != "ok" || !called {
				t.Fatalf("200 without an action: %s, calls %v", w.Body, act.log()[before:])
			}
		} else if answer.Status != "error" || answer.Error == "" || called {
			t.Fatalf("%d: %s, called %v", w.Code, w.Body, called)
		}
		if called && !withCSRF {
			t.Fatal("an action without the CSRF token")
		}
	})
}
