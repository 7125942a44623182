package registry

import (
	"encoding/json"
	"errors"
	"maps"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/clock/clocktest"
	"cloud2mqtt/internal/cloud"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// call is one call the sink received, with what it saw then.
type call struct {
	kind      string // "devices", "state", "unreachable", "scenes"
	device    string
	values    map[string]any // a copy of View.Values
	changed   map[string]any // the values new or different since the sink's last state call of the device
	online    bool
	reachable bool
	all, add  []string
	rem       []string
	scenes    []string // names of the merged lightScene options
}

// sink records what the registry tells an observer.
type sink struct {
	mu    sync.Mutex
	calls []call
	last  map[string]map[string]any // each device's values at its last state call
}

// observer is the sink as the registry's observer.
func (s *sink) observer() Observer {
	return Observer{Devices: s.Devices, State: s.State, Unreachable: s.Unreachable, Scenes: s.Scenes}
}

func names(devs []capability.Device) []string {
	out := []string{}
	for _, d := range devs {
		out = append(out, d.Device)
	}
	return out
}

func (s *sink) add(c call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
}

func (s *sink) Devices(all, added, removed []capability.Device) {
	s.add(call{kind: "devices", all: names(all), add: names(added), rem: names(removed)})
}

func (s *sink) State(v View) {
	s.add(call{kind: "state", device: v.Device.Device, values: maps.Clone(v.Values), changed: s.changed(v), online: v.Online, reachable: v.Reachable})
}

// changed are the device's values that are new or different since the
// sink's last state call of it (every value at its first).
func (s *sink) changed(v View) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last = map[string]map[string]any{}
	}
	before := s.last[v.Device.Device]
	out := map[string]any{}
	for k, val := range v.Values {
		if old, ok := before[k]; !ok || !capability.Equal(old, val) {
			out[k] = val
		}
	}
	s.last[v.Device.Device] = maps.Clone(v.Values)
	return out
}

func (s *sink) Unreachable(v View, _ error) {
	s.add(call{kind: "unreachable", device: v.Device.Device, online: v.Online, reachable: v.Reachable})
}

func (s *sink) Scenes(v View) {
	var ns []string
	if c, ok := v.Device.Capability(capability.InstanceLightScene); ok && c.Parameters != nil {
		for _, o := range c.Parameters.Options {
			ns = append(ns, o.Name)
		}
	}
	s.add(call{kind: "scenes", device: v.Device.Device, scenes: ns})
}

func (s *sink) take() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.calls
	s.calls = nil
	return out
}

func light(id string) capability.Device {
	return capability.Device{SKU: "H6072", Device: id, Name: "lamp " + id, Capabilities: []capability.Capability{
		{Type: capability.TypeOnOff, Instance: capability.InstancePower},
		{Type: capability.TypeRange, Instance: capability.InstanceBrightness},
		{Type: capability.TypeColorSetting, Instance: capability.InstanceColorRGB},
		{Type: capability.TypeColorSetting, Instance: capability.InstanceColorTemperatureK},
		{Type: capability.TypeDynamicScene, Instance: capability.InstanceLightScene,
			Parameters: &capability.Parameters{DataType: capability.DataEnum, Options: []capability.Option{{Name: "Listed", Value: int64(1)}}}},
	}}
}

func state(online bool, values map[string]any) cloud.DeviceState {
	st := cloud.DeviceState{Capabilities: []cloud.CapabilityState{
		{Type: capability.TypeOnline, Instance: capability.InstanceOnline, State: cloud.StateValue{Value: online}}}}
	for k, v := range values {
		st.Capabilities = append(st.Capabilities, cloud.CapabilityState{Instance: k, State: cloud.StateValue{Value: capability.NormalizeValue(v)}})
	}
	return st
}

func newRegistry() (*Registry, *sink) { return newRegistryOn(nil) }

func newRegistryOn(clk clock.Clock) (*Registry, *sink) {
	s := &sink{}
	return NewOn(clk, zerolog.Nop(), s.observer()), s
}

func TestDeviceListChanges(t *testing.T) {
	r, s := newRegistry()
	a, b, c := light("A"), light("B"), light("C")
	ch := r.SetDevices([]capability.Device{a, b})
	if !ch.First || len(ch.Added) != 2 || len(ch.All) != 2 {
		t.Fatalf("first list: %+v", ch)
	}
	if got := s.take(); len(got) != 1 || got[0].kind != "devices" || len(got[0].add) != 2 {
		t.Fatalf("sink after the first list: %+v", got)
	}
	// The same list again: nothing to tell.
	if ch := r.SetDevices([]capability.Device{a, b}); ch.Any() {
		t.Errorf("an unchanged list reported %+v", ch)
	}
	if got := s.take(); len(got) != 0 {
		t.Errorf("an unchanged list reached the sink: %+v", got)
	}
	renamed := b
	renamed.Name = "hall"
	ch = r.SetDevices([]capability.Device{c, renamed})
	if len(ch.Added) != 1 || ch.Added[0].Device != "C" || len(ch.Removed) != 1 || ch.Removed[0].Device != "A" ||
		len(ch.Changed) != 1 || ch.Changed[0].Name != "hall" {
		t.Errorf("change: %+v", ch)
	}
	got := s.take()
	if len(got) != 1 || got[0].all[0] != "C" || got[0].all[1] != "B" || got[0].rem[0] != "A" {
		t.Errorf("sink: %+v, want the list in the cloud's order with A removed", got)
	}
	if d := r.Devices(); len(d) != 2 || d[1].Name != "hall" {
		t.Errorf("Devices() = %+v", d)
	}
	if _, ok := r.Device(a.Key()); ok {
		t.Error("a removed device is still known")
	}
}

func TestStateTellsOnlyWhatChanged(t *testing.T) {
	r, s := newRegistry()
	a := light("A")
	r.SetDevices([]capability.Device{a})
	s.take()
	r.ApplyState(a.Key(), state(true, map[string]any{"powerSwitch": 1, "brightness": 40}), r.Seq())
	got := s.take()
	if len(got) != 1 || len(got[0].changed) != 2 || !got[0].online || !got[0].reachable {
		t.Fatalf("first read: %+v, want every value", got)
	}
	r.ApplyState(a.Key(), state(true, map[string]any{"powerSwitch": 1, "brightness": 40}), r.Seq())
	if got := s.take(); len(got) != 0 {
		t.Errorf("an unchanged read reached the sink: %+v", got)
	}
	r.ApplyState(a.Key(), state(true, map[string]any{"powerSwitch": 1, "brightness": 41}), r.Seq())
	got = s.take()
	if len(got) != 1 || len(got[0].changed) != 1 || !capability.Equal(got[0].changed["brightness"], int64(41)) ||
		!capability.Equal(got[0].values["powerSwitch"], int64(1)) {
		t.Errorf("one change: %+v, want brightness alone changed and every value in the view", got)
	}
	// Offline: told with no value changed, and kept as historical values.
	r.ApplyState(a.Key(), state(false, nil), r.Seq())
	got = s.take()
	if len(got) != 1 || got[0].online || len(got[0].changed) != 0 || len(got[0].values) != 2 {
		t.Errorf("offline: %+v", got)
	}
	if st := r.Stats(); st.Offline != 1 || st.Online != 0 || st.Devices != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestUnreachableOnceUntilAReadWorks(t *testing.T) {
	r, s := newRegistry()
	a := light("A")
	r.SetDevices([]capability.Device{a})
	r.ApplyState(a.Key(), state(true, map[string]any{"powerSwitch": 1}), r.Seq())
	s.take()
	r.MarkUnreachable(a.Key(), errors.New("timeout"))
	r.MarkUnreachable(a.Key(), errors.New("timeout"))
	if got := s.take(); len(got) != 1 || got[0].kind != "unreachable" || got[0].reachable {
		t.Fatalf("unreachable twice: %+v, want one call", got)
	}
	if st := r.Stats(); st.Unreachable != 1 || st.Online != 0 {
		t.Errorf("stats %+v", st)
	}
	r.ApplyState(a.Key(), state(true, map[string]any{"powerSwitch": 1}), r.Seq())
	if got := s.take(); len(got) != 1 || !got[0].reachable || len(got[0].changed) != 0 {
		t.Errorf("reachable again: %+v, want a state call with nothing changed", got)
	}
}

// TestOptimisticValues: a command's value shows at once, a read sent
// before it cannot undo it, and a later read decides.
func TestOptimisticValues(t *testing.T) {
	r, s := newRegistry()
	a := light("A")
	r.SetDevices([]capability.Device{a})
	r.ApplyState(a.Key(), state(true, map[string]any{"powerSwitch": 0, "brightness": 40}), r.Seq())
	s.take()

	before := r.Seq() // a read sent before the command
	r.SetOptimistic(a.Key(), "powerSwitch", 1)
	if got := s.take(); len(got) != 1 || !capability.Equal(got[0].changed["powerSwitch"], int64(1)) {
		t.Fatalf("optimistic value: %+v", got)
	}
	r.ApplyState(a.Key(), state(true, map[string]any{"powerSwitch": 0, "brightness": 40}), before)
	if got := s.take(); len(got) != 0 {
		t.Errorf("a read sent before the command undid it: %+v", got)
	}
	// The confirming read, sent after: the device did not obey.
	r.ApplyState(a.Key(), state(true, map[string]any{"powerSwitch": 0, "brightness": 40}), r.Seq())
	got := s.take()
	if len(got) != 1 || len(got[0].changed) != 1 || !capability.Equal(got[0].changed["powerSwitch"], int64(0)) {
		t.Errorf("correction: %+v, want powerSwitch 0", got)
	}
	if v, _ := r.Value(a.Key(), "powerSwitch"); !capability.Equal(v, int64(0)) {
		t.Errorf("value %v after the correction", v)
	}
}

// TestColourEndsScenes: the device drops its scene when a colour shows,
// and reports a colour temperature of 0; the registry does the same.
func TestColourEndsScenes(t *testing.T) {
	r, s := newRegistry()
	a := light("A")
	r.SetDevices([]capability.Device{a})
	r.ApplyState(a.Key(), state(true, map[string]any{"lightScene": 1, capability.InstanceColorTemperatureK: 4000}), r.Seq())
	s.take()
	inFlight := r.Seq() // a read sent before the colour command
	r.SetOptimistic(a.Key(), capability.InstanceColorRGB, 0xff0000)
	got := s.take()
	if len(got) != 1 {
		t.Fatalf("sink: %+v", got)
	}
	v := got[0].values
	if _, ok := v["lightScene"]; ok || !capability.Equal(v[capability.InstanceColorTemperatureK], int64(0)) || !capability.Equal(v["colorRgb"], int64(0xff0000)) {
		t.Errorf("values after a colour: %v", v)
	}
	// The read in flight still shows the white; publishing it would switch
	// Home Assistant back to colour temperature mode.
	r.ApplyState(a.Key(), state(true, map[string]any{capability.InstanceColorRGB: 0xffffff, capability.InstanceColorTemperatureK: 4000}), inFlight)
	if got := s.take(); len(got) != 0 {
		t.Errorf("a read sent before the colour command changed %+v", got)
	}
	if v, _ := r.Value(a.Key(), capability.InstanceColorTemperatureK); !capability.Equal(v, int64(0)) {
		t.Errorf("colour temperature %v after a read sent before the colour, want 0", v)
	}
	r.SetOptimistic(a.Key(), capability.InstanceLightScene, 1)
	if v := s.take()[0].values; !capability.Equal(v["lightScene"], int64(1)) {
		t.Errorf("values after a scene: %v", v)
	}
}

func TestOptimisticBeforeAnyReadIsKeptQuietly(t *testing.T) {
	r, s := newRegistry()
	a := light("A")
	r.SetDevices([]capability.Device{a})
	s.take()
	r.SetOptimistic(a.Key(), "powerSwitch", 1)
	r.SetOptimistic(a.Key(), "brightness", "")
	if got := s.take(); len(got) != 0 {
		t.Errorf("nothing read yet, but the sink heard %+v", got)
	}
	if v, ok := r.Value(a.Key(), "powerSwitch"); !ok || !capability.Equal(v, int64(1)) {
		t.Errorf("value %v, %v", v, ok)
	}
	if _, ok := r.Value(a.Key(), "brightness"); ok {
		t.Error("an empty string was stored")
	}
}

func TestScenesMergedAndToldWhenChanged(t *testing.T) {
	r, s := newRegistry()
	a := light("A")
	r.SetDevices([]capability.Device{a})
	s.take()
	scenes := []capability.Option{{Name: "Sunrise", Value: int64(10)}, {Name: "listed", Value: int64(2)}}
	r.SetScenes(a.Key(), scenes, true, nil, false)
	got := s.take()
	if len(got) != 1 || len(got[0].scenes) != 2 || got[0].scenes[0] != "Listed" || got[0].scenes[1] != "Sunrise" {
		t.Fatalf("scenes: %+v, want the listed option then the endpoint's new one", got)
	}
	r.SetScenes(a.Key(), scenes, true, nil, false)
	if got := s.take(); len(got) != 0 {
		t.Errorf("unchanged scenes reached the sink: %+v", got)
	}
	// A failed fetch keeps the lists.
	r.SetScenes(a.Key(), nil, false, nil, false)
	if d, _ := r.Device(a.Key()); len(d.Capabilities[4].Parameters.Options) != 2 {
		t.Errorf("a failed fetch dropped the scenes: %+v", d.Capabilities[4])
	}
	// A new list keeps its merged scenes.
	renamed := a
	renamed.Name = "hall"
	r.SetDevices([]capability.Device{renamed})
	if d, _ := r.Device(a.Key()); d.Name != "hall" || len(d.Capabilities[4].Parameters.Options) != 2 {
		t.Errorf("after a new list: %+v", d)
	}
}

func TestOldestState(t *testing.T) {
	clk := clocktest.NewFrozen(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	r, _ := newRegistryOn(clk)
	a, b := light("A"), light("B")
	r.SetDevices([]capability.Device{a, b})
	clk.Advance(time.Minute)
	r.ApplyState(a.Key(), state(true, nil), r.Seq())
	clk.Advance(30 * time.Second)
	if got := r.Stats().OldestState; got != 90*time.Second {
		t.Errorf("oldest state %s, want 1m30s (B, never read, counts from its listing)", got)
	}
}

func TestUnknownDevicesAreIgnored(t *testing.T) {
	r, s := newRegistry()
	k := capability.Key{SKU: "H1", Device: "nope"}
	r.ApplyState(k, state(true, map[string]any{"powerSwitch": 1}), 0)
	r.MarkUnreachable(k, errors.New("x"))
	r.SetOptimistic(k, "powerSwitch", 1)
	r.SetScenes(k, nil, true, nil, true)
	if got := s.take(); len(got) != 0 {
		t.Errorf("sink heard of an unknown device: %+v", got)
	}
	if _, ok := r.Snapshot(k); ok {
		t.Error("Snapshot of an unknown device")
	}
}

// TestSaveAndRestore: what one run saves, the next restores before the
// cloud answers, and the sink publishes it as if the cloud had.
func TestSaveAndRestore(t *testing.T) {
	r, _ := newRegistry()
	a, b := light("A"), light("B")
	r.SetDevices([]capability.Device{a, b})
	r.ApplyState(a.Key(), state(true, map[string]any{"powerSwitch": 1, "musicMode": map[string]any{"musicMode": 3, "sensitivity": 50}}), r.Seq())
	r.SetScenes(a.Key(), []capability.Option{{Name: "Sunrise", Value: map[string]any{"id": 1, "paramId": 2}}}, true, nil, false)
	if !r.Unsaved() {
		t.Fatal("changes not noted as unsaved")
	}
	saved := r.Save()
	if r.Unsaved() {
		t.Error("still unsaved after Save")
	}
	// Through JSON, as the state directory keeps it.
	raw, err := json.Marshal(saved)
	if err != nil {
		t.Fatal(err)
	}
	var back Saved
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}

	r2, s2 := newRegistry()
	r2.Restore(back)
	got := s2.take()
	if len(got) < 3 || got[0].kind != "devices" || len(got[0].all) != 2 {
		t.Fatalf("sink after Restore: %+v, want the list, A's scenes and A's state", got)
	}
	var sawState, sawScenes bool
	for _, c := range got[1:] {
		switch c.kind {
		case "state":
			sawState = c.device == "A" && c.online && capability.Equal(c.values["powerSwitch"], int64(1)) &&
				capability.Equal(c.values["musicMode"], map[string]any{"musicMode": int64(3), "sensitivity": int64(50)})
		case "scenes":
			sawScenes = c.device == "A" && len(c.scenes) == 2
		}
	}
	if !sawState || !sawScenes {
		t.Errorf("restored calls %+v, want A's state and scenes as saved", got[1:])
	}
	if !r2.Listed() {
		t.Error("a restored list does not count as listed: commands would wait for the cloud")
	}
	select {
	case <-r2.FirstList():
	default:
		t.Error("FirstList not closed after Restore")
	}
	if r2.Unsaved() {
		t.Error("what was just restored is reported unsaved")
	}
	// The cloud's first answer replaces the restored values.
	r2.ApplyState(a.Key(), state(true, map[string]any{"powerSwitch": 0}), r2.Seq())
	if got := s2.take(); len(got) != 1 || !capability.Equal(got[0].changed["powerSwitch"], int64(0)) || len(got[0].changed) != 1 {
		t.Errorf("first cloud read after Restore: %+v, want only the changed value", got)
	}
	// The cloud's list wins over a restore that comes after it.
	r3, s3 := newRegistry()
	r3.SetDevices([]capability.Device{b})
	s3.take()
	r3.Restore(back)
	if got := s3.take(); len(got) != 0 || len(r3.Devices()) != 1 {
		t.Errorf("a restore after the cloud's list changed things: %+v", got)
	}
}

// firstListSink checks, when told of the device list, that those who wait
// for the first list have not been woken yet.
type firstListSink struct {
	sink
	reg       *Registry
	wokeEarly bool
}

func (s *firstListSink) Devices(all, added, removed []capability.Device) {
	select {
	case <-s.reg.FirstList():
		s.wokeEarly = true
	default:
	}
	s.sink.Devices(all, added, removed)
}

// TestFirstListWakesAfterTheSink: a command held at start is released only
// after the publishing side knows the devices, or it would be answered
// "unknown device".
func TestFirstListWakesAfterTheSink(t *testing.T) {
	s := &firstListSink{}
	o := s.observer()
	o.Devices = s.Devices
	r := New(zerolog.Nop(), o)
	s.reg = r
	r.SetDevices([]capability.Device{light("A")})
	if s.wokeEarly {
		t.Error("FirstList was closed before the sink was told of the devices: a held command would find no device")
	}
	select {
	case <-r.FirstList():
	default:
		t.Error("FirstList not closed after the first list")
	}
}

// sceneOptions is a scene list as a light's scene answer decodes it.
func sceneOptions(id int64) []capability.Option {
	return []capability.Option{
		{Name: "Sunrise", Value: map[string]any{"id": id, "paramId": int64(2)}},
		{Name: "Sunset", Value: map[string]any{"id": id + 1, "paramId": int64(3)}},
	}
}

// Lights of one model share one copy of their scene list, decoded once per
// light; a list with the same names and other values stays its own.
func TestEqualSceneListsShared(t *testing.T) {
	r, _ := newRegistry()
	a, b, c := light("A"), light("B"), light("C")
	r.SetDevices([]capability.Device{a, b, c})
	r.SetScenes(a.Key(), sceneOptions(1), true, nil, false)
	r.SetScenes(b.Key(), sceneOptions(1), true, sceneOptions(1), true)
	r.SetScenes(c.Key(), sceneOptions(7), true, nil, false)
	da, db, dc := r.devices[a.Key()], r.devices[b.Key()], r.devices[c.Key()]
	if da.light == nil || da.light != db.light || db.diy != da.light {
		t.Errorf("equal scene lists of two lights are held twice: %p %p %p", da.light, db.light, db.diy)
	}
	if dc.light == da.light {
		t.Error("a list with other scene ids was given another light's list")
	}
	d, _ := r.Device(c.Key())
	opts := d.Capabilities[4].Parameters.Options
	if len(opts) != 3 || opts[1].Name != "Sunrise" || opts[1].Value.(map[string]any)["id"] != int64(7) {
		t.Errorf("light C's merged scenes: %+v, want Listed then its own Sunrise (id 7) and Sunset", opts)
	}
}

// A scene list no device holds any more is forgotten.
func TestSceneListsForgetUnused(t *testing.T) {
	var s sceneLists
	s.intern([]capability.Option{{Name: "Aurora", Value: int64(1)}})
	s.intern(sceneOptions(1))
	held := s.intern(sceneOptions(2))
	runtime.GC()
	s.sweep()
	if n := len(s.byNames[hashNames(held.opts)]); len(s.byNames) != 1 || n != 1 || s.intern(sceneOptions(2)) != held {
		t.Errorf("after a collection %d name sets and %d lists of the held one's names are kept, want only the held list", len(s.byNames), n)
	}
	runtime.KeepAlive(held)
}
