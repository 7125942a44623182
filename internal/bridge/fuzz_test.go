package bridge_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/topic"
)

// The fuzz targets feed arbitrary payloads to every command topic of every
// device of the demo catalogue and the recorded device lists, on a bridge wired
// to fakes. Beyond "no panic" (a recovered panic logs "bug:", which fails) they
// check what a user relies on:
//   - a command reaches the scheduler or is answered on <id>/error with a text
//     and the code 400, 404 or 503;
//   - a control request that reaches the scheduler names the topic's device and
//     passes capability.Validate;
//   - every bridge request is answered exactly once on its response topic;
//   - (FuzzInboundTopic) nothing is published on a topic of the sender's choosing.
//
// The seed corpus is in testdata/fuzz.

// fuzzMode is what the fakes do with a command: bit 0 makes the scheduler
// refuse it (overloaded); once queued, bit 1 makes the cloud refuse it
// (400), else bit 2 has it held back after the cloud refused the key, else
// bit 3 has it not sent at shutdown, else bit 4 has a newer command
// supersede it; otherwise it succeeds. Bit 5 delivers the message as
// retained (stale from before the subscription): nothing may come of it.
type fuzzMode uint8

// retained reports whether the mode delivers the message as retained.
func (m fuzzMode) retained() bool { return m&32 != 0 }

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
		r.Err, r.Attempts = capability.ErrSuperseded, 0
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
	fb.b.Handle(tp.topic, payload, mode.retained())
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
	for i := range min(len(topics), 8) {
		f.Add(uint16(i), []byte(`{"powerSwitch":1}`), uint8(32))
	}
	f.Fuzz(func(t *testing.T, sel uint16, payload []byte, mode uint8) {
		fb := newFuzzBridge(t, false)
		tp := pick(topics, sel)
		msgs, reqs := fb.deliver(t, tp, payload, fuzzMode(mode))
		if fuzzMode(mode).retained() {
			checkIgnored(t, tp, payload, msgs, reqs)
			if len(fb.read.done) != 0 {
				t.Fatalf("%s %q retained: read the device", tp.topic, payload)
			}
			return
		}
		if strings.HasSuffix(tp.topic, "/get") {
			return
		}
		if len(payload) == 0 && routes(tp.topic) {
			checkCleared(t, tp, msgs, reqs)
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
		if fuzzMode(mode).retained() {
			checkIgnored(t, tp, payload, msgs, reqs)
			return
		}
		if len(payload) == 0 && routes(tp.topic) {
			checkCleared(t, tp, msgs, reqs)
			return
		}
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
		if !slices.Contains(knownActions, action) {
			// Answered on the one fixed topic, never on one the sender named.
			want = topic.New(fuzzBase).BridgeResponseUnknown()
		}
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
			Action      *string         `json:"action"`
			Error       string          `json:"error"`
			Transaction json.RawMessage `json:"transaction"`
		}
		if err := json.Unmarshal(responses[0].payload, &r); err != nil {
			t.Fatalf("%s %q: response is not JSON: %s", tp.topic, payload, responses[0].payload)
		}
		if unknown := want == topic.New(fuzzBase).BridgeResponseUnknown(); unknown != (r.Action != nil) || unknown && (*r.Action != action || r.Status != "error") {
			t.Fatalf("%s %q: response %s: an unknown action's answer names it, a known one's does not", tp.topic, payload, responses[0].payload)
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

// knownActions are the requests the bridge answers on their own topic.
var knownActions = []string{topic.ActionRefresh, topic.ActionScenes, topic.ActionHealth, topic.ActionDevices,
	topic.ActionReadAll, topic.ActionRepublish, topic.ActionOptions, topic.ActionDeviceOptions}

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

// routes reports whether t is a well-formed command topic (a malformed one
// is refused whatever its payload).
func routes(t string) bool {
	_, err := topic.New(fuzzBase).Route(t)
	return err == nil
}

// checkCleared: the empty message that deletes a retained command
// (mosquitto_pub -r -n) reaches the bridge too; nothing comes of it, no
// error either.
func checkCleared(t *testing.T, tp fuzzTopic, msgs []published, reqs []cloud.ControlRequest) {
	t.Helper()
	if len(reqs) != 0 || len(msgs) != 0 {
		t.Fatalf("%s with an empty payload (a retained command cleared): queued %v, published %v; want nothing", tp.topic, reqs, msgs)
	}
}

// checkIgnored: a retained command changes nothing and is answered nowhere.
func checkIgnored(t *testing.T, tp fuzzTopic, payload []byte, msgs []published, reqs []cloud.ControlRequest) {
	t.Helper()
	if len(reqs) != 0 || len(msgs) != 0 {
		t.Fatalf("%s %q retained: queued %v, published %v; want nothing", tp.topic, payload, reqs, msgs)
	}
}
