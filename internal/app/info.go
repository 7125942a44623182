package app

import (
	"encoding/json"
	"time"

	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/settings"
)

// infoJSON is <base>/bridge/info: what the bridge runs with, never a
// secret. Home Assistant's bridge entities read it.
type infoJSON struct {
	discovery.BridgeInfo
	// Options are the settings a user may change over MQTT, and Sources
	// where each value comes from ("environment" or "mqtt").
	Options    map[string]any    `json:"options"`
	Sources    map[string]string `json:"sources"`
	Plan       planJSON          `json:"plan"`
	RateLimits map[string]int    `json:"rate_limits"`
}

// planJSON is the arithmetic behind the poll interval.
type planJSON struct {
	Interval   string `json:"interval"`
	Needed     string `json:"needed,omitempty"`
	Total      int    `json:"requests_per_day,omitempty"`
	Budget     int    `json:"budget,omitempty"`
	OverBudget bool   `json:"over_budget,omitempty"`
}

// bridgeInfo builds <base>/bridge/info.
func bridgeInfo(version string, s *settings.Settings, p poller.Stats, sc scheduler.Stats) []byte {
	snap := s.Snapshot()
	cfg := snap.Config
	info := infoJSON{
		BridgeInfo: discovery.BridgeInfo{
			Version:  version,
			LogLevel: cfg.Log.Level,
			Poll: discovery.PollInfo{
				IntervalSeconds: int(p.Interval / time.Second),
				DailyLimit:      cfg.Cloud.DailyLimit,
			},
			Devices: map[string]discovery.DeviceInfo{},
		},
		Options: snap.Options,
		Sources: snap.Sources,
		RateLimits: map[string]int{
			"devices_per_minute":        cfg.Limits.DevicesPerMinute,
			"control_per_second":        cfg.Limits.ControlPerSecond,
			"control_burst":             cfg.Limits.ControlBurst,
			"device_control_per_second": cfg.Limits.DeviceControlPerSecond,
			"device_control_burst":      cfg.Limits.DeviceControlBurst,
			"state_per_minute":          cfg.Limits.StatePerMinute,
			"scenes_per_minute":         cfg.Limits.ScenesPerMinute,
		},
		Plan: planJSON{Interval: config.FormatDuration(p.Plan.Interval), Total: p.Plan.Total, Budget: p.Plan.Budget,
			OverBudget: p.Plan.OverBudget},
	}
	if p.Plan.Needed > 0 {
		info.Plan.Needed = config.FormatDuration(p.Plan.Needed)
	}
	info.Poll.RequestsToday = sc.RequestsToday
	if cfg.Cloud.DailyLimit > 0 {
		left := max(cfg.Cloud.DailyLimit-sc.RequestsToday, 0)
		info.Poll.QuotaLeft = &left
	}
	for id, d := range snap.Devices {
		di := discovery.DeviceInfo{Disabled: d.Disabled, Name: d.Name}
		if iv, err := time.ParseDuration(d.PollInterval); err == nil {
			di.PollIntervalSeconds = int(iv / time.Second)
		}
		info.Devices[id] = di
	}
	b, _ := json.Marshal(info)
	return b
}
