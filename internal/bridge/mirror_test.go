package bridge

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/topic"
)

// TestDeviceListOfSeveralDevices: bridge/devices is one JSON array with
// every device in list order and its capabilities (the list is assembled
// device by device).
func TestDeviceListOfSeveralDevices(t *testing.T) {
	b, pub, _, _ := newTestBridge(t, true)
	plug := capability.Device{SKU: "H5080", Device: "AA:BB:CC:DD:EE:FF:00:02", Type: capability.DeviceSocket,
		Capabilities: []capability.Capability{{Type: capability.TypeOnOff, Instance: capability.InstancePower}}}
	bare := capability.Device{SKU: "H9999", Device: "AA:BB:CC:DD:EE:FF:00:03", Name: "Bare"}
	pub.take()
	b.Devices([]capability.Device{plug, lamp, bare}, []capability.Device{plug, bare}, nil)
	list := on(pub.take(), "c2m/bridge/devices")
	if len(list) != 1 {
		t.Fatalf("%d device list messages, want 1", len(list))
	}
	var devs []struct {
		ID           string                  `json:"id"`
		Name         string                  `json:"name"`
		Capabilities []capability.Capability `json:"capabilities"`
	}
	if err := json.Unmarshal([]byte(list[0].payload), &devs); err != nil {
		t.Fatalf("device list is not JSON: %v\n%s", err, list[0].payload)
	}
	var ids []string
	for _, d := range devs {
		ids = append(ids, d.ID)
	}
	want := []string{"h5080_aabbccddeeff0002", lampID, "h9999_aabbccddeeff0003"}
	if !slices.Equal(ids, want) {
		t.Fatalf("device list ids %v, want %v", ids, want)
	}
	if len(devs[0].Capabilities) != 1 || len(devs[1].Capabilities) != len(lamp.Capabilities) || devs[2].Capabilities == nil {
		t.Errorf("capabilities: plug %d, lamp %d (want %d), bare %v (want [])", len(devs[0].Capabilities),
			len(devs[1].Capabilities), len(lamp.Capabilities), devs[2].Capabilities)
	}
	if devs[2].Name != "Bare" || devs[0].Name != "H5080" {
		t.Errorf("names %q, %q: want the device's name, or its SKU when it has none", devs[2].Name, devs[0].Name)
	}
}

func TestDeviceListAndDiscoveryPublished(t *testing.T) {
	b, pub, _, _ := newTestBridge(t, true)
	_ = b
	msgs := pub.take()
	list := on(msgs, "c2m/bridge/devices")
	if len(list) != 1 || !list[0].retained {
		t.Fatalf("device list messages: %+v", list)
	}
	var devs []map[string]any
	if err := json.Unmarshal([]byte(list[0].payload), &devs); err != nil || len(devs) != 1 || devs[0]["id"] != lampID {
		t.Fatalf("device list payload %s (%v)", list[0].payload, err)
	}
	configs := 0
	for _, m := range msgs {
		if strings.HasPrefix(m.topic, "homeassistant/") {
			configs++
			if !m.retained || m.payload == "" {
				t.Errorf("config %s not retained or empty", m.topic)
			}
		}
	}
	if configs == 0 {
		t.Fatal("no discovery configs")
	}
	// The same list again publishes no config (nothing changed).
	b.Devices([]capability.Device{lamp}, nil, nil)
	for _, m := range pub.take() {
		if strings.HasPrefix(m.topic, "homeassistant/") {
			t.Errorf("unchanged device republished %s", m.topic)
		}
	}
}

func TestDiscoveryOffPublishesNoConfigs(t *testing.T) {
	_, pub, _, _ := newTestBridge(t, false)
	for _, m := range pub.take() {
		if strings.HasPrefix(m.topic, "homeassistant/") {
			t.Errorf("HA_DISCOVERY=false published %s", m.topic)
		}
	}
}

func TestStatePublishedOnlyWhenItChanges(t *testing.T) {
	b, pub, _, _ := newTestBridge(t, false)
	pub.take()
	b.State(lamp, true, map[string]any{"powerSwitch": int64(1), "brightness": int64(40)})
	msgs := pub.take()
	st := on(msgs, "c2m/"+lampID+"/state")
	if len(st) != 1 || st[0].payload != `{"online":true,"brightness":40,"powerSwitch":1}` || !st[0].retained {
		t.Fatalf("state: %+v", st)
	}
	if a := on(msgs, "c2m/"+lampID+"/availability"); len(a) != 1 || a[0].payload != "online" {
		t.Fatalf("availability: %+v", a)
	}
	b.State(lamp, true, map[string]any{"brightness": int64(40)})
	if msgs := pub.take(); len(msgs) != 0 {
		t.Errorf("an unchanged state published %+v", msgs)
	}
	b.State(lamp, false, nil)
	msgs = pub.take()
	if a := on(msgs, "c2m/"+lampID+"/availability"); len(a) != 1 || a[0].payload != "offline" {
		t.Errorf("offline device: %+v", msgs)
	}
	b.State(lamp, true, nil)
	b.Unreachable(lamp, errors.New("cloud: state: timeout"))
	msgs = pub.take()
	if a := on(msgs, "c2m/"+lampID+"/availability"); len(a) != 2 || a[1].payload != "offline" {
		t.Errorf("unreachable device: %+v", msgs)
	}
}

func TestRemovedDeviceClearsItsRetainedTopics(t *testing.T) {
	b, pub, _, _ := newTestBridge(t, true)
	b.State(lamp, true, map[string]any{"powerSwitch": int64(1)})
	before := pub.take()
	var configs []string
	for _, m := range before {
		if strings.HasPrefix(m.topic, "homeassistant/") {
			configs = append(configs, m.topic)
		}
	}
	b.Devices(nil, nil, []capability.Device{lamp})
	after := pub.take()
	cleared := map[string]bool{}
	for _, m := range after {
		if m.payload == "" && m.retained {
			cleared[m.topic] = true
		}
	}
	for _, c := range append(configs, "c2m/"+lampID+"/state", "c2m/"+lampID+"/availability") {
		if !cleared[c] {
			t.Errorf("%s not cleared", c)
		}
	}
	if l := on(after, "c2m/bridge/devices"); len(l) != 1 || l[0].payload != "[]" {
		t.Errorf("device list after removal: %+v", l)
	}
}

func TestBirthAndReconnectRepublish(t *testing.T) {
	b, pub, _, _ := newTestBridge(t, true)
	b.State(lamp, true, map[string]any{"powerSwitch": int64(1)})
	pub.take()
	b.Handle("homeassistant/status", []byte("offline"), false)
	if msgs := pub.take(); len(msgs) != 0 {
		t.Errorf("offline birth published %d messages", len(msgs))
	}
	for _, trigger := range []func(){
		func() { b.Handle("homeassistant/status", []byte("online"), false) },
		b.Connected,
	} {
		trigger()
		msgs := pub.take()
		configs := 0
		for _, m := range msgs {
			if strings.HasPrefix(m.topic, "homeassistant/") {
				configs++
			}
		}
		if configs == 0 || len(on(msgs, "c2m/"+lampID+"/state")) != 1 || len(on(msgs, "c2m/"+lampID+"/availability")) != 1 {
			t.Errorf("republish: %d configs, %d messages", configs, len(msgs))
		}
	}
}

func TestBridgeRequestsAnswer(t *testing.T) {
	b, pub, _, _ := newTestBridge(t, false)
	pub.take()
	b.Handle("c2m/bridge/request/refresh", []byte(`{"transaction":"a"}`), false)
	b.Handle("c2m/bridge/request/scenes", []byte(`{"transaction":"b","device":"`+lampID+`"}`), false)
	b.Handle("c2m/bridge/request/nope", nil, false)
	b.Handle("c2m/bridge/request/health", []byte(`not json`), false)
	msgs := pub.take()
	check := func(action, status, says string) {
		t.Helper()
		r := on(msgs, "c2m/bridge/response/"+action)
		if action == "nope" {
			r = on(msgs, "c2m/bridge/response/unknown") // never a topic the sender named
		}
		if len(r) != 1 {
			t.Fatalf("%s: %d responses", action, len(r))
		}
		var resp responseJSON
		if err := json.Unmarshal([]byte(r[0].payload), &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Status != status || !strings.Contains(resp.Error+r[0].payload, says) {
			t.Errorf("%s: %s, want %s saying %q", action, r[0].payload, status, says)
		}
	}
	check("refresh", "ok", `"transaction":"a"`)
	check("scenes", "error", "no scenes")
	check("nope", "error", `"action":"nope","error":"unknown action \"nope\"; known: device/options, devices, health, options, read_all, refresh, republish, scenes`)
	check("health", "error", "JSON object")
}

func TestEventsPublished(t *testing.T) {
	b, pub, _, _ := newTestBridge(t, false)
	pub.take()
	b.Event(lamp.SKU, lamp.Device, "lackWaterEvent", "lack", int64(1), "Lack of Water")
	b.Event("H0000", "unknown", "lackWaterEvent", "lack", int64(1), "")
	ev := on(pub.take(), "c2m/"+lampID+"/event")
	if len(ev) != 1 || ev[0].retained || !strings.Contains(ev[0].payload, `"event_type":"lack"`) {
		t.Errorf("event: %+v", ev)
	}
}

// TestConcurrentUpdatesLeaveTheNewestStateRetained: updates computed on
// many goroutines reach the broker in the order computed, so the last
// retained state is the one the bridge believes it published.
func TestConcurrentUpdatesLeaveTheNewestStateRetained(t *testing.T) {
	b, pub, _, _ := newTestBridge(t, true)
	for round := range 20 {
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b.State(lamp, true, map[string]any{"brightness": int64(1 + (round*16+i)%100)})
			}()
		}
		wg.Wait()
		msgs := pub.take()
		b.m.mu.Lock()
		e := b.m.devices[lampID]
		wantState, wantLight := string(e.stateJSON), string(e.lightJSON)
		b.m.mu.Unlock()
		if st := on(msgs, "c2m/"+lampID+"/state"); len(st) > 0 && st[len(st)-1].payload != wantState {
			t.Fatalf("round %d: last state published %s, the bridge believes %s", round, st[len(st)-1].payload, wantState)
		}
		if l := on(msgs, "c2m/"+lampID+"/light"); len(l) > 0 && l[len(l)-1].payload != wantLight {
			t.Fatalf("round %d: last light state published %s, the bridge believes %s", round, l[len(l)-1].payload, wantLight)
		}
	}
}

// failingPub refuses publishes while fail is set, as a full queue does.
type failingPub struct {
	fakePub
	fail bool
}

func (p *failingPub) Publish(t string, payload []byte, retained bool, q byte) error {
	p.mu.Lock()
	fail := p.fail
	p.mu.Unlock()
	if fail {
		return errors.New("mqtt: publish: queue full")
	}
	return p.fakePub.Publish(t, payload, retained, q)
}

// TestFailedPublishesAreRepublished: what could not be published (a full
// queue) is not taken as sent: the next stats tick republishes everything.
func TestFailedPublishesAreRepublished(t *testing.T) {
	pub := &failingPub{fail: true}
	l := topic.New("c2m")
	b := newTestBridgeWith(t, Options{Layout: l, DiscoveryEnabled: true, Discovery: discovery.Config{Layout: l}, Log: zerolog.Nop()}, pub, &fakeCmd{}, &fakeReader{})
	b.Devices([]capability.Device{lamp}, []capability.Device{lamp}, nil)
	b.State(lamp, true, map[string]any{"powerSwitch": int64(1)})
	if got := pub.take(); len(got) != 0 {
		t.Fatalf("published while failing: %d", len(got))
	}
	pub.mu.Lock()
	pub.fail = false
	pub.mu.Unlock()
	b.PublishStats(discovery.BridgeStats{})
	msgs := pub.take()
	configs := 0
	for _, m := range msgs {
		if strings.HasPrefix(m.topic, "homeassistant/") && strings.Contains(m.topic, lampID) {
			configs++
		}
	}
	if configs == 0 || len(on(msgs, "c2m/"+lampID+"/state")) != 1 || len(on(msgs, "c2m/bridge/devices")) == 0 {
		t.Errorf("after the failure: %d configs, %d messages", configs, len(msgs))
	}
	b.PublishStats(discovery.BridgeStats{})
	if got := pub.take(); len(got) > 0 {
		t.Errorf("republished again without a failure: %d messages", len(got))
	}
}

// TestCapabilityGoneEmptiesItsEntity: when a device's definition loses a
// capability, its entity's config is replaced by an empty retained one
// (Home Assistant removes the entity); the rest are not sent again.
func TestCapabilityGoneEmptiesItsEntity(t *testing.T) {
	b, pub, _, _ := newTestBridge(t, true)
	before := map[string]bool{}
	for _, m := range pub.take() {
		if strings.HasPrefix(m.topic, "homeassistant/") {
			before[m.topic] = true
		}
	}
	less := lamp
	less.Capabilities = nil
	for _, c := range lamp.Capabilities {
		if c.Instance != "sensorTemperature" {
			less.Capabilities = append(less.Capabilities, c)
		}
	}
	b.Devices([]capability.Device{less}, nil, nil)
	var emptied, other []string
	for _, m := range pub.take() {
		if !strings.HasPrefix(m.topic, "homeassistant/") {
			continue
		}
		if m.payload == "" && m.retained && before[m.topic] {
			emptied = append(emptied, m.topic)
		} else {
			other = append(other, m.topic)
		}
	}
	if len(emptied) != 1 || !strings.Contains(emptied[0], "sensorTemperature") {
		t.Errorf("emptied %v, want the temperature sensor's config", emptied)
	}
	if len(other) != 0 {
		t.Errorf("unchanged entities sent again: %v", other)
	}
}
