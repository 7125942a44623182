package soak

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/cloud"
)

// artifacts is where the daemon's log and the samples are kept: with
// go test -artifacts -outputdir=DIR they stay in DIR.
func artifacts(t *testing.T) string { return t.ArtifactDir() }

type loadOptions struct {
	devices  int
	poll     time.Duration
	duration time.Duration
	rate     float64       // random commands per second
	every    time.Duration // sampling period
	warmup   time.Duration // the "start" sample is the first one at least this late
}

type loadResult struct {
	discovery  time.Duration
	samples    []sample
	warm, end  sample
	sent       int
	applied    int
	refused    int
	reads      int // state reads from the first sample to the end
	errorMsgs  int
	errorTexts map[string]int
	logs       *logCounter
}

// runLoad starts a world and the daemon, waits for discovery, then sends
// random commands and samples the daemon until the duration is over.
func runLoad(t *testing.T, o loadOptions) loadResult {
	w := newWorld(t, o.devices)
	want := w.discoveryTopics()
	dir := artifacts(t)
	d := startDaemon(t, w.env(o.poll), filepath.Join(dir, "bridge.log"))
	d.waitHTTP(30 * time.Second)
	last := w.watch.discovered(want, 60*time.Second)
	res := loadResult{discovery: last.Sub(d.started), logs: d.logs}
	t.Logf("%d devices, %d discovery configs published %.3f s after the daemon started", o.devices, len(want), res.discovery.Seconds())

	look := func() sample {
		s := d.look()
		s.Requests, s.Limited = w.requests(), w.rateLimited()
		res.samples = append(res.samples, s)
		t.Log(s)
		return s
	}
	look()
	rng := rand.New(rand.NewPCG(1, uint64(o.devices)))
	before := w.sim.Counts()
	var cmdTick <-chan time.Time
	if o.rate > 0 {
		tk := time.NewTicker(time.Duration(float64(time.Second) / o.rate))
		defer tk.Stop()
		cmdTick = tk.C
	}
	sampleTick := time.NewTicker(o.every)
	defer sampleTick.Stop()
	end := time.After(o.duration)
	warmSet := false
loop:
	for {
		select {
		case <-cmdTick:
			c := randomCommand(rng, w.devices)
			w.watch.publish(c.topic(), c.payload())
			res.sent++
		case <-sampleTick.C:
			s := look()
			if !warmSet && s.At >= o.warmup {
				res.warm, warmSet = s, true
			}
		case <-end:
			break loop
		}
	}
	// Let the last commands land: until the cloud has answered every
	// command sent (one superseded by a newer one never gets there, so
	// at most two poll intervals, which also lets confirming reads finish).
	settle := time.After(min(2*o.poll, 20*time.Second))
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
settling:
	for w.sim.Counts().Total(cloud.EndpointControl)-before.Total(cloud.EndpointControl) < res.sent {
		select {
		case <-settle:
			break settling
		case <-tick.C:
		}
	}
	res.end = look()
	if !warmSet {
		res.warm = res.samples[0]
	}
	after := w.sim.Counts()
	res.applied = after.Of(cloud.EndpointControl, 200) - before.Of(cloud.EndpointControl, 200)
	res.refused = after.Total(cloud.EndpointControl) - before.Total(cloud.EndpointControl) - res.applied
	res.reads = after.Total(cloud.EndpointState) - before.Total(cloud.EndpointState)
	res.errorMsgs, res.errorTexts = w.watch.errors()
	d.stop()
	writeSamples(t, filepath.Join(dir, "samples.txt"), res.samples)
	t.Logf("commands: %d sent, %d applied by the cloud, %d refused; %d messages on <id>/error; %d state reads", res.sent, res.applied, res.refused, res.errorMsgs, res.reads)
	t.Logf("cloud: %d requests, %d × 429 (%v)", w.requests(), w.rateLimited(), w.sim.Counts().RateLimited)
	t.Log(w.watch.traffic())
	t.Log(d.logs.summary())
	return res
}

func writeSamples(t *testing.T, path string, ss []sample) {
	var b strings.Builder
	for _, s := range ss {
		b.WriteString(s.String())
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Errorf("soak: write samples: %v", err)
	}
}

// checkClean asserts what every run must show: no 429, no error log line,
// no recovered panic, no rejected command, every command applied.
func checkClean(t *testing.T, r loadResult) {
	t.Helper()
	if r.end.Limited != 0 {
		t.Errorf("the cloud answered 429 %d times; want 0", r.end.Limited)
	}
	if n := r.logs.count("error"); n != 0 {
		t.Errorf("%d error log lines; want 0:\n%s", n, r.logs.summary())
	}
	if n := r.logs.bugCount(); n != 0 {
		t.Errorf(`%d "bug:" log lines (a handler panicked); want 0`, n)
	}
	if r.errorMsgs != 0 {
		t.Errorf("%d messages on <id>/error for valid commands; want 0: %v", r.errorMsgs, r.errorTexts)
	}
	// A command may be superseded by a newer one for the same instance
	// before it is sent; with a few random commands a second over many
	// devices that is rare.
	if r.applied < r.sent*99/100 || r.refused != 0 {
		t.Errorf("%d commands sent, %d applied, %d refused by the cloud; want all applied", r.sent, r.applied, r.refused)
	}
}

// TestSmoke runs the whole harness briefly on a small account, so that the
// long runs below keep working: 40 devices, reads every 2 s, 5 commands a
// second for 4 s.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the daemon binary and a broker")
	}
	r := runLoad(t, loadOptions{devices: 40, poll: 2 * time.Second, duration: 4 * time.Second, rate: 5, every: 2 * time.Second})
	checkClean(t, r)
	if r.sent < 15 {
		t.Errorf("only %d commands sent in 4 s at 5/s", r.sent)
	}
	// The devices are polled: in 4 s at least one more round (each read
	// 2-3 s after its last answer), less a margin for a busy machine.
	if r.reads < 30 {
		t.Errorf("%d state reads in 4+ s after discovery for 40 devices read every 2 s; want at least 30", r.reads)
	}
}
