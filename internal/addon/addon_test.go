package addon

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// supervisor is a stand-in for the Supervisor's API: it answers
// GET /services/mqtt with answer to the token want and 401 to any other.
func supervisor(t *testing.T, status int, answer string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/services/mqtt" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer tok-123" {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"result":"error","message":"Invalid token"}`))
			return
		}
		w.WriteHeader(status)
		w.Write([]byte(answer))
	}))
	t.Cleanup(s.Close)
	return s
}

const mosquittoApp = `{"result":"ok","data":{"addon":"core_mosquitto","host":"core-mosquitto","port":1883,"ssl":false,"username":"addons","password":"pw-from-supervisor","protocol":"3.1.1"}}`

func writeOptions(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "options.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNotAnAppLeavesTheEnvironmentAlone(t *testing.T) {
	env := map[string]string{"MQTT_URL": "tcp://x:1", OptionsFileVar: "/nonexistent"}
	got, err := Environment(context.Background(), env, nil)
	if err != nil || len(got) != len(env) || got["MQTT_URL"] != "tcp://x:1" {
		t.Errorf("without %s: %v, %v", TokenVar, got, err)
	}
}

func TestOptionsAndTheSupervisorsBroker(t *testing.T) {
	s := supervisor(t, http.StatusOK, mosquittoApp)
	opts := writeOptions(t, `{"cloud_api_key":"k-secret","cloud_base_url":"https://cloud.example","poll_interval":"30s",
		"cloud_daily_limit":10000,"log_level":"debug","ha_discovery":true,"mqtt_base_topic":"","cloud_events_url":null}`)
	env := map[string]string{TokenVar: "tok-123", APIVar: s.URL, OptionsFileVar: opts,
		"POLL_INTERVAL": "90s", "STATE_DIR": "/var/lib/cloud2mqtt", "MQTT_PASSWORD_FILE": "/run/secrets/x"}
	got, err := Environment(context.Background(), env, s.Client())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"CLOUD_API_KEY": "k-secret", "CLOUD_BASE_URL": "https://cloud.example",
		"POLL_INTERVAL":     "30s", // the option wins over the environment
		"CLOUD_DAILY_LIMIT": "10000", "LOG_LEVEL": "debug", "HA_DISCOVERY": "true",
		"STATE_DIR": "/data", "LOG_FORMAT": "console",
		"MQTT_URL": "tcp://core-mosquitto:1883", "MQTT_USERNAME": "addons", "MQTT_PASSWORD": "pw-from-supervisor",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
	for _, k := range []string{"MQTT_BASE_TOPIC", "CLOUD_EVENTS_URL", "MQTT_PASSWORD_FILE"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s=%q is set; an empty or null option keeps the default", k, got[k])
		}
	}
	if env["POLL_INTERVAL"] != "90s" || env["MQTT_URL"] != "" {
		t.Error("the caller's map was changed")
	}
}

func TestTheUsersBrokerWins(t *testing.T) {
	called := false
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called = true }))
	defer s.Close()
	for name, c := range map[string]struct{ options, envURL, want string }{
		"in the options":     {`{"mqtt_url":"mqtts://broker.lan:8883","mqtt_username":"me"}`, "", "mqtts://broker.lan:8883"},
		"in the environment": {`{}`, "tcp://10.0.0.2:1883", "tcp://10.0.0.2:1883"},
	} {
		t.Run(name, func(t *testing.T) {
			env := map[string]string{TokenVar: "tok-123", APIVar: s.URL, OptionsFileVar: writeOptions(t, c.options)}
			if c.envURL != "" {
				env["MQTT_URL"] = c.envURL
			}
			got, err := Environment(context.Background(), env, s.Client())
			if err != nil || got["MQTT_URL"] != c.want || got["MQTT_PASSWORD"] != "" {
				t.Errorf("MQTT_URL=%q password %q (%v), want %q and no password", got["MQTT_URL"], got["MQTT_PASSWORD"], err, c.want)
			}
		})
	}
	if called {
		t.Error("the Supervisor was asked for a broker although the user set one")
	}
}

func TestTLSBroker(t *testing.T) {
	s := supervisor(t, http.StatusOK, `{"result":"ok","data":{"host":"fd00::5","port":8883,"ssl":true,"username":"u","password":"p","protocol":"5"}}`)
	env := map[string]string{TokenVar: "tok-123", APIVar: s.URL + "/", OptionsFileVar: writeOptions(t, `{"state_dir":"/tmp/x"}`)}
	got, err := Environment(context.Background(), env, s.Client())
	if err != nil || got["MQTT_URL"] != "ssl://[fd00::5]:8883" || got["STATE_DIR"] != "/tmp/x" {
		t.Errorf("MQTT_URL=%q STATE_DIR=%q (%v)", got["MQTT_URL"], got["STATE_DIR"], err)
	}
}

func TestSupervisorProblems(t *testing.T) {
	for name, c := range map[string]struct {
		status       int
		answer, want string
		token        string
	}{
		"no mqtt service": {http.StatusBadRequest, `{"result":"error","message":"No MQTT service available"}`, "No MQTT service available", "tok-123"},
		"wrong token":     {http.StatusOK, mosquittoApp, "401 (Invalid token)", "other"},
		"not json":        {http.StatusOK, `<html>`, "not JSON", "tok-123"},
		"no host":         {http.StatusOK, `{"result":"ok","data":{}}`, "names no broker", "tok-123"},
	} {
		t.Run(name, func(t *testing.T) {
			s := supervisor(t, c.status, c.answer)
			env := map[string]string{TokenVar: c.token, APIVar: s.URL, OptionsFileVar: writeOptions(t, `{"cloud_api_key":"k-secret"}`)}
			_, err := Environment(context.Background(), env, s.Client())
			if !errors.Is(err, ErrSupervisor) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want ErrSupervisor saying %q", err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), "k-secret") {
				t.Error("the error shows the API key")
			}
		})
	}
	// Nobody listening: a port that was free a moment ago.
	s := httptest.NewServer(http.NotFoundHandler())
	url := s.URL
	s.Close()
	env := map[string]string{TokenVar: "t", APIVar: url, OptionsFileVar: writeOptions(t, `{}`)}
	if _, err := Environment(context.Background(), env, nil); !errors.Is(err, ErrSupervisor) {
		t.Errorf("unreachable Supervisor: %v", err)
	}
}

func TestBadOptions(t *testing.T) {
	for name, c := range map[string]struct{ body, want string }{
		"unknown option":   {`{"cloud_api_key":"k-secret","pol_interval":"30s"}`, `option "pol_interval" is not a setting: did you mean poll_interval?`},
		"upper case":       {`{"CLOUD_API_KEY":"k-secret"}`, `option "CLOUD_API_KEY" is not a setting: did you mean cloud_api_key?`},
		"list value":       {`{"cloud_api_key":["k-secret"]}`, "option cloud_api_key: is a list or an object"},
		"not an object":    {`["k-secret"]`, "not a JSON object"},
		"null":             {`null`, "not a JSON object"},
		"trailing data":    {`{"cloud_api_key":"k-secret"} {}`, "not a JSON object"},
		"two problems too": {`{"a":1,"b":2}`, `option "b"`},
	} {
		t.Run(name, func(t *testing.T) {
			env := map[string]string{TokenVar: "tok-123", OptionsFileVar: writeOptions(t, c.body)}
			_, err := Environment(context.Background(), env, nil)
			if err == nil || errors.Is(err, ErrSupervisor) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), "k-secret") {
				t.Error("the error shows the API key")
			}
		})
	}
	env := map[string]string{TokenVar: "tok-123", OptionsFileVar: filepath.Join(t.TempDir(), "missing.json")}
	if _, err := Environment(context.Background(), env, nil); err == nil || !strings.Contains(err.Error(), OptionsFileVar) {
		t.Errorf("missing options file: %v", err)
	}
}
