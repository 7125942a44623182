package bridge

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/testkit"
	"cloud2mqtt/internal/topic"
)

// slowCloud is a cloud whose every request takes until the benchmark ends,
// so that commands queue and coalesce in the scheduler as during a flood.
type slowCloud struct{}

func (slowCloud) ListDevices(ctx context.Context) ([]capability.Device, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (slowCloud) State(ctx context.Context, _, _ string) (cloud.DeviceState, error) {
	<-ctx.Done()
	return cloud.DeviceState{}, ctx.Err()
}
func (slowCloud) Scenes(ctx context.Context, _, _ string) (cloud.Scenes, error) {
	<-ctx.Done()
	return cloud.Scenes{}, ctx.Err()
}
func (slowCloud) DIYScenes(ctx context.Context, _, _ string) (cloud.Scenes, error) {
	<-ctx.Done()
	return cloud.Scenes{}, ctx.Err()
}
func (slowCloud) Control(ctx context.Context, _ cloud.ControlRequest) (cloud.ControlResult, error) {
	<-ctx.Done()
	return cloud.ControlResult{}, ctx.Err()
}

// floodLamps are n lamps of the test model with distinct ids.
func floodLamps(n int) []capability.Device {
	out := make([]capability.Device, n)
	for i := range out {
		d := lamp
		d.Device = fmt.Sprintf("AA:BB:CC:DD:EE:FF:%02X:%02X", i>>8, i&0xff)
		d.Name = "Lamp " + strconv.Itoa(i)
		out[i] = d
	}
	return out
}

// intakeBridge is a bridge over the real registry and scheduler (whose
// cloud never answers), with n lamps listed.
func intakeBridge(b *testing.B, n int) (*testBridge, []string) {
	sched := scheduler.New(slowCloud{}, scheduler.Config{}, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = sched.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	l := topic.New("c2m")
	m := NewMirror(Options{Layout: l, Discovery: discovery.Config{Layout: l, Version: "test"}, Log: zerolog.Nop()})
	m.pub = nullPub{}
	reg := registry.New(zerolog.Nop(), m.Observer())
	tb := &testBridge{Bridge: New(m, reg, &fakeReader{}, sched, nil), m: m, reg: reg, pub: nullPub{}}
	devs := floodLamps(n)
	tb.Devices(devs, devs, nil)
	ids := make([]string, n)
	for i, d := range devs {
		ids[i] = topic.DeviceID(d.SKU, d.Device)
	}
	return tb, ids
}

type nullPub struct{}

func (nullPub) Publish(string, []byte, bool, byte) error { return nil }

// BenchmarkIntake is the bridge's intake of a flood of commands: topic, payload,
// validation, and the scheduler's queue, where a new value replaces an unsent one
// (the cloud never answers here), over 13 devices. Run it with -cpu 1, the
// daemon's one P; ops/cpu-s is what a core sustains, counting the whole process.
func BenchmarkIntake(b *testing.B) {
	for _, bc := range []struct {
		name    string
		topic   func(id string) string
		payload func(i int) []byte
	}{
		{"set-instance", func(id string) string { return "c2m/" + id + "/set/brightness" },
			func(i int) []byte { return []byte(strconv.Itoa(1 + i%100)) }},
		{"set-object", func(id string) string { return "c2m/" + id + "/set" },
			func(i int) []byte { return []byte(`{"brightness":` + strconv.Itoa(1+i%100) + `}`) }},
		{"rejected", func(id string) string { return "c2m/" + id + "/set/brightness" },
			func(i int) []byte { return []byte(strconv.Itoa(1000 + i)) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tb, ids := intakeBridge(b, 13)
			topics := make([]string, len(ids))
			for i, id := range ids {
				topics[i] = bc.topic(id)
			}
			payloads := make([][]byte, 100)
			for i := range payloads {
				payloads[i] = bc.payload(i)
			}
			b.ReportAllocs()
			start := testkit.CPUTime(b)
			for i := 0; b.Loop(); i++ {
				tb.Handle(topics[i%len(topics)], payloads[i%len(payloads)], false)
			}
			testkit.ReportCPU(b, start)
		})
	}
}
