package poller

import (
	"maps"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock/clocktest"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/statedir"
)

// thermometer is a sensor with a temperature, a humidity and a switch.
func thermometer(id string) capability.Device {
	return capability.Device{SKU: "H5179", Device: id, Type: capability.DeviceThermometer, Capabilities: []capability.Capability{
		{Type: capability.TypeProperty, Instance: "sensorTemperature"},
		{Type: capability.TypeProperty, Instance: "sensorHumidity"},
		{Type: capability.TypeOnOff, Instance: capability.InstancePower, Parameters: &capability.Parameters{DataType: capability.DataEnum}},
	}}
}

// TestChangesBeyondASensorsPrecision: a reading that wanders within its
// sensor's precision is no change, however many reads it takes (the drift
// is measured from the value last counted, so a slow climb counts once it
// is far enough); any other value that differs is; an instance first seen
// is not.
func TestChangesBeyondASensorsPrecision(t *testing.T) {
	dev := thermometer("T1")
	var l learned
	for i, tc := range []struct {
		name    string
		values  map[string]any
		changed bool
	}{
		{"first read", map[string]any{"sensorTemperature": 21.3, "sensorHumidity": 45.0, capability.InstancePower: int64(1)}, false},
		{"a tenth up", map[string]any{"sensorTemperature": 21.4, "sensorHumidity": 45.0, capability.InstancePower: int64(1)}, false},
		{"another tenth, humidity a point", map[string]any{"sensorTemperature": 21.5, "sensorHumidity": 46.0, capability.InstancePower: int64(1)}, false},
		{"half a degree from the value counted", map[string]any{"sensorTemperature": 21.8, "sensorHumidity": 46.0, capability.InstancePower: int64(1)}, true},
		{"back a tenth", map[string]any{"sensorTemperature": 21.7, "sensorHumidity": 46.0, capability.InstancePower: int64(1)}, false},
		{"switched off", map[string]any{"sensorTemperature": 21.7, "sensorHumidity": 46.0, capability.InstancePower: int64(0)}, true},
		{"a new instance, the rest as before", map[string]any{"sensorTemperature": 21.7, capability.InstancePower: int64(0), "filterLifeTime": int64(80)}, false},
		{"a struct value differs", map[string]any{capability.InstancePower: int64(0), "filterLifeTime": int64(80), "colorRgb": map[string]any{"r": int64(1)}}, false},
		{"its member changes", map[string]any{capability.InstancePower: int64(0), "colorRgb": map[string]any{"r": int64(2)}}, true},
	} {
		if got, _ := l.compare(dev, maps.All(tc.values), nil); got != tc.changed {
			t.Errorf("read %d (%s): changed %v, want %v", i, tc.name, got, tc.changed)
		}
	}
}

// TestActivityFromReadsAndBeyond: a cloud read compared by the poller,
// then applied to the registry, is counted once (the registry's observer
// sees nothing new of it); a command's value, a LAN status read and a
// cloud event each count as a change seen otherwise.
func TestActivityFromReadsAndBeyond(t *testing.T) {
	clk := clocktest.NewFrozen(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	a := NewActivity(clk)
	reg := registry.NewOn(clk, zerolog.Nop(), a.Observer())
	d := dev("L1", false)
	k := d.Key()
	reg.SetDevices([]capability.Device{d})
	read := func(power, bright int) {
		st := mkState(d.SKU, d.Device, true, map[string]any{capability.InstancePower: power, capability.InstanceBrightness: bright})
		a.read(d, st.All(), clk.Now())
		reg.ApplyState(k, st, reg.Seq())
		clk.Advance(time.Minute)
	}
	read(1, 10)
	read(1, 20)
	read(1, 20)
	// Two reads compared: the first found a change over its minute, the
	// second none.
	l := a.devs[k]
	decay := math.Exp(-60 / activityTau)
	if math.Abs(l.changed-decay) > 1e-9 || math.Abs(l.busySpan-60*decay) > 1e-9 || math.Abs(l.stillSpan-60) > 1e-9 || l.other != 0 {
		t.Fatalf("after three reads: %+v, want one change over a minute, a minute unchanged, nothing else", *l)
	}
	counted := func() float64 { return a.devs[k].other }
	a.rate(k, clk.Now(), time.Minute) // brings the counts to now
	before := counted()
	changedBefore := a.devs[k].changed
	reg.SetOptimistic(k, capability.InstanceBrightness, int64(70)) // a command accepted
	reg.ApplyLocal(k, map[string]any{capability.InstancePower: int64(0)}, reg.Seq())
	a.Event(k)
	if got := counted() - before; got != 3 {
		t.Errorf("%.2f changes seen otherwise, want 3 (a command, the LAN, an event)", got)
	}
	read(0, 70) // what the command and the LAN said, confirmed: nothing new
	if got := a.devs[k].changed; got != changedBefore {
		t.Errorf("a read confirming what the registry had counted: %.4f reads with a change, want %.4f", got, changedBefore)
	}
}

// TestActivityAgesAndSurvivesARestart: what was learned fades with the
// half-life, is saved in the state directory and restored by a new poller
// decayed by the time it was away; a damaged count is left out.
func TestActivityAgesAndSurvivesARestart(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	clk := clocktest.NewFrozen(t0)
	a := NewActivity(clk)
	busy := dev("L1", false)
	for i := range 30 {
		st := mkState(busy.SKU, busy.Device, true, map[string]any{capability.InstanceBrightness: i + 1})
		a.read(busy, st.All(), t0.Add(time.Duration(i)*time.Minute))
	}
	at := t0.Add(29 * time.Minute)
	before := a.rate(busy.Key(), at, time.Minute)
	dir := statedir.Dir(filepath.Join(t.TempDir(), "state"))
	saveActivity(a, dir, at, zerolog.Nop())

	b := NewActivity(clk)
	restoreActivity(b, dir, at.Add(activityHalfLife), zerolog.Nop())
	l := b.devs[busy.Key()]
	if l == nil {
		t.Fatal("nothing restored")
	}
	if want := a.devs[busy.Key()].changed / 2; math.Abs(l.changed-want) > 1e-6 {
		t.Errorf("restored a half-life later: %.3f reads with a change, want half of %.3f", l.changed, 2*want)
	}
	if after := b.rate(busy.Key(), at.Add(activityHalfLife), time.Minute); after >= before {
		t.Errorf("rate %.4f a half-life after the restart, not below %.4f", after, before)
	}
	bad := savedActivity{Devices: []savedLearned{
		{SKU: "H6072", Device: "NaN", Changed: math.NaN()},
		{SKU: "H6072", Device: "neg", StillSpan: -1},
		{SKU: "H6072", Device: "long", Watched: 2 * activityTau},
		{SKU: "H6072", Device: "spans", BusySpan: 3 * activityTau},
		{SKU: "", Device: "nosku", Changed: 1},
		{SKU: "H6072", Device: "ok", Changed: 1, BusySpan: 60, StillSpan: 120, Watched: 180, At: t0},
	}}
	c := NewActivity(clk)
	if n := c.restore(bad, t0); n != 1 || c.devs[capability.Key{SKU: "H6072", Device: "ok"}] == nil {
		t.Errorf("restored %d of the damaged file's devices, want only the sound one", n)
	}
}
