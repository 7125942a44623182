package main

// The entities that operate the bridge (its own device's buttons, log level
// and poll interval; each device's "Read now" and poll interval) and the
// music-mode entities, as a user's clicks in Home Assistant drive them.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/discovery"
)

// requestsSince counts the simulator's answered requests to endpoint (of
// device, when not empty) since t.
func (c *checker) requestsSince(endpoint, device string, t time.Time) int {
	n := 0
	for _, r := range c.sim.Requests() {
		if r.Endpoint == endpoint && (device == "" || r.Device == device) && !r.Time.Before(t) && r.HTTPStatus == 200 {
			n++
		}
	}
	return n
}

// bridgeInfo is the bridge's retained bridge/info, decoded.
func (c *checker) bridgeInfo() map[string]any {
	m, ok := c.st.get(c.layout.BridgeInfo())
	if !ok {
		return nil
	}
	var v map[string]any
	if json.Unmarshal(m.payload, &v) != nil {
		return nil
	}
	return v
}

// infoNumber reads a number from bridge/info along a path of members.
func (c *checker) infoNumber(path ...string) (float64, bool) {
	var v any = c.bridgeInfo()
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return 0, false
		}
		v = m[k]
	}
	f, ok := v.(float64)
	return f, ok
}

// wantNumberState: Home Assistant shows the number want (40 and 40.0 alike).
func wantNumberState(c *checker, eid string, want float64) error {
	s, _ := c.haState(eid)
	if f, err := strconv.ParseFloat(s, 64); err != nil || f != want {
		return fmt.Errorf("Home Assistant %s state %q, want %v", eid, s, want)
	}
	return nil
}

// pressed: a button's state is the time of its last press, later than t.
func pressed(c *checker, eid string, t time.Time) error {
	s, _ := c.haState(eid)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || at.Before(t.Add(-time.Second)) {
		return fmt.Errorf("Home Assistant %s state %q, want the time of the press", eid, s)
	}
	return nil
}

// bridgeControls drives the bridge's own entities: each button, the log
// level and the poll interval (both set back afterwards), and reads the
// rate-limited and (with a daily limit) quota sensors.
func (c *checker) bridgeControls(ents []*haEntity, r *devResult) {
	d := &devCheck{c: c, id: "bridge", r: r}
	devices := len(c.sim.Devices())
	quota := false
	for _, e := range ents {
		switch {
		case e.component == "sensor" && e.object == "quota_left":
			quota = true
			d.state(e, func() error { return c.wantQuotaLeft(e.id) })
		case e.component == "button" && e.object == "refresh":
			d.call(e.id, "button.press", nil, func(since time.Time) error {
				if n := c.requestsSince(cloud.EndpointDevices, "", since); n == 0 {
					return fmt.Errorf("no device-list request reached the simulator after the press")
				}
				return pressed(c, e.id, since)
			})
		case e.component == "button" && e.object == "read_all":
			d.call(e.id, "button.press", nil, func(since time.Time) error {
				read := map[string]bool{}
				for _, q := range c.sim.Requests() {
					if q.Endpoint == cloud.EndpointState && !q.Time.Before(since) && q.HTTPStatus == 200 {
						read[q.Device] = true
					}
				}
				if len(read) < devices {
					return fmt.Errorf("%d of %d devices read after the press", len(read), devices)
				}
				return pressed(c, e.id, since)
			})
		case e.component == "button" && e.object == "republish":
			d.call(e.id, "button.press", nil, func(since time.Time) error {
				cfgs, again := c.configs(), 0
				for _, m := range cfgs {
					if !m.at.Before(since) {
						again++
					}
				}
				if again < len(cfgs) {
					return fmt.Errorf("%d of %d discovery configs published again after the press", again, len(cfgs))
				}
				return pressed(c, e.id, since)
			})
		case e.component == "select" && e.object == "log_level":
			was, _ := c.haState(e.id)
			for _, level := range []string{"debug", was} {
				if level == "" || level == "unknown" {
					continue
				}
				d.call(e.id, "select.select_option", map[string]any{"option": level}, func(time.Time) error {
					if got, _ := c.bridgeInfo()["log_level"].(string); got != level {
						return fmt.Errorf("bridge/info log_level %q, want %q", got, level)
					}
					return d.wantState(e.id, level)
				})
			}
		case e.component == "number" && e.object == "poll_interval":
			was, ok := c.infoNumber("poll", "interval_seconds")
			if !ok {
				r.fail("%s: bridge/info has no poll.interval_seconds", e.id)
				continue
			}
			for _, v := range []float64{was + 30, was} {
				d.call(e.id, "number.set_value", map[string]any{"value": v}, func(time.Time) error {
					if got, _ := c.infoNumber("poll", "interval_seconds"); got != v {
						return fmt.Errorf("bridge/info poll.interval_seconds %v, want %v", got, v)
					}
					return wantNumberState(c, e.id, v)
				})
			}
		case e.component == "binary_sensor" && e.object == "rate_limited":
			d.state(e, func() error { return d.wantState(e.id, "off") })
		}
	}
	if c.dailyLimit > 0 && !quota {
		r.fail("CLOUD_DAILY_LIMIT=%d but Home Assistant has no \"Quota left today\" sensor", c.dailyLimit)
	}
}

// wantQuotaLeft: Home Assistant shows the quota left of the bridge's last
// bridge/stats, a number within the daily limit.
func (c *checker) wantQuotaLeft(eid string) error {
	m, ok := c.st.get(c.layout.BridgeStats())
	var stats discovery.BridgeStats
	if !ok || json.Unmarshal(m.payload, &stats) != nil || stats.QuotaLeft == nil {
		return fmt.Errorf("bridge/stats has no quota_left with CLOUD_DAILY_LIMIT=%d", c.dailyLimit)
	}
	if left := *stats.QuotaLeft; left <= 0 || left > c.dailyLimit {
		return fmt.Errorf("bridge/stats quota_left %d, want within 1..%d", left, c.dailyLimit)
	}
	return wantNumberState(c, eid, float64(*stats.QuotaLeft))
}

// readNow presses a device's "Read now" button (enabled after the
// restart): a state read of the device reaches the simulator.
func (d *devCheck) readNow(e *haEntity) {
	d.call(e.id, "button.press", nil, func(since time.Time) error {
		if d.c.requestsSince(cloud.EndpointState, d.dev.Device, since) == 0 {
			return fmt.Errorf("no state read of %s reached the simulator after the press", d.dev.Device)
		}
		return pressed(d.c, e.id, since)
	})
}

// pollInterval sets a device's own poll interval (enabled after the
// restart) and leaves it set: bridge/info lists it for the device.
func (d *devCheck) pollInterval(e *haEntity) {
	const want = 120
	d.call(e.id, "number.set_value", map[string]any{"value": want}, func(time.Time) error {
		if got, _ := d.c.infoNumber("devices", d.id, "poll_interval_seconds"); got != want {
			return fmt.Errorf("bridge/info devices[%s].poll_interval_seconds %v, want %v", d.id, got, want)
		}
		return wantNumberState(d.c, e.id, want)
	})
}

// musicMember tells whether the entity is a member of the music-mode
// struct (its auto colour switch or its colour light) and which.
func musicMember(e *haEntity) (string, bool) {
	inst, member, ok := strings.Cut(e.object, "_")
	if !ok || inst != capability.InstanceMusicMode || (member != "autoColor" && member != "rgb") {
		return "", false
	}
	return member, true
}

// musicAutoColour switches music mode's automatic colours off and on: the
// simulated device's musicMode struct follows, and so does Home Assistant.
func (d *devCheck) musicAutoColour(e *haEntity) {
	for _, v := range []int64{0, 1} {
		action := "switch.turn_off"
		if v == 1 {
			action = "switch.turn_on"
		}
		d.call(e.id, action, nil, func(time.Time) error {
			return all(func() error {
				return d.wantValue(capability.InstanceMusicMode, map[string]any{"autoColor": v})
			}, func() error { return d.wantState(e.id, onOff(v)) })
		})
	}
}

// musicColour picks a music colour (automatic colours off) and turns the
// light off again (automatic colours back on).
func (d *devCheck) musicColour(e *haEntity) {
	d.call(e.id, "light.turn_on", map[string]any{"rgb_color": []int{255, 0, 128}}, func(time.Time) error {
		return all(func() error {
			return d.wantValue(capability.InstanceMusicMode, map[string]any{"autoColor": 0, "rgb": 0xFF0080})
		}, func() error { return d.wantState(e.id, "on") })
	})
	d.call(e.id, "light.turn_off", nil, func(time.Time) error {
		return all(func() error {
			return d.wantValue(capability.InstanceMusicMode, map[string]any{"autoColor": 1})
		}, func() error { return d.wantState(e.id, "off") })
	})
}
