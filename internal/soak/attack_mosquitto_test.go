//go:build mosquitto

package soak

import (
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/mqtttest"
	"cloud2mqtt/internal/topic"
)

// Issue 20's attacks on the real binary, through mosquitto with its
// default settings.

// firstLight is a device of the world with a brightness.
func (w *world) firstLight(t *testing.T) capability.Device {
	t.Helper()
	for _, d := range w.devices {
		if c, ok := d.Capability(capability.InstanceBrightness); ok && c.Controllable() {
			return d
		}
	}
	t.Fatal("soak: no light in the household")
	return capability.Device{}
}

// waitFor polls cond every 20 ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("soak: %s: not within %s", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKillDuringCommandStreamSendsValuesInOrder: the bridge is killed
// (SIGKILL) in the middle of a stream of brightness commands and started
// again; the broker redelivers what it had not seen acknowledged. No value
// older than one already sent to the cloud for the light is sent again.
func TestKillDuringCommandStreamSendsValuesInOrder(t *testing.T) {
	if mqtttest.MosquittoPath() == "" {
		t.Fatal("mosquitto is not installed (Debian: apt-get install mosquitto); the mosquitto tag needs it")
	}
	w := newWorld(t, 5)
	light := w.firstLight(t)
	id := topic.DeviceID(light.SKU, light.Device)
	env := w.env(time.Minute)
	env["STATE_DIR"] = t.TempDir()
	env["LOG_LEVEL"] = "debug"
	dir := t.ArtifactDir()
	d := startDaemon(t, env, filepath.Join(dir, "first.log"))
	waitFor(t, 20*time.Second, "the light's state", func() bool {
		w.watch.mu.Lock()
		defer w.watch.mu.Unlock()
		_, ok := w.watch.first[baseTopic+"/"+id+"/state"]
		return ok
	})

	pub := mqtttest.NewClient(t, w.broker.URL(), mqtttest.ClientOptions{ClientID: "stream", Persistent: true, AutoReconnect: true}).Paho()
	var sent atomic.Int64
	send := func(from, to int) {
		for v := from; v <= to; v++ {
			tok := pub.Publish(baseTopic+"/"+id+"/set/brightness", 1, false, strconv.Itoa(v))
			if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
				t.Fatalf("publish %d: %v", v, tok.Error())
			}
			sent.Store(int64(v))
			if v%(*streamBurst) == 0 {
				time.Sleep(10 * time.Millisecond) // a user's slider, not a flood
			}
		}
	}
	send(1, 45)
	_ = d.cmd.Process.Kill()
	<-d.exited
	sentBefore := appliedValues(w, light)
	t.Logf("killed after %d commands; the cloud had been sent %v", sent.Load(), sentBefore)
	send(46, 60)
	d = startDaemon(t, env, filepath.Join(dir, "second.log"))
	send(61, 80)
	waitFor(t, 30*time.Second, "the light at 80", func() bool {
		v, ok := w.sim.Value(light.Device, capability.InstanceBrightness)
		return ok && capability.Equal(capability.NormalizeValue(v), int64(80))
	})
	values := appliedValues(w, light)
	t.Logf("values sent to the cloud, in order: %v", values)
	highest := int64(0)
	for i, v := range values {
		if v < highest {
			t.Errorf("value %d sent (the %d-th) after %d had been", v, i+1, highest)
		}
		highest = max(highest, v)
	}
}

// appliedValues are the brightness values the cloud was sent for dev, in
// order.
func appliedValues(w *world, dev capability.Device) []int64 {
	var out []int64
	for _, r := range w.sim.ControlLog() {
		if r.Device != dev.Device || r.Instance != capability.InstanceBrightness {
			continue
		}
		v, _ := capability.NormalizeValue(r.Value).(int64)
		out = append(out, v)
	}
	return out
}

var _ = fmt.Sprint
var streamBurst = flag.Int("burst", 1, "")
