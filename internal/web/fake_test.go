package web

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"cloud2mqtt/internal/capability"
)

// fakeSource is a Source whose figures a test sets.
type fakeSource struct {
	mu       sync.Mutex
	reads    int // calls of Devices and Budget
	devices  []DeviceDetail
	budget   Budget
	problems *ProblemLog
}

var t0 = time.Date(2026, 11, 25, 14, 30, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func newFakeSource() *fakeSource { return newFakeSourceAt(t0) }

// newFakeSourceAt is the fake account as seen at t0.
func newFakeSourceAt(t0 time.Time) *fakeSource {
	onOff := capability.Capability{Type: "devices.capabilities.on_off", Instance: "powerSwitch",
		Parameters: &capability.Parameters{DataType: "ENUM", Options: []capability.Option{{Name: "on", Value: 1}, {Name: "off", Value: 0}}}}
	bright := capability.Capability{Type: "devices.capabilities.range", Instance: "brightness",
		Parameters: &capability.Parameters{DataType: "INTEGER", Unit: "unit.percent", Range: &capability.Range{Min: 1, Max: 100, Precision: 1}}}
	temp := capability.Capability{Type: "devices.capabilities.property", Instance: "sensorTemperature"}
	f := &fakeSource{problems: NewProblemLog(10, func() time.Time { return t0 })}
	f.devices = []DeviceDetail{
		{Device: Device{ID: "hall_light", Name: "Hall light", Model: "H6008", Type: "devices.types.light", Status: StatusOnline,
			Path: "cloud", LastRead: ptr(t0.Add(-12 * time.Second)), PollInterval: Duration(time.Minute)},
			Values: map[string]any{"powerSwitch": int64(1), "brightness": int64(80)}, Capabilities: []capability.Capability{onOff, bright}},
		{Device: Device{ID: "kitchen_strip", Name: "Kitchen strip", Model: "H619A", Type: "devices.types.light", Status: StatusOffline,
			Path: "cloud", LastRead: ptr(t0.Add(-5 * time.Minute)), PollInterval: Duration(4 * time.Minute), LastError: "cloud: device offline"},
			Values: map[string]any{"powerSwitch": int64(0)}, Capabilities: []capability.Capability{onOff}},
		{Device: Device{ID: "bedroom_sensor", Name: "Bedroom thermometer", Model: "H5179", Type: "devices.types.thermometer", Status: StatusOnline,
			Path: "cloud", LastRead: ptr(t0.Add(-40 * time.Second)), PollInterval: Duration(2 * time.Minute), OwnInterval: true},
			Values: map[string]any{"sensorTemperature": 21.5}, Capabilities: []capability.Capability{temp}},
		{Device: Device{ID: "garden_plug", Name: "Garden plug", Model: "H5080", Type: "devices.types.socket", Status: StatusUnknown,
			Path: "cloud", Disabled: true, PollInterval: Duration(time.Minute)},
			Capabilities: []capability.Capability{onOff}},
	}
	f.budget = Budget{RequestsToday: 6234, DailyLimit: 10000, RateLimited: 2, Last429: ptr(t0.Add(-90 * time.Minute)),
		QueueDepth: 3, InFlight: 1, PollInterval: Duration(time.Minute),
		Buckets: []Bucket{{Name: "device list", Tokens: 9, Capacity: 10}, {Name: "control (account)", Tokens: 7.5, Capacity: 10},
			{Name: "state (fewest of any device)", Tokens: 28, Capacity: 30}, {Name: "scenes (fewest of any device)", Tokens: 2, Capacity: 10}}}
	f.problems.Add(Problem{Time: t0.Add(-10 * time.Minute), Level: "warning", Message: "read failed", Fields: map[string]any{"device": "kitchen_strip", "error": "cloud: device offline"}})
	f.problems.Add(Problem{Time: t0.Add(-2 * time.Minute), Level: "error", Message: "rate limited", Fields: map[string]any{"status": float64(429)}})
	return f
}

// richDevice is a device whose values a person reads with the help of
// its definition: a colour, a colour temperature, temperatures, modes by
// name, a level in percent.
func richDevice(at time.Time) DeviceDetail {
	enum := func(names ...string) []capability.Option {
		var out []capability.Option
		for i, n := range names {
			out = append(out, capability.Option{Name: n, Value: int64(i + 1)})
		}
		return out
	}
	caps := []capability.Capability{
		{Type: capability.TypeOnOff, Instance: "powerSwitch", Parameters: &capability.Parameters{DataType: "ENUM",
			Options: []capability.Option{{Name: "on", Value: int64(1)}, {Name: "off", Value: int64(0)}}}},
		{Type: capability.TypeRange, Instance: "brightness", Parameters: &capability.Parameters{DataType: "INTEGER", Unit: "unit.percent",
			Range: &capability.Range{Min: 1, Max: 100, Precision: 1}}},
		{Type: capability.TypeColorSetting, Instance: "colorRgb", Parameters: &capability.Parameters{DataType: "INTEGER",
			Range: &capability.Range{Min: 0, Max: 16777215, Precision: 1}}},
		{Type: capability.TypeColorSetting, Instance: "colorTemperatureK", Parameters: &capability.Parameters{DataType: "INTEGER",
			Range: &capability.Range{Min: 2700, Max: 6500, Precision: 1}}},
		{Type: capability.TypeMode, Instance: "fanSpeed", Parameters: &capability.Parameters{DataType: "ENUM", Options: enum("Low", "Medium", "High")}},
		{Type: capability.TypeWorkMode, Instance: "workMode", Parameters: &capability.Parameters{DataType: "STRUCT", Fields: []capability.Field{
			{FieldName: "workMode", DataType: "ENUM", Options: []capability.Option{{Name: "gearMode", Value: int64(1)}, {Name: "Sleep", Value: int64(5)}}},
			{FieldName: "modeValue", DataType: "ENUM", Options: []capability.Option{{Name: "gearMode", Options: enum("Low", "Medium", "High")},
				{Name: "Sleep", DefaultValue: int64(0)}}}}}},
		{Type: capability.TypeTemperature, Instance: "targetTemperature", Parameters: &capability.Parameters{DataType: "STRUCT", Fields: []capability.Field{
			{FieldName: "autoStop", DataType: "ENUM", Options: []capability.Option{{Name: "Auto Stop", Value: int64(1)}, {Name: "Maintain", Value: int64(0)}}},
			{FieldName: "temperature", DataType: "INTEGER", Range: &capability.Range{Min: 5, Max: 30, Precision: 1}},
			{FieldName: "unit", DataType: "ENUM", DefaultValue: "Celsius", Options: []capability.Option{{Name: "Celsius", Value: "Celsius"}, {Name: "Fahrenheit", Value: "Fahrenheit"}}}}}},
		{Type: capability.TypeProperty, Instance: "sensorTemperature"},
	}
	return DeviceDetail{Device: Device{ID: "office_heater", Name: "Office heater", Model: "H7133", Type: "devices.types.heater", Status: StatusOnline,
		Path: "cloud", LastRead: ptr(at.Add(-20 * time.Second)), PollInterval: Duration(time.Minute)},
		Values: map[string]any{"powerSwitch": int64(1), "brightness": int64(80), "colorRgb": int64(16746496), "colorTemperatureK": int64(2700),
			"fanSpeed": int64(2), "workMode": map[string]any{"workMode": int64(1), "modeValue": int64(3)},
			"targetTemperature": map[string]any{"autoStop": int64(0), "temperature": int64(22), "unit": "Celsius"},
			"sensorTemperature": 21.5, "online": true},
		Capabilities: caps}
}

func (f *fakeSource) Devices() []Device {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	out := make([]Device, len(f.devices))
	for i, d := range f.devices {
		out[i] = d.Device
	}
	return out
}

func (f *fakeSource) Device(id string) (DeviceDetail, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range f.devices {
		if d.ID == id {
			d.Values = maps.Clone(d.Values)
			return d, true
		}
	}
	return DeviceDetail{}, false
}

func (f *fakeSource) Budget() Budget {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	b := f.budget
	b.Buckets = slices.Clone(b.Buckets)
	return b
}

func (f *fakeSource) Problems() []Problem { return f.problems.Problems() }

// update changes a device under the lock.
func (f *fakeSource) update(id string, change func(*DeviceDetail)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.devices {
		if f.devices[i].ID == id {
			change(&f.devices[i])
			return
		}
	}
	panic("no device " + id)
}

func (f *fakeSource) setBudget(change func(*Budget)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(&f.budget)
}

func (f *fakeSource) remove(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.devices = slices.DeleteFunc(f.devices, func(d DeviceDetail) bool { return d.ID == id })
}

// fakeActions records the actions and refuses unknown devices, as the app
// must.
type fakeActions struct {
	src   *fakeSource
	mu    sync.Mutex
	calls []string
}

func (a *fakeActions) record(id, call string) error {
	if _, ok := a.src.Device(id); id != "" && !ok {
		return fmt.Errorf("bridge: device %q: %w", id, ErrUnknownDevice)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, call)
	return nil
}

func (a *fakeActions) ReadNow(id string) error { return a.record(id, "read "+id) }
func (a *fakeActions) SetEnabled(id string, on bool) error {
	return a.record(id, fmt.Sprintf("enabled %s %v", id, on))
}
func (a *fakeActions) SetPollInterval(id, iv string) error {
	if iv != "" {
		if d, err := time.ParseDuration(iv); err != nil || d < 2*time.Second {
			return fmt.Errorf("bridge: device option poll_interval=%q is not a duration of 2s or more", iv)
		}
	}
	return a.record(id, fmt.Sprintf("interval %s %q", id, iv))
}
func (a *fakeActions) RefreshDevices() error     { return a.record("", "refresh") }
func (a *fakeActions) RepublishDiscovery() error { return a.record("", "republish") }

func (a *fakeActions) log() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.calls)
}

func (f *fakeSource) readCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}
