package app_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/mqtttest"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/topic"
)

// The fault suite: the whole daemon against a real broker that is killed,
// a bridge cut off from its broker, and a simulated cloud that fails in
// every way the spec and the fixtures know of. Each test waits on
// conditions a user would see (retained topics, the cloud's state), never
// on fixed sleeps.

// faultWait bounds waits that include the scheduler's retries of failing
// reads (up to four attempts with back-off, three failed reads before a
// device is unavailable), the clock jumping over the back-offs.
const faultWait = 60 * time.Second

// ids are the topic ids of the simulated account's devices.
func (h *harness) ids() []string {
	var out []string
	for _, d := range h.sim.Devices() {
		out = append(out, topic.DeviceID(d.SKU, d.Device))
	}
	return out
}

// availability waits until every device in ids has the availability on w.
func availability(w *watcher, timeout time.Duration, want string, ids ...string) {
	w.t.Helper()
	for _, id := range ids {
		w.until(timeout, id+" availability "+want, func() bool {
			p, _ := w.get("cloud2mqtt/" + id + "/availability")
			return p == want
		})
	}
}

// command is one command a test client published and the broker
// acknowledged: the cloud must receive exactly this value.
type command struct {
	device, id, instance string
	value                any
}

func commandKey(c command) (string, string, any) { return c.device, c.instance, c.value }

// stream publishes colorRgb commands to the lights in turn, each with a fresh
// value, through a client of its own that retries each command until the broker
// acknowledges it; only acknowledged commands count.
type stream struct {
	t      *testing.T
	c      paho.Client
	lights []capability.Device
	cancel context.CancelFunc
	done   chan struct{}

	gate sync.Mutex // held for each publish attempt

	mu     sync.Mutex
	paused bool
	acked  []command
}

func startStream(t *testing.T, url string, lights []capability.Device) *stream {
	t.Helper()
	c, err := mqtttest.DialClient(t, url, mqtttest.ClientOptions{
		ClientID: "stream-" + strings.ReplaceAll(t.Name(), "/", "-"), Persistent: true, AutoReconnect: true,
	})
	if err != nil {
		t.Fatalf("stream client: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &stream{t: t, c: c.Paho(), lights: lights, cancel: cancel, done: make(chan struct{})}
	go s.run(ctx)
	t.Cleanup(s.stop)
	return s
}

func (s *stream) run(ctx context.Context) {
	defer close(s.done)
	for seq := 1; ; seq++ {
		i := seq % len(s.lights)
		d := s.lights[i]
		// Unique per command and within colorRgb's range.
		value := int64(i+1)*1_000_000 + int64(seq)
		cmd := command{device: d.Device, id: topic.DeviceID(d.SKU, d.Device), instance: capability.InstanceColorRGB, value: value}
		for !s.attempt(ctx, cmd) {
			if !pause(ctx, 100*time.Millisecond) {
				return
			}
		}
		// About 1.7 commands a second per light: below the cloud's 2/s per
		// device, so none is coalesced away and every one must reach it.
		if !pause(ctx, 200*time.Millisecond) {
			return
		}
	}
}

// attempt publishes cmd once unless paused; true when acknowledged.
func (s *stream) attempt(ctx context.Context, cmd command) bool {
	s.gate.Lock()
	defer s.gate.Unlock()
	s.mu.Lock()
	paused := s.paused
	s.mu.Unlock()
	if paused || ctx.Err() != nil {
		return false
	}
	tok := s.c.Publish("cloud2mqtt/"+cmd.id+"/set/"+cmd.instance, 1, false, strconv.FormatInt(cmd.value.(int64), 10))
	if !tok.WaitTimeout(2*time.Second) || tok.Error() != nil {
		return false
	}
	s.mu.Lock()
	s.acked = append(s.acked, cmd)
	s.mu.Unlock()
	return true
}

func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// hold stops publishing and returns once no publish is in flight.
func (s *stream) hold() {
	s.mu.Lock()
	s.paused = true
	s.mu.Unlock()
	s.gate.Lock()
	s.gate.Unlock() //nolint:staticcheck // waiting for the attempt in flight
}

func (s *stream) resume() {
	s.mu.Lock()
	s.paused = false
	s.mu.Unlock()
}

func (s *stream) stop() {
	s.cancel()
	<-s.done
}

func (s *stream) commands() []command {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]command(nil), s.acked...)
}

// fence publishes a QoS 1 message and waits for its acknowledgement: the
// persistent broker has saved everything acknowledged before it.
func (s *stream) fence() {
	s.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		tok := s.c.Publish("test/fence", 1, false, "")
		if tok.WaitTimeout(2*time.Second) && tok.Error() == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("fence not acknowledged within %s: %v", wait, tok.Error())
		}
	}
}

// restored checks what a fresh subscriber sees after a restart: the bridge
// online, every discovery config, and each device's state and availability.
func restored(t *testing.T, h *harness, name string, configs int) {
	t.Helper()
	fresh := newNamedWatcher(t, h.broker.URL(), name)
	defer fresh.c.Disconnect(100)
	fresh.until(wait, name+": bridge online", func() bool {
		p, _ := fresh.get("cloud2mqtt/bridge/state")
		return p == "online"
	})
	fresh.until(wait, name+": discovery configs", func() bool { return len(fresh.topics("homeassistant/")) >= configs })
	for _, id := range h.ids() {
		fresh.until(wait, name+": state and availability of "+id, func() bool {
			s, _ := fresh.get("cloud2mqtt/" + id + "/state")
			a, _ := fresh.get("cloud2mqtt/" + id + "/availability")
			return s != "" && a == "online"
		})
	}
}

// TestCommandsWhileBridgeCutOff: the broker stays up while the bridge's
// connection is cut and refused; commands published meanwhile are queued
// in the bridge's persistent session and applied once it is back.
func TestCommandsWhileBridgeCutOff(t *testing.T) {
	t.Parallel()
	for _, kind := range mqtttest.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			h := startHarness(t, harnessOptions{
				sim:    cloudsim.Options{Catalogue: firstDevices(3)},
				broker: []mqtttest.Option{mqtttest.WithKind(kind)},
				proxy:  true,
			})
			availability(h.watch, wait, "online", h.ids()...)
			h.proxy.SetDown(true)
			h.proxy.Sever()
			h.watch.until(wait, "the bridge's will", func() bool {
				p, _ := h.watch.get("cloud2mqtt/bridge/state")
				return p == "offline"
			})
			before := len(h.sim.ControlLog())
			var cmds []command
			for i, d := range h.sim.Devices() {
				id := topic.DeviceID(d.SKU, d.Device)
				if kind == mqtttest.Mosquitto {
					// Two values for one topic: the later must win. Not on
					// the embedded broker: mochi v2.7.9 resends a session's
					// queued messages sorted by the second they were queued
					// in, unstably, so two queued within one second may
					// arrive swapped (a broker bug, reported).
					h.publish("cloud2mqtt/"+id+"/set/brightness", fmt.Sprint(10+i))
				}
				for _, c := range []command{
					{d.Device, id, capability.InstanceColorRGB, int64(0x102030 + i)},
					{d.Device, id, capability.InstanceBrightness, int64(50 + i)},
				} {
					h.publish("cloud2mqtt/"+id+"/set/"+c.instance, fmt.Sprint(c.value))
					cmds = append(cmds, c)
				}
			}
			if got := len(h.sim.ControlLog()); got != before {
				t.Fatalf("%d commands reached the cloud while the bridge was cut off", got-before)
			}
			h.proxy.SetDown(false)
			h.watch.until(wait, "the bridge back online", func() bool {
				p, _ := h.watch.get("cloud2mqtt/bridge/state")
				return p == "online"
			})
			h.waitCommands("the queued commands applied", cmds)
			for _, c := range cmds {
				if c.instance != capability.InstanceBrightness {
					continue
				}
				h.watch.until(wait, c.id+" brightness", func() bool {
					v, ok := h.sim.Value(c.device, c.instance)
					return ok && capability.Equal(capability.NormalizeValue(v), c.value)
				})
			}
		})
	}
}

// TestCloudFaults: with every state read of the cloud failing in one way
// (5xx, a reset connection, a malformed body, a hang past CLOUD_TIMEOUT),
// the bridge stays up and keeps applying commands, marks every device
// unavailable after repeated failed reads, and shows them available again
// once the fault clears; no retry ever runs into the cloud's rate limits.
func TestCloudFaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		inject func(f *cloudsim.Faults)
	}{
		{"5xx", func(f *cloudsim.Faults) {
			f.FailNext(cloud.EndpointState, 3, 500)
			f.FailFraction(cloud.EndpointState, 1, 503)
		}},
		{"reset", func(f *cloudsim.Faults) { f.ResetNext(cloud.EndpointState, 1_000_000) }},
		{"malformed", func(f *cloudsim.Faults) {
			f.MalformNext(cloud.EndpointState, 3, cloudsim.MalformedNonJSON)
			f.MalformNext(cloud.EndpointState, 1_000_000, cloudsim.MalformedTruncated)
		}},
		{"hang", func(f *cloudsim.Faults) { f.Hang(cloud.EndpointState) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := startHarness(t, harnessOptions{
				sim: cloudsim.Options{Catalogue: firstDevices(2)},
				env: map[string]string{"CLOUD_TIMEOUT": "500ms"},
			})
			ids := h.ids()
			availability(h.watch, wait, "online", ids...)
			tc.inject(h.sim.Faults())
			// The clock jumps over the back-offs of the retries and of
			// the failing devices' reads: the test waits for the failed
			// reads, not for the back-offs (the counts are the poller's
			// and the scheduler's own tests').
			h.availabilityJumping(time.Second, "offline", ids...)

			// Still up: a command goes through (only reads fail) and the
			// health request is answered.
			d := h.sim.Devices()[0]
			cmd := command{d.Device, ids[0], capability.InstanceBrightness, int64(33)}
			h.publish("cloud2mqtt/"+cmd.id+"/set/brightness", "33")
			h.waitCommands("a command during the fault", []command{cmd})
			h.publish("cloud2mqtt/bridge/request/health", `{"transaction":"f"}`)
			h.watch.waitJSON(wait, "cloud2mqtt/bridge/response/health", func(m map[string]any) bool { return m["transaction"] == "f" })
			select {
			case err := <-h.done:
				t.Fatalf("the daemon stopped during the fault: %v", err)
			default:
			}

			h.sim.Faults().Clear()
			h.availabilityJumping(time.Second, "online", ids...)
			h.watch.waitJSON(wait, "cloud2mqtt/"+cmd.id+"/state", func(m map[string]any) bool { return m["brightness"] == float64(33) })
			if n := h.sim.Counts().RateLimited; len(n) != 0 {
				t.Errorf("retries ran into the cloud's rate limits: %v", n)
			}
		})
	}
}

// TestRateLimitStorm: the cloud answers 429 to commands, first because
// another client drained the account's control bucket, then injected. Every
// command is still applied (none reported failed), and after a refusal the
// scheduler waits as told instead of running into the limit again.
func TestRateLimitStorm(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(3)}})
	ids := h.ids()
	availability(h.watch, wait, "online", ids...)
	errors := func() int {
		n := 0
		for _, id := range ids {
			n += h.watch.seen("cloud2mqtt/" + id + "/error")
		}
		return n
	}
	refused := func() int {
		n := 0
		for _, v := range h.sim.Counts().RateLimited {
			n += v
		}
		return n
	}
	errorsBefore := errors()
	burst := func(base int64) []command {
		var cmds []command
		for i, d := range h.sim.Devices() {
			for _, c := range []command{
				{d.Device, ids[i], capability.InstanceColorRGB, base + int64(i)},
				{d.Device, ids[i], capability.InstanceBrightness, base%50 + int64(10+i)},
				{d.Device, ids[i], capability.InstancePower, base % 2},
			} {
				h.publish("cloud2mqtt/"+c.id+"/set/"+c.instance, fmt.Sprint(c.value))
				cmds = append(cmds, c)
			}
		}
		return cmds
	}

	// Another client took every control token of the account. The clock
	// stands still from here on but for the test's jumps: on a running
	// clock a slow machine refilled the bucket before the first command
	// reached it (the simulator's buckets are on the daemon's clock).
	h.clock.Freeze()
	if n := h.sim.DrainControl(1000); n == 0 {
		t.Fatal("DrainControl took no token")
	}
	cmds := burst(0xA00000)
	// The first refusal, before the clock moves on (its bucket refills on
	// the same clock); then it jumps a second at a time, so that the
	// scheduler's waits end at once.
	h.watch.until(wait, "a command refused by the drained bucket", func() bool { return refused() > 0 || len(missing(h.sim, cmds, commandKey)) == 0 })
	h.waitCommandsJumping(time.Second, "every command applied despite the drained bucket", cmds)
	drained := refused()
	if drained == 0 {
		t.Error("the drained bucket refused nothing: the test did not run into the limit")
	}
	// Each light's first command may be refused, sent before the first
	// refusal came back; after that the scheduler waits.
	if drained > len(ids) {
		t.Errorf("the cloud refused %d commands for its limits (%v); at most %d expected", drained, h.sim.Counts().RateLimited, len(ids))
	}

	// Injected 429s: the scheduler backs off and retries until sent.
	h.sim.Faults().FailNext(cloud.EndpointControl, 6, 429)
	h.waitCommandsJumping(time.Second, "every command applied despite injected 429s", burst(0xB00001))
	if got := h.sim.Counts().Of(cloud.EndpointControl, 429); got < 6+drained {
		t.Errorf("%d 429 answers to control, want the 6 injected and %d from the drained bucket", got, drained)
	}
	if n := refused(); n != drained {
		t.Errorf("retrying after injected 429s ran into the cloud's limits %d times (%v)", n-drained, h.sim.Counts().RateLimited)
	}
	if n := errors() - errorsBefore; n != 0 {
		t.Errorf("%d commands reported failed on <id>/error", n)
	}
	t.Logf("refused by the drained bucket: %d; 429 answers in all: %d", drained, h.sim.Counts().Of(cloud.EndpointControl, 429))
}

// TestAPIKeyRevokedAndRestored: while the cloud refuses the key, the refusal is
// logged once per hold-off, nothing but one probe per hold-off is sent, commands
// get a clear error and devices stay available, since the refusal is the
// account's; once the key is accepted again everything recovers without a restart.
func TestAPIKeyRevokedAndRestored(t *testing.T) {
	t.Parallel()
	const holdoff = scheduler.AuthHoldoff
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(2)}})
	ids := h.ids()
	availability(h.watch, wait, "online", ids...)
	// The start's scene lists go after the first reads: revoked while they
	// are on the wire, each would be refused too.
	h.devicesWithScenes()
	isError := func(m map[string]any) bool { return m["level"] == "error" }
	if n := len(h.logLines(isError)); n != 0 {
		t.Fatalf("%d error lines before the key was revoked", n)
	}
	before := h.sim.Counts()

	h.sim.RevokeKey()
	revoked := h.clock.Now()
	h.publish("cloud2mqtt/bridge/request/refresh", `{"transaction":"r1"}`)
	r := h.watch.waitJSON(wait, "cloud2mqtt/bridge/response/refresh", func(m map[string]any) bool { return m["transaction"] == "r1" })
	if r["status"] != "error" || !strings.Contains(strings.ToLower(fmt.Sprint(r["error"])), "key") {
		t.Errorf("refresh while the key is refused: %v; want an error about the API key", r)
	}
	h.publish("cloud2mqtt/"+ids[0]+"/set/brightness", "12")
	e := h.watch.waitJSON(wait, "cloud2mqtt/"+ids[0]+"/error", func(m map[string]any) bool { return m["instance"] == "brightness" })
	if e["code"] != float64(401) || !strings.Contains(strings.ToLower(fmt.Sprint(e["error"])), "key") {
		t.Errorf("command while the key is refused: %v; want code 401 and a word about the key", e)
	}
	// The refusal is the account's, not the devices': they stay available
	// (checked below, over the whole test).
	// A second refresh while refused is answered without a request.
	h.publish("cloud2mqtt/bridge/request/refresh", `{"transaction":"r2"}`)
	r = h.watch.waitJSON(wait, "cloud2mqtt/bridge/response/refresh", func(m map[string]any) bool { return m["transaction"] == "r2" })
	if r["status"] != "error" {
		t.Errorf("second refresh while refused: %v", r)
	}
	during := h.sim.Counts()
	h.sim.RestoreKey()
	// Each hold-off that ended while the key was still refused cost one
	// probe request (refused, logged again, a new hold-off): holdoffs is
	// how many hold-offs the time revoked can hold.
	refusedFor := h.clock.Now().Sub(revoked)
	holdoffs := 1 + int(refusedFor/holdoff)
	t.Logf("the key was refused for %v: %d hold-off(s) of %v", refusedFor.Round(time.Millisecond), holdoffs, holdoff)

	list401 := during.Of(cloud.EndpointDevices, 401) - before.Of(cloud.EndpointDevices, 401)
	all401 := 0
	for _, ep := range []string{cloud.EndpointDevices, cloud.EndpointState, cloud.EndpointScenes, cloud.EndpointDIYScenes, cloud.EndpointControl} {
		all401 += during.Of(ep, 401) - before.Of(ep, 401)
	}
	if list401 > holdoffs {
		t.Errorf("%d device-list requests refused in %d hold-off(s); at most one per hold-off expected", list401, holdoffs)
	}
	// Requests already on the wire when the first refusal came back may be
	// refused too; after that nothing is sent but one probe per hold-off.
	if max401 := 2 + len(ids) + holdoffs - 1; all401 > max401 {
		t.Errorf("%d requests refused with 401 while revoked; at most %d expected", all401, max401)
	}

	// Recovery, without a restart, once the refusal's hold-off is over:
	// jumped over, then a second at a time to the next read.
	h.clock.Advance(holdoff)
	h.jumpUntil(faultWait, time.Second, "a state read answered after the key is back", func() bool {
		return h.sim.Counts().Of(cloud.EndpointState, 200) > during.Of(cloud.EndpointState, 200)
	})
	for _, m := range h.watch.messages() {
		if strings.HasSuffix(m.topic, "/availability") && m.payload == "offline" {
			t.Errorf("%s went offline because the key was refused: the bridge's hold-off is no fault of the device", m.topic)
		}
	}
	h.publish("cloud2mqtt/"+ids[0]+"/set/brightness", "77")
	h.waitCommands("a command after the key is back", []command{{h.sim.Devices()[0].Device, ids[0], capability.InstanceBrightness, int64(77)}})
	h.publish("cloud2mqtt/bridge/request/refresh", `{"transaction":"r3"}`)
	r = h.watch.waitJSON(wait, "cloud2mqtt/bridge/response/refresh", func(m map[string]any) bool { return m["transaction"] == "r3" })
	if r["status"] != "ok" {
		t.Errorf("refresh after the key is back: %v", r)
	}

	errs := h.logLines(isError)
	if len(errs) == 0 || len(errs) > holdoffs {
		t.Errorf("%d error log lines for a refusal of the key lasting %d hold-off(s), want one per hold-off: %v", len(errs), holdoffs, errs)
	}
	for _, e := range errs {
		if msg := strings.ToLower(fmt.Sprint(e["message"], e["error"])); !strings.Contains(msg, "key") {
			t.Errorf("the error line does not mention the API key: %v", e)
		}
	}
	refusals := h.logLines(func(m map[string]any) bool {
		lvl := m["level"]
		return (lvl == "warn" || lvl == "error") && strings.Contains(fmt.Sprint(m["error"]), "401")
	})
	t.Logf("%d warning or error lines mention the refusal", len(refusals))
	if strings.Contains(h.logs.String(), testKey) {
		t.Error("the API key is in the logs")
	}
}

// TestDeviceRemovedRestoredOfflineOnline: a device removed from the
// account loses its entities at the next list refresh and gets them back
// when it returns; a device that goes offline is shown unavailable and
// available again once it is back online.
func TestDeviceRemovedRestoredOfflineOnline(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessOptions{sim: cloudsim.Options{Catalogue: firstDevices(3)}})
	ids := h.ids()
	availability(h.watch, wait, "online", ids...)
	h.devices() // and their discovery configs, sent after the states
	devs := h.sim.Devices()
	gone, goneID := devs[0], ids[0]
	off, offID := devs[1], ids[1]
	var its []string
	for tp := range h.watch.topics("homeassistant/") {
		if strings.Contains(tp, "/"+goneID+"/") {
			its = append(its, tp)
		}
	}
	if len(its) == 0 {
		t.Fatalf("%s has no configs", goneID)
	}
	refresh := func(tr string) {
		t.Helper()
		h.publish("cloud2mqtt/bridge/request/refresh", `{"transaction":"`+tr+`"}`)
		r := h.watch.waitJSON(wait, "cloud2mqtt/bridge/response/refresh", func(m map[string]any) bool { return m["transaction"] == tr })
		if r["status"] != "ok" {
			t.Fatalf("refresh %s: %v", tr, r)
		}
	}
	configsOf := func(present bool) func() bool {
		return func() bool {
			for _, tp := range its {
				if p, _ := h.watch.get(tp); (p != "") != present {
					return false
				}
			}
			return true
		}
	}

	if err := h.sim.RemoveDevice(gone.Device); err != nil {
		t.Fatal(err)
	}
	if err := h.sim.SetOnline(off.Device, false); err != nil {
		t.Fatal(err)
	}
	refresh("removed")
	h.watch.until(wait, "the removed device's configs emptied", configsOf(false))
	h.watch.until(wait, "the removed device's availability cleared", func() bool {
		p, _ := h.watch.get("cloud2mqtt/" + goneID + "/availability")
		return p == ""
	})
	h.availabilityJumping(time.Second, "offline", offID)
	h.watch.waitJSON(wait, "cloud2mqtt/"+offID+"/state", func(m map[string]any) bool { return m["online"] == false })

	if err := h.sim.RestoreDevice(gone.Device); err != nil {
		t.Fatal(err)
	}
	if err := h.sim.SetOnline(off.Device, true); err != nil {
		t.Fatal(err)
	}
	refresh("restored")
	h.watch.until(wait, "the returned device's configs back", configsOf(true))
	// The offline device's reads back off: the clock jumps over them.
	h.availabilityJumping(time.Second, "online", goneID, offID)
}
