package bridge

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/topic"
)

// fakes: a publisher recording messages, a commander answering at once with
// a chosen error, and a reader recording calls.

type published struct {
	topic    string
	payload  string
	retained bool
}

type fakePub struct {
	mu   sync.Mutex
	msgs []published
}

func (p *fakePub) Publish(t string, payload []byte, retained bool, _ byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, published{t, string(payload), retained})
	return nil
}

func (p *fakePub) take() []published {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.msgs
	p.msgs = nil
	return out
}

func on(msgs []published, t string) []published {
	var out []published
	for _, m := range msgs {
		if m.topic == t {
			out = append(out, m)
		}
	}
	return out
}

type fakeCmd struct {
	mu   sync.Mutex
	reqs []cloud.ControlRequest
	err  error // the outcome of every command
}

func (c *fakeCmd) Control(req cloud.ControlRequest, report func(scheduler.CommandResult)) error {
	c.mu.Lock()
	c.reqs = append(c.reqs, req)
	err := c.err
	c.mu.Unlock()
	report(scheduler.CommandResult{Request: req, Err: err})
	return nil
}

type fakeReader struct {
	mu       sync.Mutex
	confirms int
	reads    int
}

func (r *fakeReader) Confirm(string, string) { r.mu.Lock(); r.confirms++; r.mu.Unlock() }
func (r *fakeReader) ReadNow(_, _ string, done func(error)) error {
	r.mu.Lock()
	r.reads++
	r.mu.Unlock()
	done(nil)
	return nil
}
func (r *fakeReader) RefreshDevices(done func(error)) error { done(nil); return nil }
func (r *fakeReader) RefreshScenes(_, _ string, done func(error)) error {
	done(errors.New("poller: no scenes"))
	return nil
}

var lamp = capability.Device{SKU: "H6072", Device: "AA:BB:CC:DD:EE:FF:00:01", Name: "Lamp", Type: capability.DeviceLight,
	Capabilities: []capability.Capability{
		{Type: capability.TypeOnOff, Instance: "powerSwitch", Parameters: &capability.Parameters{DataType: capability.DataEnum,
			Options: []capability.Option{{Name: "on", Value: int64(1)}, {Name: "off", Value: int64(0)}}}},
		{Type: capability.TypeRange, Instance: "brightness", Parameters: &capability.Parameters{DataType: capability.DataInteger,
			Range: &capability.Range{Min: 1, Max: 100, Precision: 1}}},
		{Type: capability.TypeColorSetting, Instance: "colorRgb", Parameters: &capability.Parameters{DataType: capability.DataInteger,
			Range: &capability.Range{Min: 0, Max: 16777215, Precision: 1}}},
		{Type: capability.TypeMusicSetting, Instance: "musicMode", Parameters: &capability.Parameters{DataType: capability.DataStruct,
			Fields: []capability.Field{
				{FieldName: "musicMode", DataType: capability.DataEnum, Required: true, Options: []capability.Option{{Name: "Energic", Value: int64(5)}, {Name: "Rhythm", Value: int64(3)}}},
				{FieldName: "sensitivity", DataType: capability.DataInteger, Required: true, Range: &capability.Range{Min: 0, Max: 100, Precision: 1}},
			}}},
		{Type: capability.TypeDynamicScene, Instance: "lightScene", Parameters: &capability.Parameters{DataType: capability.DataEnum}},
		{Type: capability.TypeProperty, Instance: "sensorTemperature"},
	}}

const lampID = "h6072_aabbccddeeff0001"

// testBridge is a bridge wired to a real registry and fakes, with the
// registry's inputs under the names the poller's outcomes had.
type testBridge struct {
	*Bridge
	m   *Mirror
	reg *registry.Registry
	pub Publisher
}

func newTestBridgeWith(t *testing.T, opt Options, pub Publisher, cmd Commander, rd Reader) *testBridge {
	t.Helper()
	m := NewMirror(opt)
	m.pub = pub // connected, without the republish of Connected
	reg := registry.New(zerolog.Nop(), m.Observer())
	return &testBridge{Bridge: New(m, reg, rd, cmd, nil), m: m, reg: reg, pub: pub}
}

func newTestBridge(t *testing.T, discoveryOn bool) (*testBridge, *fakePub, *fakeCmd, *fakeReader) {
	t.Helper()
	pub, cmd, rd := &fakePub{}, &fakeCmd{}, &fakeReader{}
	l := topic.New("c2m")
	b := newTestBridgeWith(t, Options{Layout: l, DiscoveryEnabled: discoveryOn,
		Discovery: discovery.Config{Layout: l, Version: "test"}, Log: zerolog.Nop()}, pub, cmd, rd)
	b.Devices([]capability.Device{lamp}, []capability.Device{lamp}, nil)
	return b, pub, cmd, rd
}

// Devices gives the registry a device list (added and removed are what the
// registry works out itself).
func (b *testBridge) Devices(all, _, _ []capability.Device) { b.reg.SetDevices(all) }

// State gives the registry a read of the device with these values.
func (b *testBridge) State(dev capability.Device, online bool, values map[string]any) {
	st := cloud.DeviceState{SKU: dev.SKU, Device: dev.Device, Capabilities: []cloud.CapabilityState{
		{Type: capability.TypeOnline, Instance: capability.InstanceOnline, State: cloud.StateValue{Value: online}}}}
	for inst, v := range values {
		st.Capabilities = append(st.Capabilities, cloud.CapabilityState{Instance: inst, State: cloud.StateValue{Value: capability.NormalizeValue(v)}})
	}
	b.reg.ApplyState(dev.Key(), st, b.reg.Seq())
}

func (b *testBridge) Unreachable(dev capability.Device, err error) {
	b.reg.MarkUnreachable(dev.Key(), err)
}

func (b *testBridge) Scenes(dev capability.Device, light, diy []capability.Option) {
	b.reg.SetScenes(dev.Key(), light, true, diy, true)
}

func (b *testBridge) Connected()                           { b.m.Connected(b.pub) }
func (b *testBridge) PublishStats(s discovery.BridgeStats) { b.m.PublishStats(s) }
func (b *testBridge) Event(sku, dev, inst, name string, v any, msg string) {
	b.m.Event(sku, dev, inst, name, v, msg)
}

func TestSetObjectIsAppliedInOrderWithFriendlyValues(t *testing.T) {
	b, pub, cmd, rd := newTestBridge(t, false)
	b.State(lamp, true, map[string]any{"powerSwitch": int64(0)})
	pub.take()
	b.Handle("c2m/"+lampID+"/set", []byte(`{"colorRgb":"#010203","powerSwitch":"ON","brightness":"55"}`), false)
	want := []struct {
		inst string
		val  any
	}{{"colorRgb", int64(0x010203)}, {"powerSwitch", int64(1)}, {"brightness", int64(55)}}
	if len(cmd.reqs) != len(want) {
		t.Fatalf("requests %+v", cmd.reqs)
	}
	for i, w := range want {
		if cmd.reqs[i].Instance != w.inst || !capability.Equal(cmd.reqs[i].Value, w.val) || cmd.reqs[i].SKU != lamp.SKU {
			t.Errorf("request %d: %+v, want %s=%v", i, cmd.reqs[i], w.inst, w.val)
		}
	}
	st := on(pub.take(), "c2m/"+lampID+"/state")
	if len(st) == 0 || st[len(st)-1].payload != `{"online":true,"brightness":55,"colorRgb":66051,"powerSwitch":1}` {
		t.Errorf("optimistic state: %+v", st)
	}
	if rd.confirms != 3 {
		t.Errorf("confirms %d; want 3", rd.confirms)
	}
	// The registry holds what the cloud accepted, for the next partial
	// command and the confirming read.
	for _, w := range want {
		if v, _ := b.reg.Value(lamp.Key(), w.inst); !capability.Equal(v, w.val) {
			t.Errorf("registry %s = %v, want %v", w.inst, v, w.val)
		}
	}
}

func TestRejectedCommandsNeverReachTheScheduler(t *testing.T) {
	b, pub, cmd, _ := newTestBridge(t, false)
	pub.take()
	cases := []struct {
		topic, payload string
		code           int
		says           string
	}{
		{"set/brightness", "101", 400, "out of range"},
		{"set/brightness", "bright", 400, "brightness"},
		{"set/sensorTemperature", "20", 404, "read-only"},
		{"set/nope", "1", 404, "powerSwitch, brightness"},
		{"set", "[1]", 400, "JSON object"},
		{"set", "{}", 400, "names no instance"},
		{"set", `{"brightness":10} trailing`, 400, "JSON object"},
		{"light/set", "{", 400, ""},
		{"segment/x/set", "{}", 400, "number"},
	}
	for _, c := range cases {
		b.Handle("c2m/"+lampID+"/"+c.topic, []byte(c.payload), false)
		errs := on(pub.take(), "c2m/"+lampID+"/error")
		if len(errs) != 1 {
			t.Errorf("%s %q: %d error messages", c.topic, c.payload, len(errs))
			continue
		}
		var e errorJSON
		if err := json.Unmarshal([]byte(errs[0].payload), &e); err != nil {
			t.Fatal(err)
		}
		if e.Code != c.code || !strings.Contains(e.Error, c.says) || errs[0].retained {
			t.Errorf("%s %q: %+v (retained %v), want code %d saying %q", c.topic, c.payload, e, errs[0].retained, c.code, c.says)
		}
	}
	if len(cmd.reqs) != 0 {
		t.Errorf("rejected commands reached the scheduler: %+v", cmd.reqs)
	}
	// An unknown device is answered with 404 on bridge/error and sends nothing.
	b.Handle("c2m/nobody/set/brightness", []byte("5"), false)
	if msgs := pub.take(); len(msgs) != 1 || msgs[0].topic != "c2m/bridge/error" || !strings.Contains(msgs[0].payload, `"device":"nobody"`) || len(cmd.reqs) != 0 {
		t.Errorf("unknown device: %+v", msgs)
	}
}

func TestFailedCommandIsReportedAndRolledBack(t *testing.T) {
	b, pub, cmd, rd := newTestBridge(t, false)
	b.State(lamp, true, map[string]any{"brightness": int64(10)})
	pub.take()
	cmd.err = &cloud.APIError{Kind: cloud.ErrRequest, Endpoint: "control", HTTPStatus: 200, Code: 400, Msg: "device offline"}
	b.Handle("c2m/"+lampID+"/set/brightness", []byte("90"), false)
	msgs := pub.take()
	errs := on(msgs, "c2m/"+lampID+"/error")
	if len(errs) != 1 || !strings.Contains(errs[0].payload, `"code":400`) {
		t.Fatalf("error: %+v", msgs)
	}
	st := on(msgs, "c2m/"+lampID+"/state")
	if len(st) != 1 || !strings.Contains(st[0].payload, `"brightness":10`) {
		t.Errorf("state not rolled back to the last known: %+v", st)
	}
	if rd.confirms != 0 {
		t.Errorf("a failed command asked for a confirming read")
	}
	// Superseded commands report nothing: the newer one does.
	cmd.err = capability.ErrSuperseded
	b.Handle("c2m/"+lampID+"/set/brightness", []byte("91"), false)
	if msgs := pub.take(); len(msgs) != 0 {
		t.Errorf("a superseded command published %+v", msgs)
	}
}

func TestPartialStructCommands(t *testing.T) {
	b, _, cmd, _ := newTestBridge(t, false)
	// Nothing known: the first partial command starts from a valid example.
	b.Handle("c2m/"+lampID+"/set/musicMode", []byte(`{"sensitivity":80}`), false)
	if len(cmd.reqs) != 1 {
		t.Fatalf("requests: %+v", cmd.reqs)
	}
	v := cmd.reqs[0].Value.(map[string]any)
	if !capability.Equal(v["sensitivity"], int64(80)) || v["musicMode"] == nil {
		t.Errorf("first partial command: %v", v)
	}
	// Then the last value sent is the base.
	b.Handle("c2m/"+lampID+"/set/musicMode", []byte(`{"musicMode":"rhythm"}`), false)
	v = cmd.reqs[1].Value.(map[string]any)
	if !capability.Equal(v["sensitivity"], int64(80)) || !capability.Equal(v["musicMode"], int64(3)) {
		t.Errorf("second partial command: %v", v)
	}
}

func TestScenesMergeIntoDefinitionsAndNames(t *testing.T) {
	synctest.Test(t, testScenesMergeIntoDefinitionsAndNames)
}

func testScenesMergeIntoDefinitionsAndNames(t *testing.T) {
	b, pub, cmd, _ := newTestBridge(t, true)
	pub.take()
	scenes := []capability.Option{{Name: "Sunrise", Value: map[string]any{"paramId": int64(1), "id": int64(2)}}}
	b.Scenes(lamp, scenes, nil)
	b.Scenes(lamp, scenes, []capability.Option{{Name: "Mine", Value: int64(7)}})
	msgs := pub.take()
	if l := on(msgs, "c2m/bridge/devices"); len(l) != 0 {
		t.Errorf("the device list went out with each scene update: %d times", len(l))
	}
	// Not with the next stats: the list went out with the device list
	// moments ago.
	b.PublishStats(discovery.BridgeStats{})
	if l := on(pub.take(), "c2m/bridge/devices"); len(l) != 0 {
		t.Errorf("the device list went out again right after the last time")
	}
	// A client asking for the list gets it with the scenes, and that does
	// not stand for the retained list.
	b.Handle("c2m/bridge/request/devices", nil, false)
	if l := on(pub.take(), "c2m/bridge/response/devices"); len(l) != 1 || !strings.Contains(l[0].payload, "Sunrise") {
		t.Errorf("devices request answered %+v; want the list with the scenes", l)
	}
	// Once, with the first stats deviceListEvery after the last time.
	time.Sleep(deviceListEvery)
	b.PublishStats(discovery.BridgeStats{})
	later := pub.take()
	if l := on(later, "c2m/bridge/devices"); len(l) != 1 || !strings.Contains(l[0].payload, "Sunrise") {
		t.Errorf("device list without the scenes: %+v", l)
	}
	b.PublishStats(discovery.BridgeStats{Version: "x"})
	if l := on(pub.take(), "c2m/bridge/devices"); len(l) != 0 {
		t.Errorf("an unchanged device list went out again")
	}
	changed := false
	for _, m := range msgs {
		if strings.HasPrefix(m.topic, "homeassistant/light/") && strings.Contains(m.payload, "Sunrise") {
			changed = true
		}
	}
	if !changed {
		t.Errorf("the light's effect list was not republished with the scene")
	}
	b.Handle("c2m/"+lampID+"/set/lightScene", []byte("sunrise"), false)
	if len(cmd.reqs) != 1 || !capability.Equal(cmd.reqs[0].Value, scenes[0].Value) {
		t.Errorf("scene by name: %+v", cmd.reqs)
	}
}
