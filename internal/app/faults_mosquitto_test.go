//go:build mosquitto

package app_test

import (
	"fmt"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/mqtttest"
)

// Needs mosquitto (the embedded broker keeps no session across a restart):
// -tags mosquitto, which .ci/run sets.

// TestBrokerKilledTenTimesDuringCommandStream: a client streams commands to
// three lights while a persistent broker is killed and restarted ten times,
// alternately with the bridge connected and cut off first. Every acknowledged
// command reaches the cloud, each light ends at the last value sent, and after
// every restart a fresh subscriber sees the bridge online with everything retained.
// Both clients reach the broker through a proxy held during restarts, and rounds
// are paced a few seconds apart, so that paho's reconnect back-off stays short.
func TestBrokerKilledTenTimesDuringCommandStream(t *testing.T) {
	if mqtttest.MosquittoPath() == "" {
		t.Fatal("mosquitto is not installed (Debian: apt-get install mosquitto); the mosquitto tag needs it")
	}
	t.Parallel()
	h := startHarness(t, harnessOptions{
		sim:    cloudsim.Options{Catalogue: firstDevices(3)},
		broker: []mqtttest.Option{mqtttest.WithPersistence()},
		proxy:  true,
	})
	lights := h.sim.Devices()
	availability(h.watch, wait, "online", h.ids()...)
	h.devices() // and their discovery configs, sent after the states
	configs := len(h.watch.topics("homeassistant/"))
	if configs == 0 {
		t.Fatal("no discovery configs")
	}
	streamProxy := mqtttest.NewProxy(t, h.broker.Addr())
	s := startStream(t, streamProxy.URL(), lights)
	acked := func(n int) {
		t.Helper()
		target := len(s.commands()) + n
		h.watch.until(wait, fmt.Sprintf("%d more commands acknowledged", n), func() bool { return len(s.commands()) >= target })
	}
	restart := func() {
		h.proxy.Hold(true)
		streamProxy.Hold(true)
		h.broker.Restart()
		h.proxy.Hold(false)
		streamProxy.Hold(false)
	}
	// paho resets its back-off when a client's connection drops more than
	// 6 s after its previous drop: the stream's drops are the restarts, the
	// bridge's the restarts while it is connected and the cuts.
	const spacing = 6300 * time.Millisecond
	var streamLost, bridgeLost time.Time
	after := func(lost ...time.Time) {
		for _, l := range lost {
			if d := time.Until(l.Add(spacing)); d > 0 {
				time.Sleep(d) // pacing (see above), not waiting for an outcome
			}
		}
	}
	for round := range 10 {
		acked(3)
		if round%2 == 0 {
			// Killed mid-stream, the bridge connected.
			after(streamLost, bridgeLost)
			streamLost, bridgeLost = time.Now(), time.Now()
			restart()
		} else {
			// The bridge cut off: the broker queues the commands for it.
			// Its reconnection waits in the held proxy.
			after(bridgeLost)
			bridgeLost = time.Now()
			h.proxy.Hold(true)
			h.proxy.Sever()
			h.watch.until(wait, "the bridge's will", func() bool {
				p, _ := h.watch.get("cloud2mqtt/bridge/state")
				return p == "offline"
			})
			acked(3)
			s.hold()
			s.fence()
			after(streamLost)
			streamLost = time.Now()
			restart()
			s.resume()
		}
		restored(t, h, fmt.Sprintf("fresh-%d", round), configs)
		h.waitCommands(fmt.Sprintf("round %d: every acknowledged command applied", round), s.commands())
	}
	s.stop()
	all := s.commands()
	h.waitCommands("every acknowledged command applied", all)
	last := map[string]command{}
	for _, c := range all {
		last[c.device] = c
	}
	for _, c := range last {
		h.watch.until(wait, c.id+" at its last value", func() bool {
			v, ok := h.sim.Value(c.device, c.instance)
			return ok && capability.Equal(capability.NormalizeValue(v), capability.NormalizeValue(c.value))
		})
		h.watch.waitJSON(wait, "cloud2mqtt/"+c.id+"/state", func(m map[string]any) bool {
			return m[c.instance] == float64(c.value.(int64))
		})
	}
	t.Logf("%d commands acknowledged, all applied", len(all))
	if n := h.sim.Counts().RateLimited; len(n) != 0 {
		t.Errorf("the cloud answered 429: %v", n)
	}
}
