package bridge_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/bridge"
	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/testkit"
	"cloud2mqtt/internal/topic"
)

// The fuzz targets' world: the recorded devices with their scenes, the
// topics they have, and a bridge wired to fakes.

const fuzzBase = "c2m"

var (
	fuzzOnce    sync.Once
	fuzzDevices []capability.Device
	fuzzScenes  []capability.Option
	fuzzErr     error
)

// fixtureDevices decodes the demo catalogue, every recorded device list and the
// temperature-unit devices with the real cloud client, so that the bridge sees
// exactly what it sees in production.
func fixtureDevices(t testing.TB) ([]capability.Device, []capability.Option) {
	t.Helper()
	lists := append(testkit.DeviceLists(t, "../../testdata"), testkit.ReadFixture(t, "testdata", "temperature_units.json"))
	fuzzOnce.Do(func() { fuzzDevices, fuzzScenes, fuzzErr = loadFixtureDevices(lists) })
	if fuzzErr != nil {
		t.Fatal(fuzzErr)
	}
	return fuzzDevices, fuzzScenes
}

func loadFixtureDevices(lists [][]byte) ([]capability.Device, []capability.Option, error) {
	sim := cloudsim.New(cloudsim.Options{APIKey: "fuzz-key"})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, cloud.PathDevices, nil)
	req.Header.Set(cloudsim.DefaultKeyHeader, "fuzz-key")
	sim.ServeHTTP(rec, req)
	bodies := append([][]byte{rec.Body.Bytes()}, lists...)
	var out []capability.Device
	seen := map[string]bool{}
	for _, body := range bodies {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		}))
		c, err := cloud.New(cloud.Config{BaseURL: srv.URL, APIKey: "fuzz-key", Logger: zerolog.Nop()})
		if err != nil {
			srv.Close()
			return nil, nil, err
		}
		devs, err := c.ListDevices(context.Background())
		srv.Close()
		if err != nil {
			return nil, nil, err
		}
		for _, d := range devs {
			if !seen[d.String()] {
				seen[d.String()] = true
				out = append(out, d)
			}
		}
	}
	b, err := os.ReadFile("../../testdata/scenes.json")
	if err != nil {
		return nil, nil, err
	}
	scenes, err := cloudsim.ParseSceneList(b)
	if err != nil {
		return nil, nil, err
	}
	return out, scenes, nil
}

// fuzzTopic is one topic a target can pick, and the device it belongs to.
type fuzzTopic struct {
	topic string
	dev   int // index in the devices; -1 for bridge topics
}

// topicsOf lists the topics of a kind: "device" (set, set/<instance> for
// every instance and one unknown, get), "light" (light/set and
// segment/<n>/set for every segment, one past them, and non-numbers) or
// "bridge" (every request action, an unknown one, homeassistant/status).
func topicsOf(kind string, devs []capability.Device) []fuzzTopic {
	l := topic.New(fuzzBase)
	var out []fuzzTopic
	switch kind {
	case "bridge":
		for _, a := range []string{"refresh", "scenes", "health", "devices", "restart", ""} {
			out = append(out, fuzzTopic{l.BridgeRequest(a), -1})
		}
		return append(out, fuzzTopic{"homeassistant/status", -1})
	}
	for i, d := range devs {
		id := topic.DeviceID(d.SKU, d.Device)
		switch kind {
		case "device":
			out = append(out, fuzzTopic{l.Set(id), i}, fuzzTopic{l.Get(id), i}, fuzzTopic{l.SetInstance(id, "noSuchInstance"), i})
			for _, c := range d.Capabilities {
				out = append(out, fuzzTopic{l.SetInstance(id, c.Instance), i})
			}
		case "light":
			out = append(out, fuzzTopic{l.LightSet(id), i})
			n := segmentCount(d)
			for s := range n + 1 {
				out = append(out, fuzzTopic{l.SegmentSet(id, s), i})
			}
			if n > 0 {
				for _, s := range []string{"-1", "x", "99999999999999999999", ""} {
					out = append(out, fuzzTopic{l.Base + "/" + id + "/segment/" + s + "/set", i})
				}
			}
		}
	}
	return out
}

// segmentCount is one more than the highest segment index a definition
// allows (0 without segment capabilities).
func segmentCount(d capability.Device) int {
	n := 0
	for _, c := range d.Capabilities {
		if c.Instance != capability.InstanceSegmentedColorRGB && c.Instance != capability.InstanceSegmentBrightness || c.Parameters == nil {
			continue
		}
		for _, f := range c.Parameters.Fields {
			if f.FieldName == "segment" && f.ElementRange != nil {
				n = max(n, f.ElementRange.Max+1)
			}
		}
	}
	return min(n, 64)
}

// fakes of the bridge's collaborators, recording what the bridge does.
type published struct {
	topic   string
	payload []byte
}

type fakePub struct{ msgs []published }

func (p *fakePub) Publish(t string, payload []byte, _ bool, _ byte) error {
	p.msgs = append(p.msgs, published{t, bytes.Clone(payload)})
	return nil
}

// fakeCmd is the scheduler: it keeps the requests and their reports, and
// refuses with ErrOverloaded when told to.
type fakeCmd struct {
	refuse  bool
	reqs    []cloud.ControlRequest
	reports []func(scheduler.CommandResult)
}

func (c *fakeCmd) Control(req cloud.ControlRequest, report func(scheduler.CommandResult)) error {
	if c.refuse {
		return scheduler.ErrOverloaded
	}
	c.reqs = append(c.reqs, req)
	c.reports = append(c.reports, report)
	return nil
}

// fakeReader is the poller: callbacks are kept and called after Handle, as
// the real one calls them later from its own goroutine.
type fakeReader struct{ done []func(error) }

func (r *fakeReader) Confirm(string, string) {}
func (r *fakeReader) ReadNow(_, _ string, done func(error)) error {
	r.done = append(r.done, done)
	return nil
}
func (r *fakeReader) RefreshDevices(done func(error)) error {
	r.done = append(r.done, done)
	return nil
}
func (r *fakeReader) RefreshScenes(_, _ string, done func(error)) error {
	r.done = append(r.done, done)
	return nil
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fuzzBridge is a bridge that knows every fixture device, with the scene
// fixture as every light's scene list, wired to fakes.
type fuzzBridge struct {
	b    *bridge.Bridge
	pub  *fakePub
	cmd  *fakeCmd
	read *fakeReader
	log  *syncBuf
	devs []capability.Device // as the bridge holds them: scenes merged
}

// fuzzWorld is what every input of a target shares: a Mirror that knows
// every fixture device, connected to a recording publisher. Building it
// (the device list's JSON, and discovery when on) is what costs, so it is
// built once per process and discovery setting, not once per input.
type fuzzWorld struct {
	mirror *bridge.Mirror
	pub    *fakePub
	log    *syncBuf
	devs   []capability.Device
}

var fuzzWorlds [2]struct {
	once sync.Once
	w    *fuzzWorld
}

func sharedWorld(t testing.TB, withDiscovery bool) *fuzzWorld {
	devs := withScenes(t)
	i := 0
	if withDiscovery {
		i = 1
	}
	fuzzWorlds[i].once.Do(func() {
		w := &fuzzWorld{pub: &fakePub{}, log: &syncBuf{}, devs: devs}
		layout := topic.New(fuzzBase)
		w.mirror = bridge.NewMirror(bridge.Options{
			Layout:           layout,
			Discovery:        discovery.Config{Prefix: "homeassistant", Layout: layout, Version: "fuzz", BridgeID: topic.DeviceID("bridge", fuzzBase)},
			DiscoveryEnabled: withDiscovery,
			Health: func() (bool, []string, any) {
				return false, []string{"not connected"}, map[string]any{"devices": len(devs)}
			},
			Log: zerolog.New(w.log),
		})
		registry.New(zerolog.New(w.log), w.mirror.Observer()).SetDevices(devs)
		w.mirror.Connected(w.pub)
		fuzzWorlds[i].w = w
	})
	return fuzzWorlds[i].w
}

// newFuzzBridge is a bridge for one input: the shared world's Mirror, with its
// own Bridge, registry and fakes, so that what one input leaves behind cannot
// change what the next does and a failing input fails alone. The scene lists are
// merged into the definitions beforehand, as Bridge.Scenes would.
func newFuzzBridge(t testing.TB, withDiscovery bool) *fuzzBridge {
	w := sharedWorld(t, withDiscovery)
	fb := &fuzzBridge{pub: w.pub, cmd: &fakeCmd{}, read: &fakeReader{}, log: w.log, devs: w.devs}
	reg := registry.New(zerolog.New(w.log)) // no observer: the shared Mirror already shows every device
	reg.SetDevices(w.devs)
	fb.b = bridge.New(w.mirror, reg, fb.read, fb.cmd, nil)
	fb.pub.msgs = nil
	fb.log.Reset()
	return fb
}

var (
	scenesOnce   sync.Once
	scenedDevice []capability.Device
)

// withScenes is the fixture devices with the scene fixture as every light's
// dynamic scenes and two DIY scenes, as the bridge holds them after the
// scene endpoints answered.
func withScenes(t testing.TB) []capability.Device {
	devs, scenes := fixtureDevices(t)
	scenesOnce.Do(func() {
		diy := []capability.Option{{Name: "My Fade", Value: int64(8000001)}, {Name: "My Party", Value: int64(8000002)}}
		for _, d := range devs {
			caps := make([]capability.Capability, len(d.Capabilities))
			for i, c := range d.Capabilities {
				var extra []capability.Option
				switch c.Instance {
				case capability.InstanceLightScene:
					extra = scenes
				case capability.InstanceDIYScene:
					extra = diy
				}
				if extra != nil && (c.Parameters == nil || len(c.Parameters.Options) == 0) {
					p := capability.Parameters{DataType: capability.DataEnum}
					if c.Parameters != nil {
						p = *c.Parameters
					}
					p.Options = extra
					c.Parameters = &p
				}
				caps[i] = c
			}
			d.Capabilities = caps
			scenedDevice = append(scenedDevice, d)
		}
	})
	return scenedDevice
}
