package app

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	vm "github.com/VictoriaMetrics/metrics"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/mqtt"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
)

// metrics are the daemon's Prometheus metrics, in a set of its own so that two
// daemons in one test process do not collide. The series names are public.
type metrics struct {
	set     *vm.Set
	limited *vm.Counter
	latency *vm.PrometheusHistogram
	ok      *vm.Counter
	supers  *vm.Counter
	failed  *vm.Counter

	mu       sync.Mutex
	requests map[requestKey]*vm.Counter // made on first use: the endpoints and statuses seen

	// dailyLimit is CLOUD_DAILY_LIMIT in force (the settings'), for the
	// quota's figures; nil: none.
	dailyLimit func() int
	// now is the daemon's clock, for the quota's windows.
	now func() time.Time
}

type requestKey struct {
	endpoint string
	status   int
}

// labelValue escapes a Prometheus label value.
var labelValue = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func newMetrics(version string, clk clock.Clock) *metrics {
	set := vm.NewSet()
	m := &metrics{
		now:      clk.Now,
		set:      set,
		limited:  set.NewCounter("cloud2mqtt_cloud_rate_limited_total"),
		latency:  set.NewPrometheusHistogramExt("cloud2mqtt_command_latency_seconds", []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}),
		ok:       set.NewCounter(`cloud2mqtt_commands_total{outcome="ok"}`),
		supers:   set.NewCounter(`cloud2mqtt_commands_total{outcome="superseded"}`),
		failed:   set.NewCounter(`cloud2mqtt_commands_total{outcome="failed"}`),
		requests: make(map[requestKey]*vm.Counter),
	}
	set.NewGauge(`cloud2mqtt_build_info{version="`+labelValue.Replace(version)+`"}`, func() float64 { return 1 })
	return m
}

// write writes every series in Prometheus's text format, the Go runtime's
// and the process's (go_*, process_*) after the daemon's own.
func (m *metrics) write(w io.Writer) {
	m.set.WritePrometheus(w)
	vm.WriteProcessMetrics(w)
}

// observeRequest counts a cloud request by endpoint and status (0: no
// answer).
func (m *metrics) observeRequest(endpoint string, status int) {
	k := requestKey{endpoint, status}
	m.mu.Lock()
	c := m.requests[k]
	if c == nil {
		c = m.set.GetOrCreateCounter(`cloud2mqtt_cloud_requests_total{endpoint="` + labelValue.Replace(endpoint) + `",status="` + strconv.Itoa(status) + `"}`)
		m.requests[k] = c
	}
	m.mu.Unlock()
	c.Inc()
	if status == http.StatusTooManyRequests {
		m.limited.Inc()
	}
}

func (m *metrics) observeCommand(r scheduler.CommandResult) {
	switch {
	case r.Err == nil:
		m.ok.Inc()
	case errors.Is(r.Err, capability.ErrSuperseded):
		m.supers.Inc()
	default:
		m.failed.Inc()
	}
	if !r.Sent.IsZero() && !r.Queued.IsZero() {
		m.latency.Update(r.Sent.Sub(r.Queued).Seconds())
	}
}

// register adds the gauges read from the running parts at scrape time.
func (m *metrics) register(sched *scheduler.Scheduler, poll *poller.Poller, reg *registry.Registry, conn *mqtt.Client) {
	gauge := func(name string, f func() float64) { m.set.NewGauge(name, f) }
	tokens := func(f func(scheduler.Tokens) float64) func() float64 {
		return func() float64 { return f(sched.Stats().Tokens) }
	}
	// Requests waiting for budget.
	gauge("cloud2mqtt_queue_depth", func() float64 {
		s := sched.Stats()
		return float64(s.QueuedCommands + s.QueuedReads)
	})
	// Requests on the wire.
	gauge("cloud2mqtt_in_flight", func() float64 { return float64(sched.Stats().InFlight) })
	// Submissions merged into a queued request: commands (a newer value replaced a
	// queued one) apart from reads (the device was already queued).
	gauge(`cloud2mqtt_coalesced_total{kind="command"}`, func() float64 { return float64(sched.Stats().Superseded) })
	gauge(`cloud2mqtt_coalesced_total{kind="read"}`, func() float64 { return float64(sched.Stats().CoalescedReads) })
	gauge("cloud2mqtt_requests_today", func() float64 { return float64(sched.Stats().RequestsToday) })
	m.registerQuota(sched)
	// Tokens left in the account's buckets, and the fewest left in any
	// device's.
	gauge("cloud2mqtt_tokens_device_list", tokens(func(t scheduler.Tokens) float64 { return t.DeviceList }))
	gauge("cloud2mqtt_tokens_control_account", tokens(func(t scheduler.Tokens) float64 { return t.ControlAccount }))
	gauge("cloud2mqtt_tokens_control_device_min", tokens(func(t scheduler.Tokens) float64 { return t.ControlDeviceMin }))
	gauge("cloud2mqtt_tokens_state_min", tokens(func(t scheduler.Tokens) float64 { return t.StateMin }))
	gauge("cloud2mqtt_tokens_scenes_min", tokens(func(t scheduler.Tokens) float64 { return t.ScenesMin }))
	gauge("cloud2mqtt_devices", func() float64 { return float64(reg.Stats().Devices) })
	// Devices online and reachable.
	gauge("cloud2mqtt_devices_online", func() float64 { return float64(reg.Stats().Online) })
	// Age of the oldest device state: seconds since its last successful read.
	gauge("cloud2mqtt_state_age_seconds", func() float64 { return reg.Stats().OldestState.Seconds() })
	gauge("cloud2mqtt_poll_interval_seconds", func() float64 { return poll.Stats().Interval.Seconds() })
	gauge("cloud2mqtt_mqtt_connected", func() float64 {
		if conn.Connected() {
			return 1
		}
		return 0
	})
	// Back-offs because another client took the bridge's client id.
	gauge("cloud2mqtt_mqtt_client_id_conflicts_total", func() float64 { return float64(conn.Stats().Conflicts) })
}

// bridgeStats is <base>/bridge/stats, which fills the bridge device's
// diagnostic entities. Rate limited means a 429 in the last minute or a quota spent.
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
	st.RateLimited = st.RateLimited || !s.Quota.HeldUntil.IsZero()
	if q, ok := s.Quota.Binding(dailyLimit, s.RequestsToday, now); ok {
		if q.Limit > 0 {
			st.QuotaLimit = &q.Limit
		}
		st.QuotaRemaining, st.QuotaSource, st.QuotaFits = &q.Remaining, &q.Source, q.Fits
		if !q.Reset.IsZero() {
			t := q.Reset.UTC().Truncate(time.Second)
			st.QuotaReset = &t
		}
		if !q.RunsOut.IsZero() {
			t := q.RunsOut.UTC()
			st.QuotaRunsOut = &t
		}
	}
	return st
}

// registerQuota adds the binding quota (scheduler.Quota.Binding): its window,
// source and forecast, all 0 while no quota is known (cloud2mqtt_quota_known 0).
func (m *metrics) registerQuota(sched *scheduler.Scheduler) {
	quota := func(f func(q scheduler.Binding) float64) func() float64 {
		return func() float64 {
			st := sched.Stats()
			limit := 0
			if m.dailyLimit != nil {
				limit = m.dailyLimit()
			}
			q, ok := st.Quota.Binding(limit, st.RequestsToday, m.now())
			if !ok {
				return 0
			}
			return f(q)
		}
	}
	unix := func(t time.Time) float64 {
		if t.IsZero() {
			return 0
		}
		return float64(t.Unix())
	}
	m.set.NewGauge("cloud2mqtt_quota_known", quota(func(scheduler.Binding) float64 { return 1 }))
	// 1 when the figures are the cloud's (its rate-limit headers), 0 when
	// they are CLOUD_DAILY_LIMIT's.
	m.set.NewGauge("cloud2mqtt_quota_learned", quota(func(q scheduler.Binding) float64 {
		if q.Source == scheduler.QuotaLearned {
			return 1
		}
		return 0
	}))
	m.set.NewGauge("cloud2mqtt_quota_limit", quota(func(q scheduler.Binding) float64 { return float64(q.Limit) }))
	m.set.NewGauge("cloud2mqtt_quota_remaining", quota(func(q scheduler.Binding) float64 { return float64(q.Remaining) }))
	m.set.NewGauge("cloud2mqtt_quota_reset_timestamp_seconds", quota(func(q scheduler.Binding) float64 { return unix(q.Reset) }))
	// 1 when the last ten minutes' pace fits what is left until the quota renews
	// (or is not yet measured), else 0 and runs_out_timestamp says when.
	m.set.NewGauge("cloud2mqtt_quota_fits", quota(func(q scheduler.Binding) float64 {
		if q.Fits != nil && !*q.Fits {
			return 0
		}
		return 1
	}))
	m.set.NewGauge("cloud2mqtt_quota_runs_out_timestamp_seconds", quota(func(q scheduler.Binding) float64 { return unix(q.RunsOut) }))
	m.set.NewGauge("cloud2mqtt_quota_pace_per_hour", quota(func(q scheduler.Binding) float64 { return q.PacePerHour }))
}
