package app

import (
	"bytes"
	"context"
	"net"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/mqtttest"
)

// checkReport runs -check on an environment (with the embedded broker, so
// no broker is needed) and returns its report, which must carry no
// formatting artefact of fmt's (%!w(<nil>), ...).
func checkReport(t *testing.T, environ map[string]string) (bool, string) {
	t.Helper()
	environ["MQTT_URL"] = "embedded"
	environ["MQTT_LISTEN"] = "127.0.0.1:0"
	environ["CLOUD_TIMEOUT"] = "5s"
	cfg, err := config.Load(environ)
	if err == nil {
		err = cfg.Validate()
	}
	var out bytes.Buffer
	ok := Check(context.Background(), cfg, err, &out, zerolog.Nop())
	if strings.Contains(out.String(), "%!") {
		t.Errorf("-check's report has a formatting artefact:\n%s", out.String())
	}
	return ok, out.String()
}

// TestCheckNamesCloudBaseURL: -check names CLOUD_BASE_URL and the fix for a
// base URL with the API's path, a path the service does not know, and an
// address where nothing answers; it never blames the key for them, and says
// each subject once.
func TestCheckNamesCloudBaseURL(t *testing.T) {
	sim := cloudsim.New(cloudsim.Options{})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nothing := "http://" + ln.Addr().String()
	ln.Close()

	for _, tc := range []struct {
		name, base string
		want       []string
	}{
		{"base URL with the API path", srv.URL + "/router/api/v1",
			[]string{"FAIL configuration: CLOUD_BASE_URL=", "includes the API's path /router/api/v1", "set it to " + srv.URL + " (scheme and host only)"}},
		{"base URL with another path", srv.URL + "/api",
			[]string{"FAIL cloud: devices: ", "the service has no device list at this address: set CLOUD_BASE_URL to the API's scheme and host only"}},
		{"nothing answers", nothing,
			[]string{"FAIL cloud: devices: ", "nothing answers at the host and port of CLOUD_BASE_URL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, out := checkReport(t, map[string]string{"CLOUD_BASE_URL": tc.base, "CLOUD_API_KEY": sim.APIKey()})
			if ok {
				t.Fatalf("-check passed:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("report lacks %q:\n%s", w, out)
				}
			}
			for _, bad := range []string{"CLOUD_API_KEY;", "check CLOUD_API_KEY", "cloud: cloud:", "configuration: config:", "still in the account"} {
				if strings.Contains(out, bad) {
					t.Errorf("report says %q:\n%s", bad, out)
				}
			}
		})
	}

	ok, out := checkReport(t, map[string]string{"CLOUD_BASE_URL": srv.URL, "CLOUD_API_KEY": sim.APIKey(), "POLL_INTERVAL": "60"})
	if !ok || !strings.Contains(out, "ok   cloud: the API key works") {
		t.Errorf("a good configuration (POLL_INTERVAL=60) failed:\n%s", out)
	}
}

// TestCheckReachesEvents: -check logs in to CLOUD_EVENTS_URL with the key
// and subscribes as the daemon will; where nothing answers it fails at
// once, naming the address and the setting; the key is never shown.
func TestCheckReachesEvents(t *testing.T) {
	sim := cloudsim.New(cloudsim.Options{})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	b := mqtttest.Start(t)
	ok, out := checkReport(t, map[string]string{"CLOUD_BASE_URL": srv.URL, "CLOUD_API_KEY": sim.APIKey(), "CLOUD_EVENTS_URL": b.URL()})
	if !ok || !strings.Contains(out, "ok   cloud events: logged in to "+b.URL()+" with the API key and subscribed to the account's events") {
		t.Errorf("events at a broker:\n%s", out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	ok, out = checkReport(t, map[string]string{"CLOUD_BASE_URL": srv.URL, "CLOUD_API_KEY": sim.APIKey(), "CLOUD_EVENTS_URL": "mqtt://" + closed})
	if ok || !strings.Contains(out, "FAIL cloud events: nothing answers at "+closed+" (connection refused): check CLOUD_EVENTS_URL, or leave it empty to turn events off") {
		t.Errorf("events where nothing answers:\n%s", out)
	}
	if strings.Contains(out, sim.APIKey()) {
		t.Errorf("the key is shown:\n%s", out)
	}
}
