// Package topic is the MQTT topic layout of the bridge, in one place, so that
// the bridge, its Home Assistant discovery and its documentation agree.
//
// Every topic is under a base (MQTT_BASE_TOPIC, default "cloud2mqtt"):
//
//	<base>/bridge/state                 online|offline, retained (the will)
//	<base>/bridge/devices               JSON array of devices, retained
//	<base>/bridge/stats                 JSON of the bridge's counters, retained
//	<base>/bridge/info                  JSON of the bridge's settings, retained
//	<base>/bridge/logging               the bridge's log lines, not retained
//	<base>/bridge/request/<action>      requests: refresh, scenes, health, devices,
//	                                    read_all, republish, options, device/options
//	<base>/bridge/response/<action>     {status, data, error, transaction}
//	<base>/bridge/response/unknown      the answer to an action the bridge does not know
//	<base>/bridge/error                 a command for an id no device has, the id in the payload
//	<base>/<id>/state                   JSON object of the device's values, retained
//	<base>/<id>/availability            online|offline, retained
//	<base>/<id>/set                     JSON object {instance: value, ...}
//	<base>/<id>/set/<instance>          a plain value for one instance
//	<base>/<id>/get                     ask for a confirming read now
//	<base>/<id>/error                   JSON {instance, value, error, code}, not retained
//	<base>/<id>/event                   JSON {"event_type": ..., ...}, not retained
//	<base>/<id>/light                   Home Assistant light (JSON schema) state, retained
//	<base>/<id>/light/set               Home Assistant light (JSON schema) commands
//	<base>/<id>/segment/<n>/set         Home Assistant per-segment light commands
//
// Layout.Route parses inbound topics. Every other topic under the base is
// the bridge's own (Layout.Reserved). The package knows nothing of brokers
// or payloads.
package topic

import (
	"strconv"
	"strings"
)

// DefaultBase is the default MQTT_BASE_TOPIC.
const DefaultBase = "cloud2mqtt"

// Layout builds the bridge's topics under one base.
type Layout struct {
	Base string
}

// New returns the layout under base, trimmed of slashes; empty means DefaultBase.
func New(base string) Layout {
	base = strings.Trim(strings.TrimSpace(base), "/")
	if base == "" {
		base = DefaultBase
	}
	return Layout{Base: base}
}

// BridgeState is the bridge's online/offline topic (the will).
func (l Layout) BridgeState() string { return l.Base + "/bridge/state" }

// BridgeDevices is the retained device list topic.
func (l Layout) BridgeDevices() string { return l.Base + "/bridge/devices" }

// BridgeStats is the retained topic of the bridge's counters.
func (l Layout) BridgeStats() string { return l.Base + "/bridge/stats" }

// BridgeInfo is the retained topic of the settings in use, which Home
// Assistant's setting controls show as their state.
func (l Layout) BridgeInfo() string { return l.Base + "/bridge/info" }

// BridgeLogging is the topic the bridge's log lines go to, not retained.
func (l Layout) BridgeLogging() string { return l.Base + "/bridge/logging" }

// Bridge request actions (<base>/bridge/request/<action>). An action may
// have more than one level (ActionDeviceOptions), so subscribe with
// BridgeRequestFilter rather than BridgeRequest("+").
const (
	ActionRefresh       = "refresh"        // read the device list now
	ActionScenes        = "scenes"         // re-read one device's scene lists
	ActionHealth        = "health"         // the /healthz report
	ActionDevices       = "devices"        // the device list as data
	ActionReadAll       = "read_all"       // read every device now, within budget
	ActionRepublish     = "republish"      // publish discovery again
	ActionOptions       = "options"        // change the bridge's settings
	ActionDeviceOptions = "device/options" // change one device's settings
)

// BridgeRequest is the topic a request for action arrives on; "+" subscribes
// to the one-level actions only.
func (l Layout) BridgeRequest(action string) string { return l.Base + "/bridge/request/" + action }

// BridgeRequestFilter subscribes to every request, device/options included.
func (l Layout) BridgeRequestFilter() string { return l.BridgeRequest("#") }

// BridgeOptions is the request topic that changes the bridge's settings:
// {"options":{"poll_interval":"90s","log_level":"debug"}}.
func (l Layout) BridgeOptions() string { return l.BridgeRequest(ActionOptions) }

// BridgeDeviceOptions is the request topic that changes one device's
// settings: {"device":"<id>","options":{"poll_interval":"120s"}}.
func (l Layout) BridgeDeviceOptions() string { return l.BridgeRequest(ActionDeviceOptions) }

// BridgeResponse is the topic the answer to a known action goes to.
func (l Layout) BridgeResponse(action string) string { return l.Base + "/bridge/response/" + action }

// ActionUnknown names the response topic for every unknown action, so no
// client can make the bridge publish to a topic of its choosing.
const ActionUnknown = "unknown"

// BridgeResponseUnknown is where a request for an action the bridge does
// not know is answered (the action, shortened, in the payload).
func (l Layout) BridgeResponseUnknown() string { return l.BridgeResponse(ActionUnknown) }

// BridgeError carries rejections of commands for unknown ids, with the id
// in the payload, because the bridge makes no topic of an id it does not know.
func (l Layout) BridgeError() string { return l.Base + "/bridge/error" }

// State is a device's retained JSON state.
func (l Layout) State(id string) string { return l.Base + "/" + id + "/state" }

// Availability is a device's online/offline topic.
func (l Layout) Availability(id string) string { return l.Base + "/" + id + "/availability" }

// Set is a device's JSON command topic.
func (l Layout) Set(id string) string { return l.Base + "/" + id + "/set" }

// SetInstance is a device's plain-value command topic for one instance.
func (l Layout) SetInstance(id, instance string) string { return l.Set(id) + "/" + instance }

// Get asks for a confirming read.
func (l Layout) Get(id string) string { return l.Base + "/" + id + "/get" }

// Error carries rejected or failed commands.
func (l Layout) Error(id string) string { return l.Base + "/" + id + "/error" }

// Event carries device events.
func (l Layout) Event(id string) string { return l.Base + "/" + id + "/event" }

// Light is the Home Assistant light (JSON schema) state topic of a device.
func (l Layout) Light(id string) string { return l.Base + "/" + id + "/light" }

// LightSet is the Home Assistant light (JSON schema) command topic of a device.
func (l Layout) LightSet(id string) string { return l.Light(id) + "/set" }

// SegmentSet is the Home Assistant command topic of one segment's light.
func (l Layout) SegmentSet(id string, segment int) string {
	return l.Base + "/" + id + "/segment/" + strconv.Itoa(segment) + "/set"
}

// DeviceID forms a device's topic id from its SKU and device id, such as
// "h6072_aabbccddeeff0011". It depends only on how the cloud addresses the
// device, so it is stable across renames.
func DeviceID(sku, device string) string {
	clean := func(s string, keepDash bool) string {
		var b strings.Builder
		for _, r := range strings.ToLower(s) {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
				b.WriteRune(r)
			case keepDash && (r == '-' || r == '_'):
				b.WriteRune('-')
			}
		}
		return b.String()
	}
	s, d := clean(sku, true), clean(device, false)
	switch {
	case s == "" && d == "":
		return "device"
	case s == "":
		return d
	case d == "":
		return s
	}
	return s + "_" + d
}
