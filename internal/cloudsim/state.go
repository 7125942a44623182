package cloudsim

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
)

// simDevice is a device of the simulated account: its definition and state.
// Every field is guarded by Sim.mu.
type simDevice struct {
	dev capability.Device
	raw json.RawMessage // the device-list JSON; nil means marshal dev

	online bool
	// values holds the last value of every controllable instance (scenes
	// included, though the state endpoint never reports them).
	values map[string]any
	// frozen holds the property readings taken when the device went offline:
	// an offline device's values are historical.
	frozen map[string]any
	// overrides are property readings fixed by SetValue; they do not drift.
	overrides map[string]any
}

// unqueryable reports whether the state endpoint answers "" for the
// capability: the live service never reports the active scene, segment
// settings or music mode, and says nothing about types it does not know.
func unqueryable(c capability.Capability) bool {
	switch c.Type {
	case capability.TypeDynamicScene, capability.TypeDIYColorSetting, capability.TypeSegmentColor, capability.TypeMusicSetting:
		return true
	}
	return !capability.KnownCapabilityType(c.Type)
}

// newSimDevice gives a device its initial state: online, powered on or off
// (alternating through the catalogue, so both show up), and for every other
// controllable capability the definition's example value.
func newSimDevice(d capability.Device, raw json.RawMessage, index int) *simDevice {
	sd := &simDevice{dev: d, raw: raw, online: true, values: map[string]any{}}
	for _, c := range d.Capabilities {
		if !c.Controllable() {
			continue
		}
		if c.Instance == capability.InstancePower {
			sd.values[c.Instance] = int64(1 - index%2)
			continue
		}
		if v, ok := capability.Example(c); ok {
			sd.values[c.Instance] = v
		}
	}
	return sd
}

// capability finds the device's capability with that instance, and for a
// control its type must match too (after normalising the spelling).
func (sd *simDevice) capability(typ, instance string) (capability.Capability, bool) {
	c, ok := sd.dev.Capability(instance)
	if !ok {
		return capability.Capability{}, false
	}
	if typ != "" && capability.NormalizeType(typ) != c.Type {
		return capability.Capability{}, false
	}
	return c, true
}

// stateAt builds the state answer: online first, then every capability but
// events in list order.
func (s *Sim) stateAt(sd *simDevice, now time.Time) cloud.DeviceState {
	st := cloud.DeviceState{SKU: sd.dev.SKU, Device: sd.dev.Device}
	st.Capabilities = append(st.Capabilities, cloud.CapabilityState{
		Type: capability.TypeOnline, Instance: capability.InstanceOnline, State: cloud.StateValue{Value: sd.online},
	})
	for _, c := range sd.dev.Capabilities {
		if !c.Readable() || c.Type == capability.TypeOnline {
			continue
		}
		var v any = ""
		switch {
		case c.Type == capability.TypeProperty:
			v = s.reading(sd, c.Instance, now)
		case unqueryable(c):
		default:
			if stored, ok := sd.values[c.Instance]; ok {
				v = clone(stored)
			}
		}
		st.Capabilities = append(st.Capabilities, cloud.CapabilityState{
			Type: c.Type, Instance: c.Instance, State: cloud.StateValue{Value: v},
		})
	}
	return st
}

// reading is a property's value: fixed by SetValue, frozen while offline,
// else drifting.
func (s *Sim) reading(sd *simDevice, instance string, now time.Time) any {
	if v, ok := sd.overrides[instance]; ok {
		return clone(v)
	}
	if v, ok := sd.frozen[instance]; ok {
		return clone(v)
	}
	return s.drift(sd.dev.Device, instance, now)
}

// freeze records the current property readings, for a device going offline.
func (s *Sim) freeze(sd *simDevice, now time.Time) {
	sd.frozen = map[string]any{}
	for _, c := range sd.dev.Capabilities {
		if c.Type == capability.TypeProperty {
			sd.frozen[c.Instance] = s.drift(sd.dev.Device, c.Instance, now)
		}
	}
}

// driftShape is how one reading wanders: a base, a slow sine of amplitude
// amp with its own period and phase, rounded to decimals places.
type driftShape struct {
	base, amp, min, max float64
	decimals            int
}

var driftShapes = map[string]driftShape{
	"sensorTemperature":          {base: 21.5, amp: 1.5, min: -40, max: 80, decimals: 1},
	"sensorHumidity":             {base: 45, amp: 6, min: 0, max: 100, decimals: 1},
	"carbonDioxideConcentration": {base: 620, amp: 180, min: 350, max: 5000},
	"pm25":                       {base: 12, amp: 9, min: 0, max: 999},
	"humidity":                   {base: 50, amp: 5, min: 0, max: 100},
}

// drift is the reading of a property at now, deterministic given the seed,
// device, instance and time since start.
func (s *Sim) drift(device, instance string, now time.Time) any {
	elapsed := now.Sub(s.start)
	if elapsed < 0 {
		elapsed = 0
	}
	switch instance {
	case "filterLifeTime":
		left := 87 - int64(elapsed/(24*time.Hour))
		return max(left, 0)
	case "airQuality":
		pm := s.drift(device, "pm25", now).(int64)
		switch {
		case pm <= 12:
			return int64(1)
		case pm <= 35:
			return int64(2)
		case pm <= 55:
			return int64(3)
		}
		return int64(4)
	}
	shape, ok := driftShapes[instance]
	if !ok {
		return int64(0)
	}
	h := fnv.New64a()
	h.Write([]byte(device + "\x00" + instance))
	r := rand.New(rand.NewPCG(s.seed, h.Sum64()))
	period := time.Duration(15+r.IntN(30)) * time.Minute
	phase := r.Float64() * 2 * math.Pi
	offset := (r.Float64() - 0.5) * shape.amp // devices differ a little
	x := shape.base + offset + shape.amp*math.Sin(2*math.Pi*elapsed.Seconds()/period.Seconds()+phase)
	x = math.Max(shape.min, math.Min(shape.max, x))
	if shape.decimals == 0 {
		return int64(math.Round(x))
	}
	p := math.Pow(10, float64(shape.decimals))
	return capability.NormalizeValue(math.Round(x*p) / p)
}

// merge is the stored value after a control: a struct value's members are
// laid over the previous ones, anything else replaces it.
func merge(old, v any) any {
	om, ok1 := old.(map[string]any)
	nm, ok2 := v.(map[string]any)
	if !ok1 || !ok2 {
		return clone(v)
	}
	out := clone(om).(map[string]any)
	for k, e := range nm {
		out[k] = clone(e)
	}
	return out
}

// clone deep-copies a normalised value.
func clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = clone(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = clone(e)
		}
		return out
	}
	return v
}

// zeroAfter sets what the live cloud reports as 0 once instance is set,
// such as the colour temperature of a light showing a colour.
func (sd *simDevice) zeroAfter(instance string) {
	_, zero := capability.Effects(sd.dev, instance)
	for _, z := range zero {
		sd.values[z] = int64(0)
	}
}
