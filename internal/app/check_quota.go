package app

import (
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/settings"
	"cloud2mqtt/internal/statedir"
)

// -check's word on the quota: the requests a day the configuration plans,
// against the cloud's quota or CLOUD_DAILY_LIMIT.

// quotaPlan is what the configuration plans to send in a day.
type quotaPlan struct {
	devices, scenes        int           // devices, scene lists to fetch (each light's one or two)
	interval               time.Duration // the poll interval planned (POLL_INTERVAL, lengthened for CLOUD_DAILY_LIMIT)
	reads, lists, sceneReq int           // a day
	plan                   poller.Plan
}

func (q quotaPlan) total() int { return q.reads + q.lists + q.sceneReq }

// planOf is the day's requests of cfg for devs.
func planOf(cfg config.Config, devs []capability.Device) quotaPlan {
	pcfg := poller.Config{Interval: cfg.Poll.Interval, DailyLimit: cfg.Cloud.DailyLimit,
		ListInterval: cfg.Poll.DeviceListInterval, SceneInterval: cfg.Poll.SceneInterval}
	interval, plan := poller.PlanInterval(len(devs), pcfg)
	q := quotaPlan{devices: len(devs), interval: interval, plan: plan}
	for _, d := range devs {
		for _, inst := range []string{capability.InstanceLightScene, capability.InstanceDIYScene} {
			if _, ok := d.Capability(inst); ok {
				q.scenes++
			}
		}
	}
	q.reads = q.devices * perDay(interval)
	q.lists = perDay(max(cfg.Poll.DeviceListInterval, time.Minute))
	q.sceneReq = q.scenes * perDay(max(cfg.Poll.SceneInterval, time.Minute))
	return q
}

func perDay(d time.Duration) int { return int((24*time.Hour + d - 1) / d) }

// quotaVerdict is one line of -check about a quota: its level (0: ok),
// subject, words, and the lines that explain it.
type quotaVerdict struct {
	level   config.Level
	what    string
	text    string
	details []string
}

// checkQuota prints a line for each known quota (or that none is known), the
// day's plan, then each device's interval. A plan that does not fit is a
// warning, in the daemon's words, since the bridge still runs as often as the
// quota allows.
func checkQuota(cfg config.Config, devs []capability.Device, limits cloud.RateLimits, out io.Writer, now time.Time) {
	p := planOf(cfg, devs)
	var vs []quotaVerdict
	if w, ok := learnedQuota(limits); ok && !cfg.Demo {
		vs = append(vs, checkLearned(cfg, p, w, now))
	}
	if limit := cfg.Cloud.DailyLimit; limit > 0 {
		if p.plan.OverBudget {
			vs = append(vs, quotaVerdict{level: config.Warning, what: "daily limit", text: config.DailyLimitTooLow(limit, p.devices)})
		} else {
			vs = append(vs, quotaVerdict{what: "daily limit",
				text: fmt.Sprintf("within CLOUD_DAILY_LIMIT=%d (POLL_INTERVAL planned at %s for it)", limit, config.FormatDuration(p.interval))})
		}
	}
	if len(vs) == 0 {
		vs = append(vs, quotaVerdict{what: "quota", text: "no quota known: the cloud's answer told none (no API-RateLimit-* headers) and CLOUD_DAILY_LIMIT is 0; if the account has a daily quota, set CLOUD_DAILY_LIMIT to it"})
	}
	vs[0].details = append([]string{fmt.Sprintf("the configuration plans %d requests a day: %d devices read every %s (%d), the device list every %s (%d), %d scene lists every %s (%d)",
		p.total(), p.devices, config.FormatDuration(p.interval), p.reads, config.FormatDuration(cfg.Poll.DeviceListInterval), p.lists,
		p.scenes, config.FormatDuration(cfg.Poll.SceneInterval), p.sceneReq)}, vs[0].details...)
	for _, v := range vs {
		v.write(out)
	}
	checkPolling(cfg, devs, out)
}

// write prints v: its line, then its details indented.
func (v quotaVerdict) write(out io.Writer) {
	report(out, v.level, v.what, v.text)
	for _, d := range v.details {
		fmt.Fprintf(out, "       %s\n", d)
	}
}

// checkPolling prints each device's interval and reason as the bridge would plan
// them now, from what STATE_DIR holds; the cloud's quota may lengthen them all.
func checkPolling(cfg config.Config, devs []capability.Device, out io.Writer) {
	dir := statedir.Dir(cfg.State.Dir)
	opts := map[capability.Key]poller.DeviceOptions{}
	for _, d := range settings.New(cfg, dir, zerolog.Nop(), nil, nil, nil).Devices() {
		iv, _ := config.ParseDuration(d.PollInterval) // validated when set
		opts[capability.Key{SKU: d.SKU, Device: d.Device}] = poller.DeviceOptions{Interval: iv, Disabled: d.Disabled}
	}
	plan := poller.Planned(devs, opts, poller.Config{Interval: cfg.Poll.Interval, DailyLimit: cfg.Cloud.DailyLimit,
		ListInterval: cfg.Poll.DeviceListInterval, SceneInterval: cfg.Poll.SceneInterval, QuietFactor: cfg.Poll.QuietFactor,
		StateRow: time.Minute / time.Duration(max(cfg.Limits.StatePerMinute, 1)), StateDir: dir})
	fmt.Fprintf(out, "ok   poll: each device's interval as planned now (POLL_QUIET_FACTOR=%d):\n", cfg.Poll.QuietFactor)
	for _, d := range devs {
		iv := plan[d.Key()]
		fmt.Fprintf(out, "       %s (%s %s): every %s, %s\n", capability.DisplayName(d, ""), d.SKU, d.Device, config.FormatDuration(iv.Every), iv.Why)
	}
}

// checkLearned compares the plan with the cloud's quota at now, keeping the
// bridge's reserve. A quota that renews at a midnight is taken as a day's; any
// other is compared until it renews, since one answer does not tell its length.
func checkLearned(cfg config.Config, p quotaPlan, w cloud.RateLimit, now time.Time) quotaVerdict {
	what := fmt.Sprintf("the cloud's quota (%s)", w)
	if !w.HasRemaining || w.Reset.IsZero() {
		return quotaVerdict{what: "quota", text: what + "; it did not say what is left and when it renews, so the plan cannot be compared"}
	}
	list := max(cfg.Poll.DeviceListInterval, time.Minute)
	left := max(w.Reset.Sub(now), time.Second)
	// A day's quota seen in its last hour is compared until it renews: a
	// short window ending near midnight is not taken for a day's.
	daily := w.Limit > 0 && left >= time.Hour && left <= 24*time.Hour+time.Minute && atMidnight(w.Reset)
	planned, avail, span := 0, 0, ""
	if daily {
		planned, avail, span = p.total(), w.Limit-poller.QuotaReserve(w.Limit, 24*time.Hour, list), "a day"
	} else {
		planned = int(float64(p.total())*left.Seconds()/(24*time.Hour).Seconds() + 0.5)
		avail, span = w.Remaining-poller.QuotaReserve(w.Limit, left, list), "until it renews in "+config.FormatDuration(left.Round(time.Second))
	}
	if planned <= avail {
		return quotaVerdict{what: "quota", text: fmt.Sprintf("%d requests planned %s, within %s", planned, span, what)}
	}
	fit := 24 * time.Hour
	if daily {
		if d := poller.QuotaInterval(p.devices, w.Limit, 24*time.Hour, list); d > 0 {
			fit = d
		}
	} else if reads := (float64(avail) - float64(p.lists+p.sceneReq)*left.Seconds()/(24*time.Hour).Seconds()) * 0.9; reads > 0 && p.devices > 0 {
		if d := time.Duration(float64(p.devices) * left.Seconds() / reads * float64(time.Second)); d < 24*time.Hour {
			fit = d.Truncate(time.Second) + time.Second
		}
	}
	return quotaVerdict{level: config.Warning, what: "quota", text: config.QuotaSlowsPolling(p.interval, fit),
		details: []string{fmt.Sprintf("%d requests planned %s, more than the %d %s leaves beside the bridge's reserve for commands", planned, span, max(avail, 0), what)}}
}

// atMidnight reports whether t is within a minute of a midnight, UTC or
// local: when a day's quota renews.
func atMidnight(t time.Time) bool {
	for _, loc := range []*time.Location{time.UTC, time.Local} {
		if m := t.In(loc).Hour()*60 + t.In(loc).Minute(); m == 0 || m == 24*60-1 {
			return true
		}
	}
	return false
}

// learnedQuota is the window the answer's headers describe: the
// account's quota, else the shorter window.
func learnedQuota(got cloud.RateLimits) (cloud.RateLimit, bool) {
	switch {
	case got.Quota.Known():
		return got.Quota, true
	case got.Short.Known():
		return got.Short, true
	}
	return cloud.RateLimit{}, false
}
