//go:build soak

// The long measurements: minutes each, figures that depend on the machine.
// They are compiled only with -tags soak; docs/benchmarks.md has the
// figures and the commands that reproduce them.

package soak

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/app"
	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/topic"
)

var (
	soakFor      = flag.Duration("soak", 30*time.Minute, "how long TestSoak runs")
	deviceCount  = flag.Int("devices", 1000, "simulated devices in TestSoak, TestFootprint and TestHeapProfile")
	commandRate  = flag.Float64("rate", 3, "random commands per second during TestSoak")
	latencyCount = flag.Int("samples", 300, "command latency samples in TestFootprint")
	heapProfile  = flag.String("heapprofile", "", "TestHeapProfile: write the in-process daemon's heap profile here (default: the test's artifact directory)")
	heapWait     = flag.Duration("heapwait", 70*time.Second, "TestHeapProfile: how long the daemon runs before the profile")
	cpuWindow    = flag.String("cpuwindow", "", "TestHeapProfile: also write a CPU profile of the minute after -heapwait here")
	sampleEvery  = flag.Duration("sample-every", 0, "how often TestSoak samples the daemon's memory (0: duration/15)")
)

// The measuring runs build the binary the way deploy/ does.
func init() { releaseBuild = true }

// TestSoak is the long run: go test -tags soak ./internal/soak -run TestSoak -soak=30m -v
func TestSoak(t *testing.T) {
	every := *sampleEvery
	if every <= 0 {
		every = max(*soakFor/15, 10*time.Second)
	}
	r := runLoad(t, loadOptions{devices: *deviceCount, poll: 10 * time.Second, duration: *soakFor,
		rate: *commandRate, every: every, warmup: min(2*time.Minute, *soakFor/5)})
	checkClean(t, r)
	w, e := r.warm, r.end
	t.Logf("start (after warm-up, t=%.0fs): rss=%.1f MB gc goal %.1f MB goroutines=%.0f", w.At.Seconds(), float64(w.RSSKB)/1024, w.NextGC/(1<<20), w.Goroutines)
	t.Logf("end   (t=%.0fs): rss=%.1f MB gc goal %.1f MB goroutines=%.0f", e.At.Seconds(), float64(e.RSSKB)/1024, e.NextGC/(1<<20), e.Goroutines)
	secs := (e.At - r.samples[0].At).Seconds()
	t.Logf("cpu: %.1f %% of a core on average; cloud requests %.1f/s", 100*float64(e.CPUTicks-r.samples[0].CPUTicks)/clockTicks/secs,
		float64(e.Requests-r.samples[0].Requests)/secs)
	// Flat memory: the live heap and RSS at the end within 20 % (plus a
	// little slack for GC timing) of the start, and no goroutine growth.
	if e.NextGC > 1.2*w.NextGC+2<<20 {
		t.Errorf("the heap goal (proportional to the live heap) grew from %.1f MB to %.1f MB", w.NextGC/(1<<20), e.NextGC/(1<<20))
	}
	if float64(e.RSSKB) > 1.2*float64(w.RSSKB)+4096 {
		t.Errorf("resident memory grew from %.1f MB to %.1f MB", float64(w.RSSKB)/1024, float64(e.RSSKB)/1024)
	}
	if e.Goroutines > w.Goroutines+10 {
		t.Errorf("goroutines grew from %.0f to %.0f", w.Goroutines, e.Goroutines)
	}
}

// TestFootprint measures the daemon at the default poll interval (60 s):
// go test -tags soak ./internal/soak -run TestFootprint -v [-devices=100]
func TestFootprint(t *testing.T) {
	n := *deviceCount
	w := newWorld(t, n)
	want := w.discoveryTopics()
	dir := artifacts(t)
	d := startDaemon(t, w.env(60*time.Second), filepath.Join(dir, "bridge.log"))
	d.waitHTTP(30 * time.Second)
	last := w.watch.discovered(want, 60*time.Second)
	disc := last.Sub(d.started)
	t.Logf("discovery: %d configs of %d devices published %.3f s after the daemon started", len(want), n, disc.Seconds())
	if disc > 3*time.Second {
		t.Errorf("discovery took %.3f s; goal ≤ 3 s", disc.Seconds())
	}

	var samples []sample
	look := func() sample {
		s := d.look()
		s.Requests, s.Limited = w.requests(), w.rateLimited()
		samples = append(samples, s)
		t.Log(s)
		return s
	}
	s0 := look()
	time.Sleep(60 * time.Second)
	s1 := look()
	time.Sleep(60 * time.Second)
	s2 := look()
	cpu := func(a, b sample) float64 {
		return 100 * (b.CPUTime - a.CPUTime).Seconds() / (b.At - a.At).Seconds()
	}
	goal := footprintGoal(n)
	t.Logf("cpu: first minute after discovery %.3f %% of a core; second minute %.3f %% (goal %.2f %%)", cpu(s0, s1), cpu(s1, s2), goal.cpu)
	if c := cpu(s1, s2); c > goal.cpu {
		t.Errorf("idle cpu %.3f %% of a core in the second minute; goal ≤ %.2f %% for %d devices", c, goal.cpu, n)
	}

	lat := commandLatency(t, w, *latencyCount)
	s3 := look()
	rss := max(s1.RSSKB, s2.RSSKB, s3.RSSKB)
	t.Logf("resident memory: %.1f MB at discovery, %.1f MB after 1 min, %.1f MB after 2 min, %.1f MB after the latency run",
		float64(s0.RSSKB)/1024, float64(s1.RSSKB)/1024, float64(s2.RSSKB)/1024, float64(s3.RSSKB)/1024)
	if rss > goal.rssMB*1024 {
		t.Errorf("resident memory %.1f MB; goal ≤ %d MB for %d devices", float64(rss)/1024, goal.rssMB, n)
	}
	p50, p99, worst := lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	t.Logf("command latency, MQTT publish → cloud control request, %d samples: p50 %.2f ms, p99 %.2f ms, max %.2f ms",
		len(lat), ms(p50), ms(p99), ms(worst))
	if p99 > 10*time.Millisecond {
		t.Errorf("command latency p99 %.2f ms; goal ≤ 10 ms", ms(p99))
	}
	if l := w.rateLimited(); l != 0 {
		t.Errorf("%d × 429; want 0", l)
	}
	if n := d.logs.count("error"); n != 0 {
		t.Errorf("%d error log lines; want 0", n)
	}
	d.stop()
	writeSamples(t, filepath.Join(dir, "samples.txt"), samples)
	t.Log(w.watch.traffic())
	t.Log(d.logs.summary())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// commandLatency sends n brightness commands, each to a different light
// (so no bucket of a device binds; 5 a second stays far below the account's
// 12/s), and measures from just before the MQTT publish to the time the
// simulator logged the control request. It returns the sorted latencies.
func commandLatency(t *testing.T, w *world, n int) []time.Duration {
	t.Helper()
	type pending struct {
		at    time.Time
		value int64
	}
	var lights []capability.Device
	for _, d := range w.devices {
		if c, ok := d.Capability(capability.InstanceBrightness); ok && c.Controllable() && d.Type == capability.DeviceLight {
			lights = append(lights, d)
		}
	}
	if len(lights) == 0 {
		t.Fatal("soak: no light with brightness")
	}
	n = min(n, len(lights))
	rng := rand.New(rand.NewPCG(7, 7))
	w.sim.ResetLog()
	sent := map[string]pending{}
	tk := time.NewTicker(200 * time.Millisecond)
	defer tk.Stop()
	for i := range n {
		<-tk.C
		d := lights[i]
		v := int64(1 + rng.IntN(100))
		tp := topic.New(baseTopic).SetInstance(topic.DeviceID(d.SKU, d.Device), capability.InstanceBrightness)
		at := time.Now()
		w.watch.publish(tp, fmt.Appendf(nil, "%d", v))
		sent[d.Device] = pending{at, v}
	}
	var lat []time.Duration
	deadline := time.Now().Add(10 * time.Second)
	for {
		lat = lat[:0]
		for _, r := range w.sim.ControlLog() {
			p, ok := sent[r.Device]
			if !ok || r.Instance != capability.InstanceBrightness || !capability.Equal(r.Value, p.value) {
				continue
			}
			lat = append(lat, r.Time.Sub(p.at))
		}
		if len(lat) >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(lat) < n {
		t.Fatalf("soak: only %d of %d latency commands reached the cloud", len(lat), n)
	}
	slices.Sort(lat)
	return lat
}

// TestHeapProfile runs the daemon in this process (app.Main, as the
// end-to-end tests do) with the footprint's account and writes a heap
// profile once it has settled, to find what holds the memory; with
// -cpuwindow it also profiles the CPU for the minute before that:
//
//	go test -tags soak ./internal/soak -run TestHeapProfile -heapprofile=/tmp/heap.pprof -cpuwindow=/tmp/cpu.pprof -v
//	go tool pprof -sample_index=inuse_space -top /tmp/heap.pprof
//
// The simulator and the broker client run in the same process; their
// allocations are in the profile too, under cloudsim and paho's watcher.
func TestHeapProfile(t *testing.T) {
	profile := *heapProfile
	if profile == "" {
		profile = filepath.Join(artifacts(t), "heap.pprof")
	}
	w := newWorld(t, *deviceCount)
	want := w.discoveryTopics()
	env := w.env(60 * time.Second)
	env["LOG_LEVEL"] = "warn"
	env["MQTT_CLIENT_ID"] = "soak-inproc"
	cfg, err := config.Load(env)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	logs := newLogCounter()
	pr, pw := io.Pipe()
	go logs.scan(pr)
	m := &app.Main{Config: cfg, Version: "soak", Log: zerolog.New(pw).Level(zerolog.WarnLevel)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	started := time.Now()
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
		pw.Close()
	}()
	time.Sleep(*heapWait)
	t.Logf("%d of %d discovery configs arrived in %s", w.watch.arrived(want), len(want), time.Since(started).Round(time.Second))
	if *cpuWindow != "" {
		f, err := os.Create(*cpuWindow)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		time.Sleep(60 * time.Second)
		pprof.StopCPUProfile()
		f.Close()
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("after GC: heap in use %.1f MB, %d objects; %s", float64(ms.HeapInuse)/(1<<20), ms.HeapObjects, logs.summary())
	f, err := os.Create(profile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		t.Fatal(err)
	}
	t.Logf("heap profile written to %s", profile)
}

// footprintGoal is the idle CPU (percent of a core) and resident memory
// a household of n devices at the default 60 s poll may use: half the
// Python peer's CPU at 100 devices; the memory of 100 and of 1000 devices
// is the budget in docs/benchmarks.md.
func footprintGoal(n int) (g struct {
	cpu   float64
	rssMB int64
}) {
	switch {
	case n <= 20:
		g.cpu, g.rssMB = 0.05, 15
	case n <= 100:
		g.cpu, g.rssMB = 0.11, 17
	default:
		g.cpu, g.rssMB = 0.5, 27
	}
	return g
}
