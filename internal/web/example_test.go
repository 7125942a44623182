package web_test

import (
	"net/http"
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

// How the app mounts the page beside /healthz and /metrics, and feeds the
// history and the problems.
func ExampleNew() {
	hist := web.NewHistory(time.Now())
	problems := web.NewProblemLog(50, nil)
	h, err := web.New(web.Options{
		Source:  staticSource{problems},
		Actions: nil, // the app's adapter over the bridge's requests
		History: hist,
		Addr:    "127.0.0.1:8080", // HTTP_ADDR
		Token:   "",               // HTTP_TOKEN
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {})
	mux.Handle("/", h)
	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	srv.RegisterOnShutdown(h.Close) // ends the open event streams

	// Where the app counts a cloud request, and where bridge/logging
	// publishes a problem:
	hist.Observe("state", time.Now())
	problems.AddJSON([]byte(`{"level":"warn","message":"read failed","device":"hall_light"}`))
	_ = srv // srv.ListenAndServe()
}
