package app

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/mqtt"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
)

// metrics are the daemon's Prometheus metrics, on a registry of its own (no
// globals: two daemons in one test process do not collide).
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	limited  prometheus.Counter
	latency  prometheus.Histogram
	commands *prometheus.CounterVec
}

func newMetrics(version string) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cloud2mqtt_cloud_requests_total", Help: "Requests sent to the cloud, by endpoint and HTTP status (0: no answer).",
		}, []string{"endpoint", "status"}),
		limited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cloud2mqtt_cloud_rate_limited_total", Help: "Answers 429 (too many requests) from the cloud.",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cloud2mqtt_command_latency_seconds",
			Help:    "From an MQTT command's arrival to its control request being sent to the cloud.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cloud2mqtt_commands_total", Help: "Commands by outcome: ok, superseded (a newer value replaced it), failed.",
		}, []string{"outcome"}),
	}
	m.reg.MustRegister(m.requests, m.limited, m.latency, m.commands,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: "cloud2mqtt_build_info", Help: "The running version.",
		ConstLabels: prometheus.Labels{"version": version}})
	info.Set(1)
	m.reg.MustRegister(info)
	return m
}

func (m *metrics) observeRequest(endpoint string, status int) {
	m.requests.WithLabelValues(endpoint, strconv.Itoa(status)).Inc()
	if status == http.StatusTooManyRequests {
		m.limited.Inc()
	}
}

func (m *metrics) observeCommand(r scheduler.CommandResult) {
	switch {
	case r.Err == nil:
		m.commands.WithLabelValues("ok").Inc()
	case errors.Is(r.Err, scheduler.ErrSuperseded):
		m.commands.WithLabelValues("superseded").Inc()
	default:
		m.commands.WithLabelValues("failed").Inc()
	}
	if !r.Sent.IsZero() && !r.Queued.IsZero() {
		m.latency.Observe(r.Sent.Sub(r.Queued).Seconds())
	}
}

// register adds the gauges read from the running parts at scrape time.
func (m *metrics) register(sched *scheduler.Scheduler, poll *poller.Poller, reg *registry.Registry, conn *mqtt.Client) {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	tokens := func(f func(scheduler.Tokens) float64) func() float64 {
		return func() float64 { return f(sched.Stats().Tokens) }
	}
	m.reg.MustRegister(
		gauge("cloud2mqtt_queue_depth", "Requests waiting for budget.", func() float64 {
			s := sched.Stats()
			return float64(s.QueuedCommands + s.QueuedReads)
		}),
		gauge("cloud2mqtt_in_flight", "Requests on the wire.", func() float64 { return float64(sched.Stats().InFlight) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cloud2mqtt_coalesced_total",
			Help: "Submissions merged into a queued request (newer command values, duplicate reads)."},
			func() float64 { s := sched.Stats(); return float64(s.Coalesced + s.Superseded) }),
		gauge("cloud2mqtt_requests_today", "Cloud requests sent since local midnight.", func() float64 { return float64(sched.Stats().RequestsToday) }),
		gauge("cloud2mqtt_tokens_device_list", "Tokens left in the account's device-list bucket.", tokens(func(t scheduler.Tokens) float64 { return t.DeviceList })),
		gauge("cloud2mqtt_tokens_control_account", "Tokens left in the account's control bucket.", tokens(func(t scheduler.Tokens) float64 { return t.ControlAccount })),
		gauge("cloud2mqtt_tokens_control_device_min", "Fewest tokens left in any device's control bucket.", tokens(func(t scheduler.Tokens) float64 { return t.ControlDeviceMin })),
		gauge("cloud2mqtt_tokens_state_min", "Fewest tokens left in any device's state bucket.", tokens(func(t scheduler.Tokens) float64 { return t.StateMin })),
		gauge("cloud2mqtt_tokens_scenes_min", "Fewest tokens left in any device's scenes bucket.", tokens(func(t scheduler.Tokens) float64 { return t.ScenesMin })),
		gauge("cloud2mqtt_devices", "Devices on the account.", func() float64 { return float64(reg.Stats().Devices) }),
		gauge("cloud2mqtt_devices_online", "Devices online and reachable.", func() float64 { return float64(reg.Stats().Online) }),
		gauge("cloud2mqtt_state_age_seconds", "Age of the oldest device state (seconds since its last successful read).",
			func() float64 { return reg.Stats().OldestState.Seconds() }),
		gauge("cloud2mqtt_poll_interval_seconds", "The poll interval in use.", func() float64 { return poll.Stats().Interval.Seconds() }),
		gauge("cloud2mqtt_mqtt_connected", "1 while connected to the broker.", func() float64 {
			if conn.Connected() {
				return 1
			}
			return 0
		}),
	)
}

// bridgeStats fills the bridge device's diagnostic entities.
// bridgeStats is <base>/bridge/stats. Rate limited means a 429 in the last
// minute or, with a daily limit, the day's quota spent.
func bridgeStats(version string, s scheduler.Stats, r registry.Stats, dailyLimit int, now time.Time) discovery.BridgeStats {
	st := discovery.BridgeStats{
		Version:       version,
		RequestsToday: s.RequestsToday,
		QueueDepth:    s.QueuedCommands + s.QueuedReads,
		DevicesOnline: r.Online,
		DevicesTotal:  r.Devices,
	}
	if !s.LastRateLimited.IsZero() {
		t := s.LastRateLimited.UTC().Truncate(time.Second)
		st.Last429 = &t
		st.RateLimited = now.Sub(s.LastRateLimited) < time.Minute
	}
	if dailyLimit > 0 {
		left := max(dailyLimit-s.RequestsToday, 0)
		st.QuotaLeft = &left
		st.RateLimited = st.RateLimited || left == 0
	}
	return st
}

// observe wraps a transport to count requests by endpoint and status.
func observe(rt http.RoundTripper, f func(endpoint string, status int)) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		status := 0
		if err == nil {
			status = resp.StatusCode
		}
		f(endpointOf(r.URL.Path), status)
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// endpointOf names a cloud path as the scheduler does.
func endpointOf(path string) string {
	if ep := cloud.EndpointOf(path); ep != "" {
		return ep
	}
	return "other"
}
