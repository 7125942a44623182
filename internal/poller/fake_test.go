package poller

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// call is one request the fake scheduler accepted.
type call struct {
	kind   string // "state", "list", "scenes", "diy"
	prio   scheduler.Priority
	device string
	at     time.Time
}

// fakeScheduler records every request with its instant and answers it from
// another goroutine after latency, like the real scheduler.
type fakeScheduler struct {
	mu      sync.Mutex
	calls   []call
	latency time.Duration

	list    []capability.Device
	listErr []error // consumed one per list request before list is answered

	// state answers a read of a device; nil: online with power on.
	state  func(device string, n int) (cloud.DeviceState, error)
	nState map[string]int

	scenes map[string][]capability.Option // by device: light scenes
	diy    map[string][]capability.Option
	reject error           // returned by every submission while set
	hold   *scheduler.Hold // Held's answer for every device while set
	quota  scheduler.Quota // Quota's answer
}

func (f *fakeScheduler) Quota() scheduler.Quota {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.quota
}

func (f *fakeScheduler) Held(sku, device string) (scheduler.Hold, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hold == nil {
		return scheduler.Hold{}, false
	}
	return *f.hold, true
}

func newFake(devs ...capability.Device) *fakeScheduler {
	return &fakeScheduler{list: devs, nState: map[string]int{}, scenes: map[string][]capability.Option{}, diy: map[string][]capability.Option{}}
}

// answer is called with f.mu held.
func (f *fakeScheduler) answer(report func()) {
	latency := f.latency
	go func() {
		if latency > 0 {
			time.Sleep(latency)
		}
		report()
	}()
}

func (f *fakeScheduler) State(sku, device string, p scheduler.Priority, report func(cloud.DeviceState, error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reject != nil {
		return f.reject
	}
	f.calls = append(f.calls, call{"state", p, device, time.Now()})
	n := f.nState[device]
	f.nState[device]++
	var st cloud.DeviceState
	var err error
	if f.state != nil {
		st, err = f.state(device, n)
	} else {
		st = mkState(sku, device, true, map[string]any{capability.InstancePower: 1})
	}
	f.answer(func() { report(st, err) })
	return nil
}

func (f *fakeScheduler) ListDevices(report func([]capability.Device, error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reject != nil {
		return f.reject
	}
	f.calls = append(f.calls, call{kind: "list", prio: scheduler.PriorityRefresh, at: time.Now()})
	if len(f.listErr) > 0 {
		err := f.listErr[0]
		f.listErr = f.listErr[1:]
		f.answer(func() { report(nil, err) })
		return nil
	}
	list := append([]capability.Device(nil), f.list...)
	f.answer(func() { report(list, nil) })
	return nil
}

func (f *fakeScheduler) Scenes(sku, device string, report func(cloud.Scenes, error)) error {
	return f.sceneCall("scenes", sku, device, f.scenes, report)
}

func (f *fakeScheduler) DIYScenes(sku, device string, report func(cloud.Scenes, error)) error {
	return f.sceneCall("diy", sku, device, f.diy, report)
}

func (f *fakeScheduler) sceneCall(kind, sku, device string, src map[string][]capability.Option, report func(cloud.Scenes, error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reject != nil {
		return f.reject
	}
	f.calls = append(f.calls, call{kind, scheduler.PriorityRefresh, device, time.Now()})
	sc := cloud.Scenes{SKU: sku, Device: device, Capabilities: []capability.Capability{{
		Type: capability.TypeDynamicScene, Instance: capability.InstanceLightScene,
		Parameters: &capability.Parameters{DataType: capability.DataEnum, Options: append([]capability.Option(nil), src[device]...)},
	}}}
	f.answer(func() { report(sc, nil) })
	return nil
}

func (f *fakeScheduler) setList(devs ...capability.Device) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = devs
}

func (f *fakeScheduler) setState(fn func(device string, n int) (cloud.DeviceState, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state = fn
}

// reads returns the state reads of device (every device if ""), in order.
func (f *fakeScheduler) reads(device string) []call {
	return f.filter(func(c call) bool { return c.kind == "state" && (device == "" || c.device == device) })
}

func (f *fakeScheduler) filter(keep func(call) bool) []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []call
	for _, c := range f.calls {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeScheduler) count(kind string) int {
	return len(f.filter(func(c call) bool { return c.kind == kind }))
}

// event is one call the registry's sink received.
type event struct {
	kind          string // "devices", "state", "unreachable", "scenes"
	device        string
	online        bool
	changed       map[string]any // values new or different since the device's last state event
	all, add, rem []string
	light, diy    int
	err           error
	at            time.Time
}

type fakeConsumer struct {
	mu     sync.Mutex
	events []event
	last   map[string]map[string]any // each device's values at its last state event
}

// observer is the consumer as the registry's observer.
func (c *fakeConsumer) observer() registry.Observer {
	return registry.Observer{Devices: c.Devices, State: c.State, Unreachable: c.Unreachable, Scenes: c.Scenes}
}

func ids(devs []capability.Device) []string {
	out := []string{}
	for _, d := range devs {
		out = append(out, d.Device)
	}
	return out
}

func (c *fakeConsumer) add(e event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.at = time.Now()
	c.events = append(c.events, e)
}

func (c *fakeConsumer) Devices(all, added, removed []capability.Device) {
	c.add(event{kind: "devices", all: ids(all), add: ids(added), rem: ids(removed)})
}

func (c *fakeConsumer) State(v registry.View) {
	c.add(event{kind: "state", device: v.Device.Device, online: v.Online, changed: c.changed(v)})
}

// changed are the device's values that are new or different since its
// last state event (every value at its first).
func (c *fakeConsumer) changed(v registry.View) map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = map[string]map[string]any{}
	}
	before := c.last[v.Device.Device]
	out := map[string]any{}
	for k, val := range v.Values {
		if old, ok := before[k]; !ok || !capability.Equal(old, val) {
			out[k] = val
		}
	}
	c.last[v.Device.Device] = maps.Clone(v.Values)
	return out
}

func (c *fakeConsumer) Unreachable(v registry.View, err error) {
	c.add(event{kind: "unreachable", device: v.Device.Device, err: err})
}

func (c *fakeConsumer) Scenes(v registry.View) {
	light, diy := sceneOptions(v.Device)
	c.add(event{kind: "scenes", device: v.Device.Device, light: len(light), diy: len(diy)})
}

// sceneOptions are the options of the device's scene capabilities.
func sceneOptions(d capability.Device) (light, diy []capability.Option) {
	if c, ok := d.Capability(capability.InstanceLightScene); ok && c.Parameters != nil {
		light = c.Parameters.Options
	}
	if c, ok := d.Capability(capability.InstanceDIYScene); ok && c.Parameters != nil {
		diy = c.Parameters.Options
	}
	return light, diy
}

func (c *fakeConsumer) of(kind, device string) []event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []event
	for _, e := range c.events {
		if e.kind == kind && (device == "" || e.device == device) {
			out = append(out, e)
		}
	}
	return out
}

// dev returns a light with power and brightness, and the scene capabilities
// when scenes is true.
func dev(id string, scenes bool) capability.Device {
	d := capability.Device{SKU: "H6072", Device: id, Name: "lamp " + id, Type: capability.DeviceLight, Capabilities: []capability.Capability{
		{Type: capability.TypeOnOff, Instance: capability.InstancePower, Parameters: &capability.Parameters{DataType: capability.DataEnum}},
		{Type: capability.TypeRange, Instance: capability.InstanceBrightness, Parameters: &capability.Parameters{DataType: capability.DataInteger, Range: &capability.Range{Min: 1, Max: 100}}},
	}}
	if scenes {
		d.Capabilities = append(d.Capabilities,
			capability.Capability{Type: capability.TypeDynamicScene, Instance: capability.InstanceLightScene, Parameters: &capability.Parameters{DataType: capability.DataEnum}},
			capability.Capability{Type: capability.TypeDynamicScene, Instance: capability.InstanceDIYScene, Parameters: &capability.Parameters{DataType: capability.DataEnum}},
		)
	}
	return d
}

func devs(n int) []capability.Device {
	out := make([]capability.Device, n)
	for i := range out {
		out[i] = dev(fmt.Sprintf("D%02d", i), false)
	}
	return out
}

// mkState builds a state answer; values are normalised.
func mkState(sku, device string, online bool, values map[string]any) cloud.DeviceState {
	st := cloud.DeviceState{SKU: sku, Device: device, Capabilities: []cloud.CapabilityState{
		{Type: capability.TypeOnline, Instance: capability.InstanceOnline, State: cloud.StateValue{Value: online}},
	}}
	for k, v := range values {
		st.Capabilities = append(st.Capabilities, cloud.CapabilityState{Type: capability.TypeRange, Instance: k, State: cloud.StateValue{Value: capability.NormalizeValue(v)}})
	}
	return st
}

// errDevice is a failed read the cloud answered (a 5xx): the device's
// failure, backed off.
var errDevice error = &cloud.APIError{Kind: cloud.ErrTransient, Endpoint: cloud.EndpointState, HTTPStatus: 502, Msg: "fake: device did not answer"}

// logBuffer collects the poller's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) contains(s string) bool { return strings.Contains(l.String(), s) }

// harness runs a poller in the test's bubble; stop ends it and waits.
type harness struct {
	p    *Poller
	reg  *registry.Registry
	f    *fakeScheduler
	c    *fakeConsumer
	logs *logBuffer
	t0   time.Time
	stop func()
}

func start(t *testing.T, f *fakeScheduler, cfg Config) *harness {
	t.Helper()
	c := &fakeConsumer{}
	logs := &logBuffer{}
	reg := registry.New(zerolog.New(logs), c.observer())
	p := New(f, reg, cfg, zerolog.New(logs))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	h := &harness{p: p, reg: reg, f: f, c: c, logs: logs, t0: time.Now()}
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(h.stop)
	return h
}

// outcome records a done callback's call for the test goroutine.
type outcome struct {
	mu    sync.Mutex
	calls int
	err   error
	at    time.Time
}

func (o *outcome) done(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	o.err, o.at = err, time.Now()
}

// get returns when done was last called and with what; once is false
// unless it was called exactly once.
func (o *outcome) get() (at time.Time, once bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.at, o.calls == 1, o.err
}

// The real scheduler satisfies the poller's interface of it.
var _ Scheduler = (*scheduler.Scheduler)(nil)

// snapshot is the registry's values of a device, whether it was online at
// the last read, and whether a read succeeded.
func (h *harness) snapshot(sku, device string) (values map[string]any, online, known bool) {
	v, ok := h.reg.Snapshot(capability.Key{SKU: sku, Device: device})
	if !ok {
		return nil, false, false
	}
	return v.Values, v.Online, v.Read
}

// setOptimistic records command values in the registry, as the bridge does.
func (h *harness) setOptimistic(sku, device string, values map[string]any) {
	for inst, v := range values {
		h.reg.SetOptimistic(capability.Key{SKU: sku, Device: device}, inst, v)
	}
}

// scenes are the registry's scene lists of a device.
func (h *harness) scenes(sku, device string) (light, diy []capability.Option) {
	d, _ := h.reg.Device(capability.Key{SKU: sku, Device: device})
	return sceneOptions(d)
}
