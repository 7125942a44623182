package bridge_test

// docs/topics.md: every topic the bridge publishes and takes, from the
// table below and a run of the bridge. The table is checked against what
// the bridge does: every topic published in the run is in it (with its
// retained flag), every outbound row is published in the run, every
// subscription of the bridge takes a row's topic, every inbound row's
// example is accepted, and the requests are the actions the bridge knows.
// The examples of what the bridge publishes are taken from the run.

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/bridge"
	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/settings"
	"cloud2mqtt/internal/testkit"
	"cloud2mqtt/internal/topic"
)

var updateTopics = flag.Bool("update", false, "rewrite docs/topics.md from the topic table and a run of the bridge")

const topicsPath = "../../docs/topics.md"

// topicDoc is one topic of the page.
type topicDoc struct {
	topic    string // with placeholders in <>, under the default base
	in       bool   // the bridge takes it (else it publishes it)
	retained bool   // outbound: published retained
	watched  bool   // outbound: the bridge also subscribes, to keep it true
	payload  string // what it carries
	// example: inbound, a payload the bridge takes (sent in the run);
	// outbound, "" to take the first one the run publishes, else the
	// payload given (when another part of the daemon makes it).
	example string
	// exampleTopic is the inbound example's topic, "" for topic itself
	// with the run's device.
	exampleTopic string
	// by names who publishes it when not the Bridge or Mirror: the run
	// does not see it.
	by string
}

type topicSection struct {
	title, intro string
	topics       []topicDoc
}

// requestDoc is one action of bridge/request/<action>.
type requestDoc struct {
	action, does, example string
}

// docLayout is the layout of the page: the default base.
var docLayout = topic.New(topic.DefaultBase)

// docDiscovery is the discovery configuration of the page: the default
// prefix.
var docDiscovery = discovery.Config{Prefix: discovery.DefaultPrefix, Layout: docLayout, Version: "1.0.0"}

func topicSections() []topicSection {
	l, id, n := docLayout, "<id>", "<n>"
	segmentSet := strings.Replace(l.SegmentSet(id, 0), "/0/", "/"+n+"/", 1)
	return []topicSection{
		{title: "The bridge", topics: []topicDoc{
			{topic: l.BridgeState(), retained: true, watched: true, by: "the MQTT connection, as its birth and will", example: "online",
				payload: "`online` while the bridge is connected; `offline` when it stops or the broker loses it (the MQTT will)."},
			{topic: l.BridgeDevices(), retained: true,
				payload: "JSON array of every device: its `id` (the topic id), model, device id, name, type, capabilities and scene lists."},
			{topic: l.BridgeStats(), retained: true,
				payload: "JSON of the bridge's figures: requests today, queue depth, devices online and in all, whether it is rate limited, and the daily quota as far as it is known; sent when one changes."},
			{topic: l.BridgeInfo(), retained: true, by: "the daemon",
				payload: "JSON of the settings in use: version, log level, poll interval and daily limit, each device's options, the options set over MQTT and where each setting came from, the rate limits and the poll plan."},
			{topic: l.BridgeLogging(), by: "the daemon's log",
				example: `{"level":"warning","message":"rate limited","device":"H6601/AA:BB:CC:DD:EE:FF:00:01","status":429}`,
				payload: "JSON of each warning and error the bridge logs: `level` (`warning`, `error`), `message` and the line's fields; at most 5 a second, `dropped` counts those left out."},
			{topic: l.BridgeRequest("<action>"), in: true, exampleTopic: l.BridgeRequest(topic.ActionHealth), example: `{"transaction":"42"}`,
				payload: "A request ([Requests](#requests)): empty, or a JSON object whose members are all optional: `transaction` (any value, echoed in the response), `device` (a device id or `sku/device`) and `options`."},
			{topic: l.BridgeResponse("<action>"),
				payload: "The answer to a request: `status` (`ok` or `error`), `data` or `error` (what is wrong and the fix), and the request's `transaction`."},
			{topic: l.BridgeResponseUnknown(),
				payload: "The answer to a request for an action the bridge does not know, with the `action` asked (shortened) and the known ones in `error`."},
			{topic: l.BridgeError(),
				payload: "The answer to a command for an id no device has: `device` (the id, shortened), `instance`, `value`, `error` and `code`."},
		}},
		{title: "Devices", intro: "`<id>` is a device's topic id: its model and device id in lower case, letters and digits only, joined by `_` (`h6072_aabbccddeeff0001`); `" + l.BridgeDevices() + "` lists them.",
			topics: []topicDoc{
				{topic: l.State(id), retained: true,
					payload: "JSON object of the device's values by instance, and `online`; published when a value changes. Temperatures are in the device's unit."},
				{topic: l.Availability(id), retained: true, watched: true,
					payload: "`online` or `offline`, as the cloud (or the LAN) last said."},
				{topic: l.Set(id), in: true, example: `{"powerSwitch":"on","brightness":55}`,
					payload: "JSON object of instance → value, applied in order. Values may be written as people write them: `\"on\"`, `\"55\"`, `\"#ff8800\"`, `\"22C\"`, a scene's name."},
				{topic: l.SetInstance(id, "<instance>"), in: true, exampleTopic: l.SetInstance(id, "brightness"), example: "40",
					payload: "A plain value for one instance: `on`, `40`, `#ff8800`, `72 F`, a scene's name."},
				{topic: l.Get(id), in: true, example: "",
					payload: "Anything, even empty: read the device now (within the budget). The answer is a new state, or an error on `<id>/error`."},
				{topic: l.Error(id),
					payload: "JSON of a command or read on request that was refused or failed: `instance`, `value`, `error` (what is wrong and the fix) and `code` (400 a bad value, 404 no such instance, 429 over a budget, …); `rejected` counts the commands one answer of a burst stands for."},
				{topic: l.Event(id),
					payload: "JSON of a device event, as Home Assistant's event entity reads it: `event_type` and the event's fields."},
			}},
		{title: "Home Assistant", intro: "With `HA_DISCOVERY=true` (the default).",
			topics: []topicDoc{
				{topic: docDiscovery.ConfigTopic("<component>", "<node_id>", "<object_id>"), retained: true,
					payload: "One entity's MQTT discovery config, sent when it changes and again when Home Assistant comes online; an empty retained message removes an entity that is gone."},
				{topic: l.Light(id), retained: true,
					payload: "The light's state in Home Assistant's JSON schema: `state`, `brightness`, `color_mode`, `color`, `color_temp_kelvin`, `effect`."},
				{topic: l.LightSet(id), in: true, example: `{"state":"ON","brightness":50,"color":{"r":255,"g":136,"b":0}}`,
					payload: "A light command in Home Assistant's JSON schema (what its light entity sends)."},
				{topic: segmentSet, in: true, exampleTopic: l.SegmentSet(id, 0), example: `{"state":"ON","color":{"r":255,"g":0,"b":0}}`,
					payload: "The same for one segment `<n>` of a light, counted from 0."},
				{topic: "homeassistant/status", in: true, example: "online",
					payload: "Home Assistant's birth topic (`HA_STATUS_TOPIC`): `online` makes the bridge send discovery and states again."},
			}},
	}
}

// requestDocs are the actions of bridge/request/<action>.
func requestDocs() []requestDoc {
	var opts []string
	for _, v := range config.Vars() {
		if v.Option != "" {
			opts = append(opts, "`"+v.Option+"`")
		}
	}
	return []requestDoc{
		{topic.ActionRefresh, "Read the device list now.", `{"transaction":"1"}`},
		{topic.ActionScenes, "Read one light's scene lists now.", `{"device":"<id>"}`},
		{topic.ActionHealth, "The health report `/healthz` gives: `healthy`, and when not, the `reasons`.", ``},
		{topic.ActionDevices, "The device list, as `bridge/devices` has it.", ``},
		{topic.ActionReadAll, "Read every device now, within the budget; an error says how many must wait.", ``},
		{topic.ActionRepublish, "Send discovery, states and availability again.", ``},
		{topic.ActionOptions, "Change settings while the bridge runs (kept in `STATE_DIR`): " + strings.Join(opts, ", ") +
			"; a duration as `\"90s\"` or seconds, `null` returns one to the environment's value. The answer is every option in effect.", `{"options":{"poll_interval":"90s","log_level":"debug"}}`},
		{topic.ActionDeviceOptions, "Change one device's settings: `poll_interval`, `disabled` (no reads, commands or discovery) and `name`.", `{"device":"<id>","options":{"poll_interval":"2m","name":"Hall light"}}`},
	}
}

// docMessage is one publication of the run.
type docMessage struct {
	topic    string
	payload  []byte
	retained bool
}

type docPub struct {
	mu   sync.Mutex
	msgs []docMessage
}

func (p *docPub) Publish(t string, payload []byte, retained bool, _ byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, docMessage{t, bytes.Clone(payload), retained})
	return nil
}

func (p *docPub) take() []docMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.msgs
	p.msgs = nil
	return out
}

type docCmd struct{ n int }

func (c *docCmd) Control(req cloud.ControlRequest, report func(scheduler.CommandResult)) error {
	c.n++
	report(scheduler.CommandResult{Request: req})
	return nil
}

type docReader struct{ reads int }

func (r *docReader) Confirm(string, string) {}
func (r *docReader) ReadNow(_, _ string, done func(error)) error {
	r.reads++
	if done != nil {
		done(nil)
	}
	return nil
}
func (r *docReader) RefreshDevices(done func(error)) error             { done(nil); return nil }
func (r *docReader) RefreshScenes(_, _ string, done func(error)) error { done(nil); return nil }

type docPoller struct{}

func (docPoller) SetConfig(poller.Config)                               {}
func (docPoller) SetDeviceOptions(capability.Key, poller.DeviceOptions) {}

// docRun is what a run of the bridge published, and the answers to the
// examples.
type docRun struct {
	msgs      []docMessage            // everything, in order
	id        string                  // the run's device
	accepted  map[string][]docMessage // an inbound row's topic → what its example brought
	acted     map[string]bool         // an inbound row's topic → its example brought a command or read
	responses map[string][]byte       // action → the response to its example
	actions   []string                // the actions the bridge says it knows
	subs      []string                // the bridge's subscriptions
}

// runBridge runs the bridge over one recorded light: the device list,
// a state, stats, an event, each inbound example, each request, a refused
// command, a command for an unknown id, an unknown action, and the light
// removed.
func runBridge(t *testing.T) docRun {
	t.Helper()
	devs := testkit.Devices[capability.Device](t, "../../testdata")
	i := slices.IndexFunc(devs, func(d capability.Device) bool {
		return slices.ContainsFunc(d.Capabilities, func(c capability.Capability) bool { return c.Instance == capability.InstanceSegmentedColorRGB })
	})
	if i < 0 {
		t.Fatal("no light with segments in testdata")
	}
	dev := devs[i]
	dev.Name = "Desk light"
	run := docRun{id: topic.DeviceID(dev.SKU, dev.Device), accepted: map[string][]docMessage{}, acted: map[string]bool{}, responses: map[string][]byte{}}
	pub := &docPub{}
	m := bridge.NewMirror(bridge.Options{Layout: docLayout, Discovery: docDiscovery, DiscoveryEnabled: true,
		HAStatusTopic: "homeassistant/status", Log: zerolog.Nop()})
	reg := registry.New(zerolog.Nop(), m.Observer())
	m.Connected(pub)
	reg.SetDevices([]capability.Device{dev})
	reg.ApplyState(dev.Key(), cloud.DeviceState{SKU: dev.SKU, Device: dev.Device, Capabilities: []cloud.CapabilityState{
		{Type: capability.TypeOnline, Instance: capability.InstanceOnline, State: cloud.StateValue{Value: true}},
		{Instance: "powerSwitch", State: cloud.StateValue{Value: int64(1)}},
		{Instance: "brightness", State: cloud.StateValue{Value: int64(80)}},
		{Instance: "colorRgb", State: cloud.StateValue{Value: int64(0xff8800)}},
	}}, reg.Seq())
	today, online := 120, true
	m.PublishStats(discovery.BridgeStats{Version: docDiscovery.Version, RequestsToday: today, DevicesOnline: 1, DevicesTotal: 1, CloudConnected: &online})
	// What the daemon hands the Mirror to publish (the page shows no
	// example of bridge/info: the daemon makes it).
	m.PublishInfo([]byte(`{"version":"1.0.0","log_level":"info"}`))
	for _, d := range allRows() {
		if d.topic == docLayout.BridgeLogging() {
			m.PublishLog([]byte(d.example))
		}
	}
	m.Event(dev.SKU, dev.Device, "lackWaterEvent", "lack", int64(1), "Lack of Water")
	run.msgs = append(run.msgs, pub.take()...)

	env, err := config.Load(map[string]string{"CLOUD_BASE_URL": "https://api.example.com", "CLOUD_API_KEY": "k"})
	if err != nil {
		t.Fatal(err)
	}
	set := settings.New(env, "", zerolog.Nop(), docPoller{}, m, nil)
	cmd, rd := &docCmd{}, &docReader{}
	b := bridge.New(m, reg, rd, cmd, set)
	run.subs = b.Subscriptions()
	for _, s := range topicSections() {
		for _, d := range s.topics {
			if !d.in {
				continue
			}
			before := cmd.n + rd.reads
			b.Handle(exampleTopic(d, run.id), []byte(d.example), false)
			got := pub.take()
			run.accepted[d.topic] = got
			run.acted[d.topic] = cmd.n+rd.reads > before
			run.msgs = append(run.msgs, got...)
		}
	}
	for _, r := range requestDocs() {
		b.Handle(docLayout.BridgeRequest(r.action), []byte(strings.ReplaceAll(r.example, "<id>", run.id)), false)
		got := pub.take()
		for _, msg := range got {
			if msg.topic == docLayout.BridgeResponse(r.action) {
				run.responses[r.action] = msg.payload
			}
		}
		run.msgs = append(run.msgs, got...)
	}
	b.Handle(docLayout.SetInstance(run.id, "brightness"), []byte("500"), false)
	b.Handle(docLayout.Set("h6008_0011"), []byte(`{"powerSwitch":"on"}`), false)
	b.Handle(docLayout.BridgeRequest("restart"), nil, false)
	got := pub.take()
	for _, msg := range got {
		if msg.topic == docLayout.BridgeResponseUnknown() {
			var r struct{ Error string }
			json.Unmarshal(msg.payload, &r)
			_, known, _ := strings.Cut(r.Error, "known: ")
			run.actions = strings.Split(known, ", ")
		}
	}
	run.msgs = append(run.msgs, got...)
	reg.SetDevices(nil)
	run.msgs = append(run.msgs, pub.take()...)
	return run
}

// exampleTopic is an inbound row's example topic for the device id.
func exampleTopic(d topicDoc, id string) string {
	t := d.topic
	if d.exampleTopic != "" {
		t = d.exampleTopic
	}
	return strings.ReplaceAll(t, "<id>", id)
}

// rowOf is the row a published topic is: the row with no placeholder
// that is the topic, else the one row whose pattern matches it.
func rowOf(rows []topicDoc, t string) (topicDoc, bool) {
	var found []topicDoc
	for _, d := range rows {
		if d.in {
			continue
		}
		if d.topic == t {
			return d, true
		}
		if patternOf(d.topic).MatchString(t) {
			found = append(found, d)
		}
	}
	if len(found) != 1 {
		return topicDoc{}, false
	}
	return found[0], true
}

var placeholder = regexp.MustCompile(`<[a-z_]+>`)

// patternOf is a row's topic as a regular expression: a placeholder is
// one level, <action> one or more.
func patternOf(t string) *regexp.Regexp {
	q := regexp.QuoteMeta(t)
	q = strings.ReplaceAll(q, "<action>", ".+")
	return regexp.MustCompile("^" + placeholder.ReplaceAllString(q, "[^/]+") + "$")
}

func allRows() []topicDoc {
	var out []topicDoc
	for _, s := range topicSections() {
		out = append(out, s.topics...)
	}
	return out
}

// TestTopicsPage checks the table against a run of the bridge and keeps
// docs/topics.md what topicsPage renders. go test -update rewrites it.
func TestTopicsPage(t *testing.T) {
	run := runBridge(t)
	rows := allRows()

	seen := map[string]bool{}
	for _, msg := range run.msgs {
		d, ok := rowOf(rows, msg.topic)
		switch {
		case !ok:
			t.Errorf("the bridge published on %s, which docs/topics.md does not list (or lists twice): add it to topicSections", msg.topic)
		case d.retained != msg.retained:
			t.Errorf("%s is published with retained %v; the page says %v", msg.topic, msg.retained, d.retained)
		default:
			seen[d.topic] = true
		}
	}
	for _, d := range rows {
		if !d.in && d.by == "" && !seen[d.topic] {
			t.Errorf("the run published nothing on %s: make the run publish it, or name who does (by)", d.topic)
		}
	}

	for _, f := range run.subs {
		if !slices.ContainsFunc(rows, func(d topicDoc) bool {
			return (d.in || d.watched) && topic.Matches(f, exampleTopic(d, run.id))
		}) {
			t.Errorf("the bridge subscribes to %s, which takes no topic of the page", f)
		}
	}
	for _, d := range rows {
		if (d.in || d.watched) && !slices.ContainsFunc(run.subs, func(f string) bool { return topic.Matches(f, exampleTopic(d, run.id)) }) {
			t.Errorf("the page says the bridge takes %s, but it does not subscribe to it", d.topic)
		}
	}

	for _, d := range rows {
		if !d.in {
			continue
		}
		got := run.accepted[d.topic]
		if len(got) == 0 && !run.acted[d.topic] {
			t.Errorf("%s %q: the bridge did nothing the run sees", exampleTopic(d, run.id), d.example)
		}
		for _, msg := range got {
			if strings.HasSuffix(msg.topic, "/error") || bytes.Contains(msg.payload, []byte(`"status":"error"`)) {
				t.Errorf("%s %q is refused: %s %s", exampleTopic(d, run.id), d.example, msg.topic, msg.payload)
			}
		}
	}

	var documented []string
	for _, r := range requestDocs() {
		documented = append(documented, r.action)
		var resp struct{ Status, Error string }
		if err := json.Unmarshal(run.responses[r.action], &resp); err != nil || resp.Status != "ok" {
			t.Errorf("request %s %s: answered %s", r.action, r.example, run.responses[r.action])
		}
	}
	slices.Sort(documented)
	if !slices.Equal(documented, run.actions) {
		t.Errorf("the page documents the requests %v; the bridge knows %v", documented, run.actions)
	}

	want := topicsPage(run)
	if *updateTopics {
		if err := os.WriteFile(topicsPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(topicsPath)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/bridge -run TestTopicsPage -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/topics.md differs from the table and the run: run go test ./internal/bridge -run TestTopicsPage -update and review the diff")
	}
}

// Every topic the bridge publishes for any recorded device (the demo
// catalogue and every recorded device list), with discovery, is a row of
// the page, retained as it says.
func TestTopicsOfEveryRecordedDevice(t *testing.T) {
	devs, _ := fixtureDevices(t)
	pub := &docPub{}
	m := bridge.NewMirror(bridge.Options{Layout: docLayout, Discovery: docDiscovery, DiscoveryEnabled: true, Log: zerolog.Nop()})
	reg := registry.New(zerolog.Nop(), m.Observer())
	m.Connected(pub)
	reg.SetDevices(devs)
	for _, d := range devs {
		reg.ApplyState(d.Key(), cloud.DeviceState{SKU: d.SKU, Device: d.Device, Capabilities: []cloud.CapabilityState{
			{Type: capability.TypeOnline, Instance: capability.InstanceOnline, State: cloud.StateValue{Value: true}},
			{Instance: "powerSwitch", State: cloud.StateValue{Value: int64(1)}}}}, reg.Seq())
	}
	reg.SetDevices(nil)
	rows := allRows()
	msgs := pub.take()
	if len(msgs) < len(devs) {
		t.Fatalf("%d messages for %d devices", len(msgs), len(devs))
	}
	for _, msg := range msgs {
		if d, ok := rowOf(rows, msg.topic); !ok || d.retained != msg.retained {
			t.Errorf("%s (retained %v) is not a row of docs/topics.md (%+v)", msg.topic, msg.retained, d)
		}
	}
}

// maxExample is the most of a payload an example shows.
const maxExample = 480
