package topic

// The bridge's own topics: everything under the base but the command
// topics (Inbound) is published by the bridge alone, and the retained
// topics that say whether the bridge and each device are there are watched
// by it, so that another client's overwrite does not stand.

import "strings"

// Reserved is the filter of the topics only the bridge may publish to,
// except those of Inbound, where users, Home Assistant and flows send
// commands and requests: the embedded broker's rule and the mosquitto ACL's
// (deploy/mosquitto).
func (l Layout) Reserved() string { return l.Base + "/#" }

// Watched lists the filters of the bridge's own retained topics it
// subscribes to, to publish the truth again when another client overwrote
// one: its state and every device's availability, which Home Assistant
// shows until they change again (rarely, unlike a device's state).
func (l Layout) Watched() []string {
	return []string{l.BridgeState(), l.Base + "/+/availability"}
}

// AvailabilityID is the device id of an <id>/availability topic; ok is
// false for any other topic.
func (l Layout) AvailabilityID(t string) (id string, ok bool) {
	r, ok := strings.CutPrefix(t, l.Base+"/")
	if !ok {
		return "", false
	}
	id, ok = strings.CutSuffix(r, "/availability")
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}
