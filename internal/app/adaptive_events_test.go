package app_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/events"
	"cloud2mqtt/internal/mqtttest"
	"cloud2mqtt/internal/topic"
)

// TestCloudEventsReadADeviceMoreOften: a humidifier whose state never
// differs from read to read, but which reports an event at the vendor's
// event broker (CLOUD_EVENTS_URL) every 10 s, is read more often than the
// plain interval, and bridge/devices says it changes often; three lights
// beside it that never change are quiet. The events travel as the live
// service pushes them: the simulator's payload, published on the account's
// topic of a broker the daemon subscribes to with the API key.
func TestCloudEventsReadADeviceMoreOften(t *testing.T) {
	t.Parallel()
	cat := eventsHousehold(t, "H7142", "H6008")
	pushes := mqtttest.Start(t)
	h := startHarness(t, harnessOptions{
		env:     map[string]string{"POLL_INTERVAL": "60s", "CLOUD_EVENTS_URL": pushes.URL()},
		sim:     cloudsim.Options{Catalogue: cat},
		noStart: true,
	})
	devs := h.sim.Devices()
	humidifier := devs[0]
	// Its humidity reading, fixed: its reads find nothing new.
	if err := h.sim.SetValue(humidifier.Device, "sensorHumidity", int64(45)); err != nil {
		t.Fatal(err)
	}
	h.start()
	ids := h.ids()
	availability(h.watch, wait, "online", ids...)
	waitLog(t, h, "subscribed to cloud events")

	cloudSide := newFilteredWatcher(t, pushes.URL(), "vendor-"+strings.ReplaceAll(t.Name(), "/", "-"), "unused/#")
	remove := h.sim.OnEvent(func(ev cloudsim.Event) {
		tok := cloudSide.c.Publish(events.Topic(testKey), 1, false, ev.Payload)
		if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Errorf("push the event: %v", tok.Error())
		}
	})
	defer remove()

	eventTopic := "cloud2mqtt/" + ids[0] + "/event"
	start := h.clock.Now()
	for range 60 { // ten minutes on the clock
		h.idle(time.Now().Add(wait), "the daemon idle before an event")
		before := h.watch.seen(eventTopic)
		if _, err := h.sim.RaiseEvent(humidifier.Device, "lackWaterEvent", ""); err != nil {
			t.Fatal(err)
		}
		h.watch.until(wait, "the event on "+eventTopic, func() bool { return h.watch.seen(eventTopic) > before })
		h.clock.Advance(10 * time.Second)
	}
	want := map[string]string{ids[0]: "changes often", ids[1]: "quiet", ids[2]: "quiet", ids[3]: "quiet"}
	h.jumpUntil(wait, time.Second, "bridge/devices saying the humidifier changes often and the lights are quiet", func() bool {
		return pollsAre(devicesPolls(h), want)
	})
	// Its reads in the last five minutes of events, against the lights'
	// and the plain interval's five.
	reads := map[string]int{}
	for _, q := range h.sim.Requests() {
		if q.Endpoint == cloud.EndpointState && !q.Time.Before(start.Add(5*time.Minute)) && q.Time.Before(start.Add(10*time.Minute)) {
			reads[topic.DeviceID(q.SKU, q.Device)]++
		}
	}
	for _, id := range ids[1:] {
		if reads[ids[0]] <= 5 || reads[ids[0]] <= reads[id] {
			t.Errorf("state reads from minute 5 to 10 of the events: the humidifier %d, the light %s %d; want the humidifier more than the plain interval's 5 and more than each light", reads[ids[0]], id, reads[id])
		}
	}
}

// eventsHousehold is a catalogue of the demo's first device of the first
// SKU, then three of the second (ids made unique).
func eventsHousehold(t *testing.T, first, rest string) *cloudsim.Catalogue {
	t.Helper()
	raw := map[string]json.RawMessage{}
	for _, d := range cloudsim.DemoCatalogue().Devices {
		if _, ok := raw[d.SKU]; !ok {
			raw[d.SKU] = d.Raw
		}
	}
	list := []json.RawMessage{raw[first]}
	for i := range 3 {
		var d map[string]any
		if err := json.Unmarshal(raw[rest], &d); err != nil {
			t.Fatal(err)
		}
		d["device"] = "5A:00:00:00:C0:FF:EE:0" + string(rune('1'+i))
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, b)
	}
	b, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := cloudsim.ParseCatalogue(b)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// waitLog waits until the daemon's log has a line with msg.
func waitLog(t *testing.T, h *harness, msg string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !strings.Contains(h.logs.String(), msg) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for the log line %q", wait, msg)
		}
		time.Sleep(10 * time.Millisecond) // polling the log, bounded by the deadline
	}
}
