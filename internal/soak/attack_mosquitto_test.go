//go:build mosquitto

package soak

import (
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/mqtttest"
	"cloud2mqtt/internal/testkit"
	"cloud2mqtt/internal/topic"
)

// Attacks on the real binary, through mosquitto with its default settings.

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
	testkit.WaitFor(t, 20*time.Second, "the light's state", func() bool {
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
	testkit.WaitFor(t, 30*time.Second, "the light at 80", func() bool {
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

var streamBurst = flag.Int("burst", 1, "commands sent between pauses of 10 ms in TestKillDuringCommandStreamSendsValuesInOrder")

// TestHugePayloadsAreRefusedAndMemoryReturns: four 50 MB commands sent at
// once (three to a light, one to an id no device has). The bridge stays
// up, answers each on <id>/error in at most 4 KiB, takes the next command,
// and its resident memory is back within 10 MB of before within a minute.
func TestHugePayloadsAreRefusedAndMemoryReturns(t *testing.T) {
	if mqtttest.MosquittoPath() == "" {
		t.Fatal("mosquitto is not installed (Debian: apt-get install mosquitto); the mosquitto tag needs it")
	}
	w := newWorld(t, 5)
	light := w.firstLight(t)
	id := topic.DeviceID(light.SKU, light.Device)
	d := startDaemon(t, w.env(time.Minute), filepath.Join(t.ArtifactDir(), "daemon.log"))
	testkit.WaitFor(t, 20*time.Second, "the light's state", func() bool {
		w.watch.mu.Lock()
		defer w.watch.mu.Unlock()
		_, ok := w.watch.first[baseTopic+"/"+id+"/state"]
		return ok
	})
	errs := mqtttest.NewClient(t, w.broker.URL(), mqtttest.ClientOptions{})
	errs.Subscribe(baseTopic+"/+/error", 0)
	before, _, _, err := rssKB(d.pid())
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("7", 50<<20)
	topics := []string{"/" + id + "/set/brightness", "/" + id + "/set", "/" + id + "/light/set", "/nosuch/set/brightness"}
	// Every publisher connects before the first 50 MiB goes out: a client
	// connecting while mosquitto reads them may wait past its connect
	// timeout on two busy cores (it did in .ci/run's race run).
	pubs := make([]*mqtttest.Client, len(topics))
	for i := range topics {
		pubs[i] = mqtttest.NewClient(t, w.broker.URL(), mqtttest.ClientOptions{})
	}
	var wg sync.WaitGroup
	for i, tp := range topics {
		wg.Go(func() { pubs[i].Publish(baseTopic+tp, huge, false, 1) })
	}
	wg.Wait()
	largest := 0
	for range topics {
		m, ok := errs.Next(30 * time.Second)
		if !ok {
			t.Fatalf("fewer than %d answers on <id>/error", len(topics))
		}
		largest = max(largest, len(m.Payload))
		if !strings.Contains(m.Payload, "over the 64 KiB") && !strings.Contains(m.Payload, "unknown device") {
			t.Errorf("answer on %s: %.300s", m.Topic, m.Payload)
		}
	}
	if largest > 4<<10 {
		t.Errorf("the largest answer on <id>/error is %d bytes; want at most 4 KiB", largest)
	}
	d.alive()
	pub := mqtttest.NewClient(t, w.broker.URL(), mqtttest.ClientOptions{})
	pub.Publish(baseTopic+"/"+id+"/set/brightness", "33", false, 1)
	testkit.WaitFor(t, 10*time.Second, "the next command applied", func() bool {
		v, ok := w.sim.Value(light.Device, capability.InstanceBrightness)
		return ok && capability.Equal(capability.NormalizeValue(v), int64(33))
	})
	var peak, after int64
	start := time.Now()
	testkit.WaitFor(t, time.Minute, fmt.Sprintf("resident memory back within 10 MB of %d kB", before), func() bool {
		rss, _, _, err := rssKB(d.pid())
		if err != nil {
			t.Fatal(err)
		}
		peak, after = max(peak, rss), rss
		return rss <= before+10<<10
	})
	t.Logf("resident memory: %d kB before, %d kB %s after the commands were answered (largest seen after: %d kB); largest answer %d bytes",
		before, after, time.Since(start).Round(time.Second), peak, largest)
}
