//go:build soak

package soak

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/mqtttest"
)

var (
	idleRounds  = flag.Int("idle-rounds", 3, "TestIdleRatio: rounds; each runs the bare reader and every bridge binary once, in alternating order")
	idleSettle  = flag.Duration("idle-settle", 70*time.Second, "TestIdleRatio: time from a process's exec to the start of its measured window (the bridge's start and first periodic reads are over by then)")
	idleWindow  = flag.Duration("idle-window", 60*time.Second, "TestIdleRatio: the measured window")
	readerModes = flag.String("reader-modes", "timers", "TestIdleRatio: the bare reader's ways of spreading its reads to measure, comma-separated: timers, ticker, grid (see internal/soak/barereader)")
	readerEnv   = flag.String("reader-env", "", "TestIdleRatio: extra environment of the bare reader, KEY=VALUE[,KEY=VALUE...], e.g. GOMAXPROCS=1")
	idlePerf    = flag.Bool("idle-perf", true, "TestIdleRatio: also count task-clock and context switches with perf stat over the window (when perf works)")
)

// subject is one process TestIdleRatio measures.
type subject struct {
	label string
	bin   string
	mode  string // the bare reader's; "" for a bridge
}

// TestIdleRatio measures the bridge's idle cost as a
// ratio against a bare Go program making the same state reads at the same
// pace (internal/soak/barereader), each its own process against its own
// cmd/cloudsim serving the footprint's account (-devices, 1000 by default,
// read every 60 s), alternated in one sitting. Over the same window after
// the start settles (-idle-settle from exec, -idle-window long) it takes
// each process's CPU time (its threads' schedstat, and utime+stime), its
// context switches (/proc/<pid>/task/*/status: voluntary ones are
// wake-ups) and, when perf works, perf stat's task-clock and
// context-switches; also the simulator's CPU time, and the state reads
// made in the window.
//
//	go test -tags soak ./internal/soak -run TestIdleRatio -v -count=1 -timeout 60m \
//	    -args -idle-rounds=3 [-bins=/tmp/before/bridge,/tmp/after/bridge] [-reader-modes=timers,ticker]
func TestIdleRatio(t *testing.T) {
	n := *deviceCount
	paths, labels := bridgeBins(t)
	tools := t.TempDir()
	simBin := buildTool(t, "cloud2mqtt/cmd/cloudsim", tools, true)
	readerBin := buildTool(t, "cloud2mqtt/internal/soak/barereader", tools, true)
	catalogue := filepath.Join(tools, "household.json")
	writeCatalogue(t, generateCatalogue(t, n), catalogue)
	usePerf := *idlePerf && perfWorks()

	var subjects []subject
	for m := range strings.SplitSeq(*readerModes, ",") {
		m = strings.TrimSpace(m)
		subjects = append(subjects, subject{label: "bare reader (" + m + ")", bin: readerBin, mode: m})
	}
	for i, p := range paths {
		subjects = append(subjects, subject{label: "bridge " + labels[i], bin: p})
	}
	t.Logf("%d devices, 60 s poll, window %s from %s after exec, %d rounds; perf stat: %v; load average at the start: %s",
		n, *idleWindow, *idleSettle, *idleRounds, usePerf, loadAverages())
	results := make([][]idleFigures, len(subjects))
	for r := range *idleRounds {
		for k := range subjects {
			i := k
			if r%2 == 1 {
				i = len(subjects) - 1 - k
			}
			s := subjects[i]
			load := loadAverages()
			f, sim := measureIdle(t, s, simBin, catalogue, n, usePerf, fmt.Sprintf("idle-%d-%d", r, i))
			results[i] = append(results[i], f)
			t.Logf("round %d, %s: cpu %.3f %% of a core (utime+stime %.3f %%), %.1f wake-ups/s (voluntary switches; %.1f forced), perf %s; %d state reads (%.2f/s); resident %.1f MB; simulator cpu %.3f %%; load %s",
				r+1, s.label, f.cpuPct, f.tickPct, f.switchesPS, f.forcedPS, f.perf.String(f.secs), f.reads, float64(f.reads)/f.secs, float64(f.rssKB)/1024, sim.cpuPct, load)
		}
	}
	report(t, subjects, results)
	t.Logf("load average at the end: %s", loadAverages())
}

// measureIdle runs one subject against a fresh simulator and returns its
// figures over the window, and the simulator's.
func measureIdle(t *testing.T, s subject, simBin, catalogue string, n int, usePerf bool, name string) (f, simF idleFigures) {
	t.Helper()
	sim := startCloudsim(t, simBin, catalogue)
	defer sim.stop()
	expected := float64(n) * idleWindow.Seconds() / 60
	execAt := time.Now()
	var pid int
	var reads func() int
	if s.mode != "" {
		var env []string
		for kv := range strings.SplitSeq(*readerEnv, ",") {
			if strings.Contains(kv, "=") {
				env = append(env, kv)
			}
		}
		p := startReader(t, s.bin, sim.url, 60*time.Second, s.mode, env)
		defer p.stop()
		pid = p.pid()
		reads = func() int {
			r, e := p.counts()
			if e != 0 {
				t.Errorf("%s: %d failed reads", s.label, e)
			}
			return r
		}
	} else {
		broker := mqtttest.Start(t)
		defer broker.Stop()
		env := map[string]string{
			"CLOUD_BASE_URL": sim.url,
			"CLOUD_API_KEY":  soakKey,
			"MQTT_URL":       broker.URL(),
			"MQTT_CLIENT_ID": "soak-bridge",
			"POLL_INTERVAL":  "60s",
		}
		d := startDaemonBin(t, s.bin, env, filepath.Join(artifacts(t), name+".log"))
		defer d.stop()
		d.waitHTTP(30 * time.Second)
		pid = d.pid()
		reads = func() int {
			m, err := d.metrics()
			if err != nil {
				t.Fatalf("%s: /metrics: %v", s.label, err)
			}
			sum := 0.0
			for k, v := range m {
				if strings.HasPrefix(k, `cloud2mqtt_cloud_requests_total{endpoint="state"`) {
					sum += v
				}
			}
			return int(sum)
		}
		defer func() {
			if e := d.logs.count("error"); e != 0 {
				t.Errorf("%s: %d error log lines", s.label, e)
			}
		}()
	}
	time.Sleep(*idleSettle - time.Since(execAt))
	// The subject's own counts are read outside the window: asking costs it
	// a little (a scrape of /metrics, a signal).
	r0 := reads()
	a, simA := lookProc(t, pid), lookProc(t, sim.pid())
	stopPerf := func() perfFigures { return perfFigures{} }
	if usePerf {
		stopPerf = startPerf(t, pid)
	}
	time.Sleep(*idleWindow)
	pf := stopPerf()
	b, simB := lookProc(t, pid), lookProc(t, sim.pid())
	f = between(a, b)
	f.perf = pf
	f.reads = reads() - r0
	if float64(f.reads) < 0.9*expected || float64(f.reads) > 1.1*expected {
		t.Errorf("%s made %d state reads in the window; the same pace is %.0f (%d devices every 60 s)", s.label, f.reads, expected, n)
	}
	return f, between(simA, simB)
}

// String is perf's figures over secs seconds.
func (p perfFigures) String(secs float64) string {
	if !p.ok {
		return "-"
	}
	return fmt.Sprintf("task-clock %.3f %%, %.1f context switches/s", p.taskClockMS/10/secs, p.contextSwitches/secs)
}

// report logs each subject's medians and the ratios of every bridge to
// every bare reader, round by round and of the medians.
func report(t *testing.T, subjects []subject, results [][]idleFigures) {
	t.Helper()
	col := func(i int, f func(idleFigures) float64) (lo, med, hi float64) {
		var xs []float64
		for _, r := range results[i] {
			xs = append(xs, f(r))
		}
		return spread(xs)
	}
	cpu := func(f idleFigures) float64 { return f.cpuPct }
	for i, s := range subjects {
		c0, c1, c2 := col(i, cpu)
		_, tk, _ := col(i, func(f idleFigures) float64 { return f.tickPct })
		w0, w1, w2 := col(i, func(f idleFigures) float64 { return f.switchesPS })
		_, pc, _ := col(i, func(f idleFigures) float64 { return f.perf.taskClockMS / 10 / f.secs })
		_, ps, _ := col(i, func(f idleFigures) float64 { return f.perf.contextSwitches / f.secs })
		t.Logf("SUMMARY %s: cpu min %.3f / median %.3f / max %.3f %% (utime+stime median %.3f %%); wake-ups %.1f / %.1f / %.1f a second; perf median task-clock %.3f %%, %.1f context switches/s",
			s.label, c0, c1, c2, tk, w0, w1, w2, pc, ps)
	}
	for i, b := range subjects {
		if b.mode != "" {
			continue
		}
		for j, r := range subjects {
			if r.mode == "" {
				continue
			}
			var ratios, wakes []float64
			for k := range min(len(results[i]), len(results[j])) {
				ratios = append(ratios, results[i][k].cpuPct/results[j][k].cpuPct)
				wakes = append(wakes, results[i][k].switchesPS/results[j][k].switchesPS)
			}
			r0, r1, r2 := spread(ratios)
			w0, w1, w2 := spread(wakes)
			_, bc, _ := col(i, cpu)
			_, rc, _ := col(j, cpu)
			t.Logf("RATIO %s / %s: cpu %.2f× (rounds: min %.2f / median %.2f / max %.2f; of the medians %.2f×); wake-ups %.2f× (%.2f–%.2f)",
				b.label, r.label, r1, r0, r1, r2, bc/rc, w1, w0, w2)
		}
	}
}
