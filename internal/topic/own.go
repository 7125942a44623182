package topic

// The bridge's own topics: only the bridge publishes under the base, except
// on the command topics, and it watches its availability topics so another
// client's overwrite does not stand.

import "strings"

// Reserved is the filter of the topics only the bridge may publish to,
// except those of Inbound; the embedded broker and the mosquitto ACL
// enforce it.
func (l Layout) Reserved() string { return l.Base + "/#" }

// Watched lists the bridge's retained availability topics, which it watches
// to correct another client's overwrite; Home Assistant would show a wrong
// value until they next change, which is rarely.
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
