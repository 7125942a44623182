package discovery

import (
	"strings"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/topic"
)

// BridgeStats is the JSON the bridge publishes, retained, on
// <base>/bridge/stats; the bridge's diagnostic entities read it.
type BridgeStats struct {
	// Version of the bridge.
	Version string `json:"version"`
	// RequestsToday counts cloud requests since local midnight (the
	// cloud's daily budget is what runs out first).
	RequestsToday int `json:"requests_today"`
	// Last429 is when the cloud last answered 429 Too Many Requests;
	// null when it never did since the start.
	Last429 *time.Time `json:"last_429"`
	// QueueDepth is the number of requests waiting for a budget.
	QueueDepth int `json:"queue_depth"`
	// DevicesOnline and DevicesTotal count the account's devices.
	DevicesOnline int `json:"devices_online"`
	DevicesTotal  int `json:"devices_total"`
	// RateLimited is true while the bridge is held back by a recent 429 or a
	// spent quota; it is the "Rate limited" problem sensor.
	RateLimited bool `json:"rate_limited"`
	// QuotaLeft is what is left of the daily quota today; null without a
	// daily limit.
	QuotaLeft *int `json:"quota_left"`
	// CloudConnected is false while the cloud is unreachable or answers only
	// errors, null until a request had an outcome; it is the "Cloud" sensor.
	CloudConnected *bool `json:"cloud_connected"`
	// The account's binding quota window, learned from the cloud's headers or
	// configured by CLOUD_DAILY_LIMIT, whichever is smaller; all null while no
	// quota is known.
	QuotaLimit     *int       `json:"quota_limit"`
	QuotaRemaining *int       `json:"quota_remaining"`
	QuotaReset     *time.Time `json:"quota_reset"`
	QuotaSource    *string    `json:"quota_source"`
	// QuotaFits says whether the last ten minutes' pace fits what is left of
	// the quota, and QuotaRunsOut when it runs out if not.
	QuotaFits    *bool      `json:"quota_fits"`
	QuotaRunsOut *time.Time `json:"quota_runs_out"`
}

// BridgeInfo is the retained JSON on <base>/bridge/info: the settings in
// use, which the bridge's controls in Home Assistant read.
type BridgeInfo struct {
	Version  string   `json:"version"`
	LogLevel string   `json:"log_level"` // one of LogLevels
	Poll     PollInfo `json:"poll"`
	// Devices lists the devices with settings of their own, by topic id.
	Devices map[string]DeviceInfo `json:"devices"`
}

// PollInfo is the poller's part of BridgeInfo.
type PollInfo struct {
	// IntervalSeconds is the poll interval in use for devices without
	// their own.
	IntervalSeconds int `json:"interval_seconds"`
	// DailyLimit is CLOUD_DAILY_LIMIT, 0 for none.
	DailyLimit    int  `json:"daily_limit"`
	RequestsToday int  `json:"requests_today"`
	QuotaLeft     *int `json:"quota_left"` // null without a daily limit
}

// DeviceInfo is one device's settings in BridgeInfo.
type DeviceInfo struct {
	// PollIntervalSeconds is the device's own poll interval; 0 (omitted)
	// means the bridge's.
	PollIntervalSeconds int    `json:"poll_interval_seconds,omitempty"`
	Disabled            bool   `json:"disabled"`
	Name                string `json:"name,omitempty"` // display name chosen by the user
}

// The values of BridgeStats.QuotaSource (scheduler.QuotaLearned and
// QuotaConfigured; discovery imports no scheduler).
const (
	scheduleLearned    = "learned"
	scheduleConfigured = "configured"
)

// LogLevels are the log levels the bridge's log-level select offers, as
// LOG_LEVEL spells them.
var LogLevels = []string{"trace", "debug", "info", "warn", "error"}

// Poll interval bounds of the poll-interval numbers, in seconds: the
// poller's floor (POLL_INTERVAL is at least 2 s) and a day.
const (
	MinPollSeconds = 2
	MaxPollSeconds = 86400
)

// BridgeConfigs returns the discovery messages of the bridge's own device:
// diagnostic sensors, setting controls and request buttons. Entities that
// do not apply map to an empty payload, which removes one an earlier run
// left retained.
func BridgeConfigs(cfg Config) map[string][]byte {
	cfg = cfg.withDefaults()
	l := cfg.Layout
	dev := map[string]any{
		"identifiers":  []any{cfg.BridgeID},
		"name":         "cloud2mqtt bridge (" + l.Base + ")",
		"manufacturer": "cloud2mqtt",
		"model":        "cloud2mqtt bridge",
	}
	if cfg.Version != "" {
		dev["sw_version"] = cfg.Version
	}
	out := map[string][]byte{}
	// add publishes one entity of the bridge's device; the object id is key.
	add := func(component, key, name string, p map[string]any) {
		uid := cfg.BridgeID + "_" + key
		p["name"] = name
		p["unique_id"] = uid
		p["object_id"] = strings.ToLower(uid)
		p["default_entity_id"] = component + "." + strings.ToLower(uid)
		p["device"] = dev
		p["origin"] = origin(cfg)
		p["availability"] = []any{map[string]any{"topic": l.BridgeState()}}
		out[cfg.ConfigTopic(component, cfg.BridgeID, key)] = marshal(p)
	}
	sensor := func(key, name string, extra map[string]any) {
		p := map[string]any{
			"state_topic":     l.BridgeStats(),
			"value_template":  "{{ value_json.get(" + jstr(key) + ") }}",
			"entity_category": "diagnostic",
		}
		for k, v := range extra {
			p[k] = v
		}
		add("sensor", key, name, p)
	}
	sensor("version", "Version", map[string]any{"icon": "mdi:tag"})
	sensor("requests_today", "Cloud requests today", map[string]any{
		"state_class": "total_increasing", "icon": "mdi:cloud-upload"})
	sensor("last_429", "Last rate limit", map[string]any{
		"device_class": "timestamp",
		// null (never) must read as unknown, not as an invalid timestamp
		"value_template": "{{ value_json.get(\"last_429\") or \"None\" }}"})
	sensor("queue_depth", "Queue depth", map[string]any{
		"state_class": "measurement", "icon": "mdi:tray-full"})
	sensor("devices_online", "Devices online", map[string]any{
		"state_class": "measurement", "icon": "mdi:lan-connect"})
	if cfg.DailyLimit > 0 {
		sensor("quota_left", "Quota left today", map[string]any{
			"state_class": "measurement", "icon": "mdi:gauge"})
	} else {
		out[cfg.ConfigTopic("sensor", cfg.BridgeID, "quota_left")] = []byte{}
	}

	// Quota entities exist only once a quota is known; on a cloud that tells
	// none they would stay unknown forever.
	if cfg.DailyLimit > 0 || cfg.QuotaKnown {
		sensor("quota_limit", "Cloud quota", map[string]any{"icon": "mdi:speedometer"})
		sensor("quota_remaining", "Cloud quota left", map[string]any{
			"state_class": "measurement", "icon": "mdi:gauge"})
		sensor("quota_reset", "Cloud quota renews", map[string]any{
			"device_class":   "timestamp",
			"value_template": "{{ value_json.get(\"quota_reset\") or \"None\" }}"})
		sensor("quota_source", "Cloud quota source", map[string]any{
			"device_class": "enum", "options": []any{scheduleLearned, scheduleConfigured},
			"value_template": "{% set v = value_json.get(\"quota_source\") %}{{ v if v in " + jval([]any{scheduleLearned, scheduleConfigured}) + " else \"None\" }}"})
		sensor("quota_runs_out", "Cloud quota runs out", map[string]any{
			"device_class":   "timestamp",
			"value_template": "{{ value_json.get(\"quota_runs_out\") or \"None\" }}"})
		add("binary_sensor", "quota_short", "Cloud quota short", map[string]any{
			"state_topic":     l.BridgeStats(),
			"device_class":    "problem",
			"entity_category": "diagnostic",
			// short: the pace does not fit; unknown until it is measured
			"value_template": "{% set v = value_json.get(\"quota_fits\") %}" +
				"{{ \"None\" if v is none else (\"OFF\" if v else \"ON\") }}",
			"payload_on":  "ON",
			"payload_off": "OFF",
		})
	} else {
		for _, e := range [][2]string{{"sensor", "quota_limit"}, {"sensor", "quota_remaining"},
			{"sensor", "quota_reset"}, {"sensor", "quota_source"}, {"sensor", "quota_runs_out"},
			{"binary_sensor", "quota_short"}} {
			out[cfg.ConfigTopic(e[0], cfg.BridgeID, e[1])] = []byte{}
		}
	}

	add("binary_sensor", "rate_limited", "Rate limited", map[string]any{
		"state_topic":     l.BridgeStats(),
		"device_class":    "problem",
		"entity_category": "diagnostic",
		"value_template": "{% set v = value_json.get(\"rate_limited\") %}" +
			"{{ \"None\" if v is none else (\"ON\" if v else \"OFF\") }}",
		"payload_on":  "ON",
		"payload_off": "OFF",
	})

	add("binary_sensor", "cloud", "Cloud", map[string]any{
		"state_topic":     l.BridgeStats(),
		"device_class":    "connectivity",
		"entity_category": "diagnostic",
		"value_template": "{% set v = value_json.get(\"cloud_connected\") %}" +
			"{{ \"None\" if v is none else (\"ON\" if v else \"OFF\") }}",
		"payload_on":  "ON",
		"payload_off": "OFF",
	})

	levels := make([]any, len(LogLevels))
	for i, v := range LogLevels {
		levels[i] = v
	}
	add("select", "log_level", "Log level", map[string]any{
		"options":          levels,
		"state_topic":      l.BridgeInfo(),
		"value_template":   "{% set v = value_json.get(\"log_level\") %}{{ v if v in " + jval(levels) + " else \"None\" }}",
		"command_topic":    l.BridgeOptions(),
		"command_template": "{{ {\"options\": {\"log_level\": value}} | tojson }}",
		"entity_category":  "config",
		"icon":             "mdi:format-list-bulleted",
	})
	add("number", "poll_interval", "Poll interval", pollNumber(map[string]any{
		"state_topic": l.BridgeInfo(),
		"value_template": "{% set p = value_json.get(\"poll\") %}" +
			"{{ p.get(\"interval_seconds\") if p is mapping else none }}",
		"command_topic":    l.BridgeOptions(),
		"command_template": "{{ {\"options\": {\"poll_interval\": " + pollValue + "}} | tojson }}",
	}))

	button := func(key, name, action, category, icon string) {
		add("button", key, name, map[string]any{
			"command_topic":   l.BridgeRequest(action),
			"payload_press":   "{}",
			"entity_category": category,
			"icon":            icon,
		})
	}
	button("refresh", "Refresh device list", topic.ActionRefresh, "config", "mdi:refresh")
	button("read_all", "Read all devices now", topic.ActionReadAll, "diagnostic", "mdi:download-multiple")
	button("republish", "Republish discovery", topic.ActionRepublish, "config", "mdi:home-import-outline")
	return out
}

// pollValue is the Jinja expression of a poll-interval number's command
// value: whole seconds as a duration string ("90s").
const pollValue = "((value | round(0) | int) ~ \"s\")"

// pollNumber adds the members every poll-interval number shares.
func pollNumber(p map[string]any) map[string]any {
	p["min"] = MinPollSeconds
	p["max"] = MaxPollSeconds
	p["step"] = 1
	p["mode"] = "box"
	p["unit_of_measurement"] = "s"
	p["device_class"] = "duration"
	p["entity_category"] = "config"
	return p
}

// EventPayload is the message published on <base>/<id>/event for one
// device event, in the form the event entities of Configs read.
func EventPayload(instance string, o capability.EventOption) []byte {
	p := map[string]any{"event_type": o.Name, "instance": instance, "value": o.Value}
	if o.Message != "" {
		p["message"] = o.Message
	}
	return marshal(p)
}
