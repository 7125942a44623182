package bridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	"cloud2mqtt/internal/topic"
)

// The fuzz targets feed arbitrary payloads to every command topic of every
// device of the demo catalogue and of the recorded device lists in testdata/, on
// a bridge wired to fakes (no broker, no scheduler, no poller). Beyond "no
// panic" (Handle recovers a panic and logs "bug:", which fails the target)
// they check what a user relies on:
//   - a command either reaches the scheduler or is answered on <id>/error,
//     with an error text and the code 400, 404 or 503;
//   - every control request that reaches the scheduler names the topic's
//     device and passes capability.Validate for its capability;
//   - every bridge request is answered exactly once on its response topic.
//
// The seed corpus is in testdata/fuzz; the in-code seeds give each topic a
// valid and a broken payload.

const fuzzBase = "c2m"

var (
	fuzzOnce    sync.Once
	fuzzDevices []capability.Device
	fuzzScenes  []capability.Option
	fuzzErr     error
)

// fixtureDevices decodes the demo catalogue and every shared device-list
// fixture with the real cloud client (served from a loopback test server),
// so the bridge sees exactly what it sees in production.
func fixtureDevices(t testing.TB) ([]capability.Device, []capability.Option) {
	t.Helper()
	fuzzOnce.Do(func() { fuzzDevices, fuzzScenes, fuzzErr = loadFixtureDevices() })
	if fuzzErr != nil {
		t.Fatal(fuzzErr)
	}
	return fuzzDevices, fuzzScenes
}

func loadFixtureDevices() ([]capability.Device, []capability.Option, error) {
	files, err := filepath.Glob("../../testdata/list_devices*.json")
	if err != nil || len(files) == 0 {
		return nil, nil, fmt.Errorf("no recorded device lists testdata/list_devices*.json (%v)", err)
	}
	var bodies [][]byte
	sim := cloudsim.New(cloudsim.Options{APIKey: "fuzz-key"})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, cloudsim.PathDevices, nil)
	req.Header.Set(cloudsim.DefaultKeyHeader, "fuzz-key")
	sim.ServeHTTP(rec, req)
	bodies = append(bodies, rec.Body.Bytes())
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		bodies = append(bodies, b)
	}
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

// newFuzzBridge builds a fresh bridge for every input, so that a failing
// input fails alone too. The scene lists are merged into the definitions
// beforehand (as Bridge.Scenes would), which keeps a build at about a
// millisecond; discovery, needed only by the Home Assistant status topic,
// costs more and is on only when asked for.
func newFuzzBridge(t testing.TB, withDiscovery bool) *fuzzBridge {
	devs := withScenes(t)
	fb := &fuzzBridge{pub: &fakePub{}, cmd: &fakeCmd{}, read: &fakeReader{}, log: &syncBuf{}, devs: devs}
	layout := topic.New(fuzzBase)
	mirror := bridge.NewMirror(bridge.Options{
		Layout:           layout,
		Discovery:        discovery.Config{Prefix: "homeassistant", Layout: layout, Version: "fuzz", BridgeID: topic.DeviceID("bridge", fuzzBase)},
		DiscoveryEnabled: withDiscovery,
		Health: func() (bool, []string, any) {
			return false, []string{"not connected"}, map[string]any{"devices": len(devs)}
		},
		Log: zerolog.New(fb.log),
	})
	reg := registry.New(mirror, zerolog.New(fb.log))
	fb.b = bridge.New(mirror, reg, fb.read, fb.cmd)
	mirror.Connected(fb.pub)
	reg.SetDevices(devs)
	fb.pub.msgs = nil
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

// fuzzMode is what the fakes do with a command: bit 0 makes the scheduler
// refuse it (overloaded); once queued, bit 1 makes the cloud refuse it
// (400), else bit 2 has it held back after the cloud refused the key, else
// bit 3 has it not sent at shutdown, else bit 4 has a newer command
// supersede it; otherwise it succeeds.
type fuzzMode uint8

// failed reports whether the mode makes a queued command fail (and so be
// answered on <id>/error).
func (m fuzzMode) failed() bool { return m&(2|4|8) != 0 }

func (m fuzzMode) result(req cloud.ControlRequest) scheduler.CommandResult {
	r := scheduler.CommandResult{Request: req, Attempts: 1}
	switch {
	case m&2 != 0:
		r.Err = &cloud.APIError{Kind: cloud.ErrRequest, Endpoint: "control", SKU: req.SKU, Device: req.Device,
			Instance: req.Instance, HTTPStatus: 200, Code: 400, Msg: "parameter value out of range"}
	case m&4 != 0:
		r.Err, r.Attempts = scheduler.ErrAuthHoldoff, 0
	case m&8 != 0:
		r.Err, r.Attempts = scheduler.ErrNotSent, 0
	case m&16 != 0:
		r.Err, r.Attempts = scheduler.ErrSuperseded, 0
	}
	return r
}

// deliver handles one message, then lets the fakes report, and checks what
// every message must satisfy. It returns the messages published and the
// control requests queued.
func (fb *fuzzBridge) deliver(t *testing.T, tp fuzzTopic, payload []byte, mode fuzzMode) ([]published, []cloud.ControlRequest) {
	t.Helper()
	fb.pub.msgs, fb.cmd.reqs, fb.cmd.reports, fb.read.done = nil, nil, nil, nil
	fb.cmd.refuse = mode&1 != 0
	fb.b.Handle(tp.topic, payload)
	reqs := fb.cmd.reqs
	for i, report := range fb.cmd.reports {
		report(mode.result(reqs[i]))
	}
	for _, done := range fb.read.done {
		done(nil)
	}
	if logs := fb.log.String(); strings.Contains(logs, "bug:") {
		t.Fatalf("%s %q: the handler panicked:\n%s", tp.topic, payload, logs)
	}
	for _, m := range fb.pub.msgs {
		if strings.HasSuffix(m.topic, "/error") {
			checkErrorMessage(t, tp, payload, m)
		}
	}
	if tp.dev >= 0 {
		dev := fb.devs[tp.dev]
		for _, r := range reqs {
			checkControl(t, tp, payload, dev, r)
		}
	}
	return fb.pub.msgs, reqs
}

// checkErrorMessage: an <id>/error payload is a JSON object with an error
// text and a code a client can act on.
func checkErrorMessage(t *testing.T, tp fuzzTopic, payload []byte, m published) {
	t.Helper()
	var e struct {
		Instance *string `json:"instance"`
		Error    string  `json:"error"`
		Code     int     `json:"code"`
	}
	if err := json.Unmarshal(m.payload, &e); err != nil {
		t.Fatalf("%s %q: %s is not JSON: %v: %s", tp.topic, payload, m.topic, err, m.payload)
	}
	if strings.TrimSpace(e.Error) == "" || e.Instance == nil {
		t.Fatalf("%s %q: error message without error text or instance: %s", tp.topic, payload, m.payload)
	}
	switch e.Code {
	case 400, 404, 503: // a bad value, an unknown instance, the bridge busy or stopping
	case 401: // held back: the cloud refused the API key
	default:
		t.Fatalf("%s %q: error code %d; want 400, 401, 404 or 503: %s", tp.topic, payload, e.Code, m.payload)
	}
	if !strings.HasPrefix(m.topic, fuzzBase+"/") || strings.Contains(m.topic, "+") || strings.Contains(m.topic, "#") {
		t.Fatalf("%s %q: error published on %q", tp.topic, payload, m.topic)
	}
}

// checkControl: a request that reaches the scheduler names the device, has
// the capability's type and a value the cloud accepts.
func checkControl(t *testing.T, tp fuzzTopic, payload []byte, dev capability.Device, r cloud.ControlRequest) {
	t.Helper()
	if r.SKU != dev.SKU || r.Device != dev.Device {
		t.Fatalf("%s %q: control request for %s/%s, not %s", tp.topic, payload, r.SKU, r.Device, dev)
	}
	c, ok := dev.Capability(r.Instance)
	if !ok || !c.Controllable() {
		t.Fatalf("%s %q: control request for instance %q the device does not control", tp.topic, payload, r.Instance)
	}
	if r.Type != c.Type {
		t.Fatalf("%s %q: control request of type %q for %s of type %q", tp.topic, payload, r.Type, r.Instance, c.Type)
	}
	if err := capability.Validate(c, r.Value); err != nil {
		b, _ := json.Marshal(r.Value)
		t.Fatalf("%s %q: control request %s=%s fails validation: %v", tp.topic, payload, r.Instance, b, err)
	}
	if _, err := json.Marshal(r.Value); err != nil {
		t.Fatalf("%s %q: control value %#v does not marshal: %v", tp.topic, payload, r.Value, err)
	}
}

// errorsOf counts the <id>/error messages among msgs.
func errorsOf(msgs []published) int {
	n := 0
	for _, m := range msgs {
		if strings.HasSuffix(m.topic, "/error") {
			n++
		}
	}
	return n
}

func tp0(topics []fuzzTopic, sel uint16) string { return pick(topics, sel).topic }

// pick chooses a topic from the selector.
func pick(topics []fuzzTopic, sel uint16) fuzzTopic { return topics[int(sel)%len(topics)] }

// seedPayloads are payloads worth trying on a device topic: examples of
// every capability (cloud and friendly forms) and some broken ones.
func seedPayloads(d capability.Device) []string {
	out := []string{"", "on", "OFF", "1", "0", "-1", "null", "{}", "[]", `"x"`, "\xff\xfe", "1e309", "{\"a\":", "true"}
	for _, c := range d.Capabilities {
		if v, ok := capability.Example(c); ok {
			b, _ := json.Marshal(v)
			out = append(out, string(b), fmt.Sprintf(`{%q:%s}`, c.Instance, b))
		}
	}
	return out
}

// FuzzDeviceCommand: <id>/set, <id>/set/<instance> and <id>/get of every
// device.
func FuzzDeviceCommand(f *testing.F) {
	devs, _ := fixtureDevices(f)
	topics := topicsOf("device", devs)
	for i, tp := range topics {
		for j, p := range seedPayloads(devs[tp.dev]) {
			if (i+j)%7 == 0 {
				f.Add(uint16(i), []byte(p), uint8(j%32))
			}
		}
	}
	f.Fuzz(func(t *testing.T, sel uint16, payload []byte, mode uint8) {
		fb := newFuzzBridge(t, false)
		tp := pick(topics, sel)
		msgs, reqs := fb.deliver(t, tp, payload, fuzzMode(mode))
		if strings.HasSuffix(tp.topic, "/get") {
			return
		}
		// Every command is answered: queued or refused on <id>/error (one
		// error per refused instance, at most).
		if len(reqs) == 0 && errorsOf(msgs) == 0 {
			t.Fatalf("%s %q: neither queued nor refused; published %v", tp.topic, payload, msgs)
		}
		if mode&1 != 0 && len(reqs) != 0 {
			t.Fatalf("%s %q: queued although the scheduler refused", tp.topic, payload)
		}
		if fuzzMode(mode).failed() && errorsOf(msgs) < len(reqs) {
			t.Fatalf("%s %q: %d commands failed in the cloud but %d errors published", tp.topic, payload, len(reqs), errorsOf(msgs))
		}
	})
}

// FuzzLightCommand: Home Assistant's JSON light commands on <id>/light/set
// and <id>/segment/<n>/set of every device (lights or not).
func FuzzLightCommand(f *testing.F) {
	devs, _ := fixtureDevices(f)
	topics := topicsOf("light", devs)
	light := []string{
		`{"state":"ON"}`, `{"state":"OFF","brightness":10}`, `{"state":"ON","brightness":128}`,
		`{"brightness":255,"color":{"r":255,"g":0,"b":0}}`, `{"color_temp":250}`, `{"color_temp":6500}`,
		`{"effect":"Sunrise"}`, `{"effect":"My Fade"}`, `{"color":{"h":120,"s":50}}`, `{"color":{"x":0.3,"y":0.3}}`,
		`{"state":"on","transition":2}`, `ON`, `OFF`, `{"brightness":-5}`, `{"brightness":1e400}`, `{"color":{"r":-1,"g":300,"b":"x"}}`,
		`{"state":null}`, `{"color_temp":0}`, ``, `{`, `[]`, `{"state":"ON","state":"OFF"}`,
	}
	for i := range topics {
		for j, p := range light {
			if (i+j)%5 == 0 {
				f.Add(uint16(i), []byte(p), uint8(j%32))
			}
		}
	}
	f.Fuzz(func(t *testing.T, sel uint16, payload []byte, mode uint8) {
		fb := newFuzzBridge(t, false)
		tp := pick(topics, sel)
		msgs, reqs := fb.deliver(t, tp, payload, fuzzMode(mode))
		if len(reqs) == 0 && errorsOf(msgs) == 0 {
			t.Fatalf("%s %q: neither queued nor refused; published %v", tp.topic, payload, msgs)
		}
		if strings.Contains(tp.topic, "/segment/") {
			seg, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(tp.topic[strings.Index(tp.topic, "/segment/"):], "/segment/"), "/set"))
			for _, r := range reqs {
				m, _ := r.Value.(map[string]any)
				s, _ := m["segment"].([]any)
				if err != nil || len(s) != 1 || !capability.Equal(s[0], int64(seg)) {
					t.Fatalf("%s %q: request %s=%v does not name only segment %d", tp.topic, payload, r.Instance, r.Value, seg)
				}
			}
		}
	})
}

// FuzzBridgeRequest: <base>/bridge/request/<action> and Home Assistant's
// status topic. Every request is answered exactly once, with a JSON
// response that echoes its transaction.
func FuzzBridgeRequest(f *testing.F) {
	devs, _ := fixtureDevices(f)
	topics := topicsOf("bridge", devs)
	id := topic.DeviceID(devs[0].SKU, devs[0].Device)
	for i := range topics {
		for _, p := range []string{"", "online", "offline", " ONLINE\n", "{}", `{"transaction":"t1"}`, `{"transaction":7,"device":"` + id + `"}`,
			`{"device":"` + devs[0].SKU + "/" + devs[0].Device + `"}`, `{"device":"nope"}`, `{"transaction":{"a":[1]}}`, `[1]`, `"x"`, `{"device":5}`, "\xff"} {
			f.Add(uint16(i), []byte(p))
		}
	}
	f.Fuzz(func(t *testing.T, sel uint16, payload []byte) {
		fb := newFuzzBridge(t, tp0(topics, sel) == "homeassistant/status")
		tp := pick(topics, sel)
		msgs, reqs := fb.deliver(t, tp, payload, 0)
		if len(reqs) != 0 {
			t.Fatalf("%s %q: a bridge request queued control requests %v", tp.topic, payload, reqs)
		}
		if tp.topic == "homeassistant/status" {
			if strings.EqualFold(strings.TrimSpace(string(payload)), "online") && len(msgs) == 0 {
				t.Fatalf("home assistant online: nothing republished")
			}
			return
		}
		action := strings.TrimPrefix(tp.topic, fuzzBase+"/bridge/request/")
		want := topic.New(fuzzBase).BridgeResponse(action)
		var responses []published
		for _, m := range msgs {
			if m.topic == want {
				responses = append(responses, m)
			}
		}
		if len(responses) != 1 {
			t.Fatalf("%s %q: %d responses on %s; want exactly 1 (published %v)", tp.topic, payload, len(responses), want, msgs)
		}
		var r struct {
			Status      string          `json:"status"`
			Error       string          `json:"error"`
			Transaction json.RawMessage `json:"transaction"`
		}
		if err := json.Unmarshal(responses[0].payload, &r); err != nil {
			t.Fatalf("%s %q: response is not JSON: %s", tp.topic, payload, responses[0].payload)
		}
		if r.Status != "ok" && (r.Status != "error" || r.Error == "") {
			t.Fatalf("%s %q: response %s: want status ok, or error with a text", tp.topic, payload, responses[0].payload)
		}
		var req struct {
			Transaction json.RawMessage `json:"transaction"`
		}
		if json.Unmarshal(payload, &req) == nil && len(req.Transaction) > 0 && string(req.Transaction) != "null" {
			if !jsonEqual(req.Transaction, r.Transaction) {
				t.Fatalf("%s %q: transaction %s answered as %s", tp.topic, payload, req.Transaction, r.Transaction)
			}
		}
	})
}

func jsonEqual(a, b []byte) bool {
	va, err1 := capability.Normalize(a)
	vb, err2 := capability.Normalize(b)
	return errors.Join(err1, err2) == nil && capability.Equal(va, vb)
}

// TestFuzzTopicsCoverEveryKind guards the targets' reach: every device of
// the fixtures, every capability instance, the light and segment topics of
// the lights, and every bridge request.
func TestFuzzTopicsCoverEveryKind(t *testing.T) {
	devs, _ := fixtureDevices(t)
	if len(devs) < 25 {
		t.Fatalf("only %d fixture devices decoded", len(devs))
	}
	device, light := topicsOf("device", devs), topicsOf("light", devs)
	var segments, lights int
	for _, tp := range light {
		if strings.Contains(tp.topic, "/segment/") {
			segments++
		} else {
			lights++
		}
	}
	want := 0
	for _, d := range devs {
		want += 3 + len(d.Capabilities)
	}
	if len(device) != want || lights != len(devs) || segments < 20 {
		t.Fatalf("topics: %d device (want %d), %d light (want %d), %d segment", len(device), want, lights, len(devs), segments)
	}
	if got := topicsOf("bridge", devs); !slices.ContainsFunc(got, func(tp fuzzTopic) bool { return tp.topic == "homeassistant/status" }) {
		t.Fatalf("no homeassistant/status among %v", got)
	}
}
