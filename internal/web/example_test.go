package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"cloud2mqtt/internal/web"
)

// staticSource is the smallest Source: one device, a budget, no problems.
type staticSource struct{ problems *web.ProblemLog }

func (staticSource) Devices() []web.Device {
	return []web.Device{{ID: "hall_light", Name: "Hall light", Model: "H6008", Status: web.StatusOnline, Path: "cloud"}}
}
func (s staticSource) Device(id string) (web.DeviceDetail, bool) {
	if id != "hall_light" {
		return web.DeviceDetail{}, false
	}
	return web.DeviceDetail{Device: s.Devices()[0], Values: map[string]any{"powerSwitch": int64(1)}}, true
}
func (staticSource) Budget() web.Budget        { return web.Budget{RequestsToday: 42, DailyLimit: 10000} }
func (s staticSource) Problems() []web.Problem { return s.problems.Problems() }

// How the app serves the page, with /healthz and /metrics handed to it,
// and feeds the history and the problems; a request to the API shows the
// device the Source gave.
func ExampleNew() {
	hist := web.NewHistory(time.Now())
	problems := web.NewProblemLog(50, nil)
	h, err := web.New(web.Options{
		Source:  staticSource{problems},
		Actions: nil, // the app's adapter over the bridge's requests
		History: hist,
		Health:  http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }),
		Addr:    "127.0.0.1:8080", // HTTP_ADDR
		Token:   "",               // HTTP_TOKEN
	})
	if err != nil {
		panic(err)
	}
	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: h, ReadHeaderTimeout: 5 * time.Second}
	srv.RegisterOnShutdown(h.Close) // ends the open event streams
	_ = srv                         // srv.ListenAndServe()

	// Where the app counts a cloud request, and where bridge/logging
	// publishes a problem:
	hist.Observe("state", time.Now())
	problems.AddJSON([]byte(`{"level":"warn","message":"read failed","device":"hall_light"}`))

	health := httptest.NewRecorder()
	h.ServeHTTP(health, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080/healthz", nil))
	fmt.Println("/healthz", health.Code, health.Body.String())

	list := httptest.NewRecorder()
	h.ServeHTTP(list, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080/api/devices", nil))
	var page struct {
		Devices []struct{ ID, Name, Status, Path string }
	}
	if err := json.Unmarshal(list.Body.Bytes(), &page); err != nil {
		panic(err)
	}
	fmt.Println("/api/devices", list.Code, page.Devices)
	h.Close()
	// Output:
	// /healthz 200 ok
	// /api/devices 200 [{hall_light Hall light online cloud}]
}
