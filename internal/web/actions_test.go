package web

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestActionsOnLoopback(t *testing.T) {
	e := newEnv(t, "127.0.0.1:8080", "")
	for _, c := range []struct {
		path, body string
		status     int
		call, err  string
	}{
		{"read", `{"device":"hall_light"}`, 200, "read hall_light", ""},
		{"enabled", `{"device":"garden_plug","enabled":true}`, 200, "enabled garden_plug true", ""},
		{"enabled", `{"device":"hall_light","enabled":false}`, 200, "enabled hall_light false", ""},
		{"poll-interval", `{"device":"hall_light","poll_interval":" 2m "}`, 200, `interval hall_light "2m"`, ""},
		{"poll-interval", `{"device":"hall_light","poll_interval":null}`, 200, `interval hall_light ""`, ""},
		{"refresh", ``, 200, "refresh", ""},
		{"republish", `{}`, 200, "republish", ""},
		{"refresh-devices", `{}`, 200, "refresh", ""}, // the former names, for a release
		{"republish-discovery", `{}`, 200, "republish", ""},
		{"read", `{"device":"cellar"}`, 404, "", "no device has this id"},
		{"read", `{}`, 400, "", `read needs {\"device\":\"<id>\"}`},
		{"enabled", `{"device":"hall_light"}`, 400, "", `\"enabled\":true|false`},
		{"poll-interval", `{"device":"hall_light","poll_interval":"1s"}`, 400, "", `poll_interval=\"1s\" is not a duration of 2s or more`},
		{"read", `{"device":"hall_light","extra":1}`, 400, "", `unknown field \"extra\"`},
		{"read", `[1,2]`, 400, "", "must be a small JSON object"},
		{"explode", `{}`, 404, "", `unknown action \"explode\"; the actions are read, enabled, poll-interval, refresh, republish"`},
	} {
		before := len(e.act.log())
		w := e.post("/api/actions/"+c.path, c.body, nil)
		if w.Code != c.status {
			t.Errorf("%s %s: %d %s, want %d", c.path, c.body, w.Code, w.Body, c.status)
			continue
		}
		log := e.act.log()
		if c.call != "" {
			if len(log) != before+1 || log[before] != c.call || w.Body.String() != `{"status":"ok"}`+"\n" {
				t.Errorf("%s %s: calls %q, body %s; want %q", c.path, c.body, log[before:], w.Body, c.call)
			}
		} else if len(log) != before || !strings.Contains(w.Body.String(), c.err) || !strings.Contains(w.Body.String(), `"status":"error"`) {
			t.Errorf("%s %s: calls %q, body %s; want an error with %s", c.path, c.body, log[before:], w.Body, c.err)
		}
	}
	if w := e.do("GET", "/api/actions/read", "", nil); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET of an action: %d", w.Code)
	}
}

func TestCSRFRefused(t *testing.T) {
	e := newEnv(t, "127.0.0.1:8080", "")
	body := `{"device":"hall_light"}`
	for _, c := range []struct {
		name   string
		hdr    map[string]string
		status int
	}{
		{"no token", map[string]string{csrfHeader: ""}, 403},
		{"wrong token", map[string]string{csrfHeader: strings.Repeat("0", 48)}, 403},
		{"another site's page", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, 403},
		{"another origin, no fetch metadata", map[string]string{"Origin": "http://127.0.0.1:9999", "Sec-Fetch-Site": ""}, 403},
		{"same site, other port", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"opaque origin", map[string]string{"Origin": "null"}, 403},
		{"a form's content type", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415},
		{"text/plain", map[string]string{"Content-Type": "text/plain"}, 415},
	} {
		w := e.post("/api/actions/read", body, c.hdr)
		if w.Code != c.status || !strings.Contains(w.Body.String(), `"status":"error"`) {
			t.Errorf("%s: %d %s, want %d", c.name, w.Code, w.Body, c.status)
		}
	}
	if log := e.act.log(); len(log) != 0 {
		t.Errorf("refused requests reached the bridge: %q", log)
	}
	// A script without browser headers passes with the CSRF token.
	w := e.post("/api/actions/read", body, map[string]string{"Origin": "", "Sec-Fetch-Site": ""})
	if w.Code != 200 {
		t.Errorf("a script with the CSRF token: %d %s", w.Code, w.Body)
	}
}

func TestTokenRefusedOffLoopback(t *testing.T) {
	body := `{"device":"hall_light"}`
	t.Run("no token configured", func(t *testing.T) {
		e := newEnv(t, "0.0.0.0:8080", "")
		w := e.post("/api/actions/read", body, nil)
		if w.Code != 403 || !strings.Contains(w.Body.String(), "actions are off") || !strings.Contains(w.Body.String(), "set HTTP_TOKEN") {
			t.Errorf("non-loopback without HTTP_TOKEN: %d %s", w.Code, w.Body)
		}
		// Nor does a bearer of anything help.
		if w := e.post("/api/actions/read", body, map[string]string{"Authorization": "Bearer "}); w.Code != 403 {
			t.Errorf("empty bearer: %d", w.Code)
		}
		if len(e.act.log()) != 0 {
			t.Errorf("calls: %q", e.act.log())
		}
	})
	t.Run("DNS rebinding to loopback", func(t *testing.T) {
		e := newEnv(t, "127.0.0.1:8080", "")
		w := e.post("/api/actions/read", body, map[string]string{"Host": "evil.example:8080", "Origin": "http://evil.example:8080"})
		if w.Code != http.StatusMisdirectedRequest || len(e.act.log()) != 0 {
			t.Errorf("a loopback bind reached by another name: %d %s", w.Code, w.Body)
		}
	})
	t.Run("token configured", func(t *testing.T) {
		const token = "s3cret-Token-42"
		e := newEnv(t, "0.0.0.0:8080", token)
		if w := e.post("/api/actions/read", body, nil); w.Code != 401 || !strings.Contains(w.Body.String(), "actions need HTTP_TOKEN") {
			t.Errorf("without the token: %d %s", w.Code, w.Body)
		}
		if w := e.post("/api/actions/read", body, map[string]string{"Authorization": "Bearer wrong"}); w.Code != 403 && w.Code != 401 {
			t.Errorf("a wrong bearer: %d %s", w.Code, w.Body)
		}
		// A script: the bearer alone, no CSRF token needed.
		if w := e.post("/api/actions/read", body, map[string]string{"Authorization": "Bearer " + token, csrfHeader: ""}); w.Code != 200 {
			t.Errorf("with the bearer token: %d %s", w.Code, w.Body)
		}
		// The page: log in, then the cookie and the CSRF token.
		if w := e.post("/api/login", `{"token":"nope"}`, nil); w.Code != 401 || len(w.Result().Cookies()) != 0 {
			t.Errorf("a wrong login: %d %s", w.Code, w.Body)
		}
		if w := e.post("/api/login", `{"token":"`+token+`"}`, map[string]string{csrfHeader: ""}); w.Code != 403 {
			t.Errorf("a login without the CSRF token: %d", w.Code)
		}
		w := e.post("/api/login", `{"token":"`+token+`"}`, nil)
		cookies := w.Result().Cookies()
		if w.Code != 200 || len(cookies) != 1 {
			t.Fatalf("login: %d %s %v", w.Code, w.Body, cookies)
		}
		c := cookies[0]
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || strings.Contains(c.Value, token) {
			t.Errorf("the login cookie: %+v", c)
		}
		cookie := map[string]string{"Cookie": c.Name + "=" + c.Value}
		if w := e.post("/api/actions/read", body, cookie); w.Code != 200 {
			t.Errorf("logged in: %d %s", w.Code, w.Body)
		}
		// The cookie alone is not enough: a cross-site form would carry it.
		if w := e.post("/api/actions/read", body, map[string]string{"Cookie": cookie["Cookie"], csrfHeader: ""}); w.Code != 403 {
			t.Errorf("cookie without the CSRF token: %d", w.Code)
		}
		var s sessionJSON
		if err := jsonOf(e.do("GET", "/api/session", "", cookie), &s); err != nil || !s.Authenticated || s.Actions != accessToken {
			t.Errorf("session after login: %+v %v", s, err)
		}
		if log := e.act.log(); !slices.Equal(log, []string{"read hall_light", "read hall_light"}) {
			t.Errorf("calls: %q", log)
		}
		lo := e.post("/api/logout", `{}`, cookie)
		if lo.Code != 200 || len(lo.Result().Cookies()) != 1 || lo.Result().Cookies()[0].MaxAge >= 0 {
			t.Errorf("logout: %d %v", lo.Code, lo.Result().Cookies())
		}
	})
}

func TestLoginThrottled(t *testing.T) {
	e := newEnv(t, "0.0.0.0:8080", "right-token")
	limited := false
	for range 20 {
		if w := e.post("/api/login", `{"token":"guess"}`, nil); w.Code == http.StatusTooManyRequests {
			limited = true
			break
		}
	}
	if !limited {
		t.Error("20 wrong tokens in a row were all answered: guessing is not slowed down")
	}
}

func TestNoSecretInOutput(t *testing.T) {
	const token = "SuperSecretTokenValue-9f8e7d"
	e := newEnv(t, "0.0.0.0:8080", token)
	w := e.post("/api/login", `{"token":"`+token+`"}`, nil)
	cookie := map[string]string{"Cookie": w.Result().Cookies()[0].String()}
	var out []string
	for _, p := range []string{"/", "/app.js", "/app.css", "/api/session", "/api/devices", "/api/devices/hall_light", "/api/budget", "/api/problems", "/api/nope"} {
		for _, hdr := range []map[string]string{nil, cookie} {
			r := e.do("GET", p, "", hdr)
			out = append(out, r.Body.String(), headerText(r.Header()))
		}
	}
	for _, p := range []string{"/api/actions/read", "/api/login", "/api/actions/poll-interval"} {
		for _, body := range []string{`{"device":"x"}`, `{"token":"wrong"}`, `{"device":"hall_light","poll_interval":"` + token + `"}`} {
			r := e.post(p, body, cookie)
			out = append(out, strings.ReplaceAll(r.Body.String(), token, "<echoed input>"), headerText(r.Header()))
		}
	}
	for i, s := range out {
		if strings.Contains(s, token) {
			t.Errorf("output %d shows HTTP_TOKEN: %s", i, s)
		}
	}
}

func headerText(h http.Header) string {
	var b strings.Builder
	for k, v := range h {
		b.WriteString(k + ": " + strings.Join(v, ",") + "\n")
	}
	return b.String()
}
