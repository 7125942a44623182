package app

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/scheduler"
)

// The daemon's health, as /healthz, the health request, the Cloud sensor and
// the systemd watchdog judge it. Unhealthy means a restart may help: the broker
// is gone, the cloud is unreachable or answers only errors, or the poller is
// stuck. A wait the cloud asked for is healthy, because a restart would not
// shorten it but would read every device again.

// health answers /healthz and the health request: healthy when the broker is
// connected, the cloud answers and the poller progresses. reasons say why not,
// or what holds the reads back while healthy.
func (m *Main) health() (bool, []string, any) {
	m.mu.Lock()
	var p parts
	if m.run != nil {
		p = *m.run
	}
	m.mu.Unlock()
	conn, poll, sched := p.conn, p.poll, p.sched
	now := m.clock().Now()
	var problems, notes []string
	if conn == nil || !conn.Connected() {
		problems = append(problems, "not connected to the MQTT broker")
	}
	details := map[string]any{}
	var (
		st   scheduler.Stats
		pst  poller.Stats
		held hold
	)
	if poll != nil {
		pst = poll.Stats()
	}
	if sched != nil {
		st = sched.Stats()
		held = cloudHold(st, pst.QuotaWait, now)
	}
	if poll != nil {
		stale := staleAfter(pst.Interval)
		last := poll.Progress()
		details["devices"] = pst.Devices
		details["poll_interval"] = pst.Interval.String()
		if !last.IsZero() {
			details["last_progress"] = last.UTC().Format(time.RFC3339)
		}
		if last = held.progress(last); last.IsZero() || now.Sub(last) > stale {
			problems = append(problems, fmt.Sprintf("the poller has made no progress for more than %s", stale.Round(time.Second)))
		}
	}
	if sched != nil {
		if !st.AuthHoldoffUntil.IsZero() && now.Before(st.AuthHoldoffUntil) {
			problems = append(problems, "the cloud refuses the API key: "+cloud.KeyHint(m.Config.APIKeySource(), m.Config.Cloud.KeyHeader))
		} else if failing, why := cloudFailing(st.Cloud, now); failing {
			problems = append(problems, why)
		}
		details["requests_today"] = st.RequestsToday
		if !st.Cloud.LastAnswer.IsZero() {
			details["cloud_last_answer"] = st.Cloud.LastAnswer.UTC().Format(time.RFC3339)
		}
		if !held.until.IsZero() {
			notes = append(notes, held.why)
			details["held_until"] = held.until.UTC().Format(time.RFC3339)
		}
	}
	return len(problems) == 0, append(problems, notes...), details
}

// staleAfter is how long without poller progress counts as stuck: three
// poll intervals (at least a minute each) and half a minute more.
func staleAfter(interval time.Duration) time.Duration {
	return 3*max(interval, time.Minute) + 30*time.Second
}

// readProgress is when the reads last progressed, for the systemd watchdog;
// as for /healthz, a wait the cloud asked for counts as progress until its end.
func readProgress(poll *poller.Poller, sched *scheduler.Scheduler, now time.Time) time.Time {
	return cloudHold(sched.Stats(), poll.Stats().QuotaWait, now).progress(poll.Progress())
}

// hold is a wait the cloud asked for that keeps requests from going out: until
// when, and why in the user's words; zero when none.
type hold struct {
	until time.Time
	why   string
}

// progress is the poller's last progress, or the hold's end when later:
// no read can be answered before it, so staleness counts from there.
func (h hold) progress(last time.Time) time.Time {
	if h.until.After(last) {
		return h.until
	}
	return last
}

// cloudHold is the latest wait the cloud asked for at now: a 429's (while it is
// the last failure), the scheduler's while the quota is spent, or the poller's
// pacing until a quota window renews.
func cloudHold(st scheduler.Stats, quotaWait, now time.Time) hold {
	var h hold
	var why []string
	add := func(until time.Time, text string) {
		why = append(why, text)
		h.until = later(h.until, until)
	}
	if c := st.Cloud; rateLimitHeld(c, now) {
		add(c.HeldUntil, "rate-limited: the cloud answered 429 and asked to wait; requests are held until "+
			c.HeldUntil.UTC().Format(time.RFC3339)+" (no outage: the cloud answers)")
	}
	if q := st.Quota; !q.HeldUntil.IsZero() && now.Before(q.HeldUntil) {
		text := "rate-limited: the account's request quota is spent"
		var qe *scheduler.QuotaError
		if errors.As(q.HeldErr, &qe) {
			text += " (" + qe.Window.String() + ")"
		}
		add(q.HeldUntil, text+"; requests are held until "+q.HeldUntil.UTC().Format(time.RFC3339))
	}
	if quotaWait.After(now) {
		add(quotaWait, "the account's request quota is nearly spent: the periodic reads wait until it renews at "+
			quotaWait.UTC().Format(time.RFC3339)+" (commands and reads on request still go out)")
	}
	h.why = strings.Join(why, "; ")
	return h
}

// rateLimitHeld reports whether the cloud's last failure is a 429 whose
// wait (and the grace after it, for the request that ends it) is not over.
func rateLimitHeld(c scheduler.CloudHealth, now time.Time) bool {
	_, limited := cloud.IsRateLimited(c.Err)
	return limited && !c.HeldUntil.IsZero() && now.Before(c.HeldUntil.Add(cloudGrace))
}

// cloudFailing says whether the cloud counts as unreachable now, and why.
// A 429's wait is not failing (rateLimitHeld): the cloud answered.
func cloudFailing(h scheduler.CloudHealth, now time.Time) (bool, string) {
	if rateLimitHeld(h, now) {
		return false, ""
	}
	if _, limited := cloud.IsRateLimited(h.Err); limited && !h.HeldUntil.IsZero() {
		// The wait is over and nothing has answered since.
		return true, fmt.Sprintf("the cloud has not answered since the wait it asked for (429) ended at %s: %s",
			h.HeldUntil.UTC().Format(time.RFC3339), h.Err)
	}
	// Error answers must last the grace, since a few are a blip, not an outage;
	// requests that never reached the cloud count sooner.
	unreached := h.Failures >= failingAfter && !cloud.Reached(h.Err)
	if h.FailingSince.IsZero() || !h.Failing(now, cloudGrace) && !unreached {
		return false, ""
	}
	what := "the cloud is not reachable"
	if cloud.Reached(h.Err) {
		what = "the cloud answers only errors"
	}
	reason := what + ": " + failedRun(h.Failures, now.Sub(h.FailingSince))
	if h.Err != nil {
		reason += ": " + h.Err.Error()
	}
	if !h.LastAnswer.IsZero() {
		reason += "; last answer at " + h.LastAnswer.UTC().Format(time.RFC3339)
	}
	return true, reason
}

// failedRun says how many requests failed in a row over how long, writing
// failures within a second as "in the last second" rather than "0s".
func failedRun(n int, over time.Duration) string {
	what := fmt.Sprintf("%d requests failed", n)
	if n == 1 {
		what = "1 request failed"
	}
	if over < time.Second {
		return what + " in the last second, none succeeded"
	}
	return fmt.Sprintf("%s in the last %s, none succeeded", what, over.Round(time.Second))
}

// cloudConnected is the bridge's Cloud sensor: nil before any request has
// an outcome; connected while the cloud answers, a 429's wait included.
func cloudConnected(h scheduler.CloudHealth, now time.Time) *bool {
	if h.LastAnswer.IsZero() && h.FailingSince.IsZero() {
		return nil
	}
	failing, _ := cloudFailing(h, now)
	ok := !failing
	return &ok
}
