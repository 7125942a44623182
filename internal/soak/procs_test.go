//go:build soak

// Processes and their figures for the start and idle measurements: the
// simulated cloud as its own process (cmd/cloudsim), the accounts it
// serves, CPU time and context switches from /proc, perf stat, and the
// connections a client opens (ss).

package soak

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"cloud2mqtt/internal/cloudsim"
)

// binList is the list of bridge binaries the measurements alternate (-bins).
type binList []string

func (b *binList) String() string { return strings.Join(*b, ",") }
func (b *binList) Set(v string) error {
	for p := range strings.SplitSeq(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*b = append(*b, p)
		}
	}
	return nil
}

// bridgeBins are the binaries to alternate: -bins, else -bin or the
// checkout's release build. Each comes with a label for the tables: its
// directory's name and its own ("before/bridge"), or "checkout".
func bridgeBins(t *testing.T) (paths, labels []string) {
	t.Helper()
	paths = slices.Clone(bins)
	if len(paths) == 0 {
		paths = []string{bridgeBinary(t)}
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("soak: -bins: %v", err)
		}
		l := filepath.Base(filepath.Dir(p)) + "/" + filepath.Base(p)
		if *binary == "" && len(bins) == 0 {
			l = "checkout"
		}
		labels = append(labels, l)
	}
	return paths, labels
}

// writeCatalogue writes c's devices as a device-list file for cmd/cloudsim.
func writeCatalogue(t testing.TB, c *cloudsim.Catalogue, path string) {
	t.Helper()
	raws := make([]json.RawMessage, len(c.Devices))
	for i, d := range c.Devices {
		raws[i] = d.Raw
	}
	b, err := json.Marshal(map[string]any{"code": 200, "message": "success", "data": raws})
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		t.Fatalf("soak: write catalogue: %v", err)
	}
}

// lightsCatalogue is an account of n lights of the demo's H6008, each with
// its own id and name (as internal/app's TestFirstStatesOf100Lights).
func lightsCatalogue(t testing.TB, n int) *cloudsim.Catalogue {
	t.Helper()
	var raw json.RawMessage
	for _, d := range cloudsim.DemoCatalogue().Devices {
		if d.SKU == "H6008" {
			raw = d.Raw
		}
	}
	devices := make([]json.RawMessage, n)
	for i := range n {
		var d map[string]any
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		d["device"] = fmt.Sprintf("AA:BB:CC:DD:EE:%02X:%02X:01", i>>8, i&0xff)
		d["deviceName"] = fmt.Sprintf("Light %d", i)
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		devices[i] = b
	}
	b, _ := json.Marshal(devices)
	c, err := cloudsim.ParseCatalogue(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// simProc is cmd/cloudsim running as its own process.
type simProc struct {
	t    testing.TB
	cmd  *exec.Cmd
	url  string // http://127.0.0.1:port
	port string
	done chan struct{}
	err  error
}

// startCloudsim serves the catalogue file from a cmd/cloudsim process on a
// free loopback port and returns once it listens.
func startCloudsim(t testing.TB, bin, catalogue string, args ...string) *simProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0", "-key", soakKey, "-catalogue", catalogue}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("soak: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("soak: start cloudsim: %v", err)
	}
	s := &simProc{t: t, cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if _, a, ok := strings.Cut(sc.Text(), " devices at "); ok {
				addr <- a
			}
		}
		_, _ = io.Copy(io.Discard, out)
		s.err = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(s.stop)
	select {
	case s.url = <-addr:
	case <-s.done:
		t.Fatalf("soak: cloudsim exited at start: %v", s.err)
	case <-time.After(30 * time.Second):
		t.Fatal("soak: cloudsim did not say where it listens within 30 s")
	}
	s.port = s.url[strings.LastIndexByte(s.url, ':')+1:]
	return s
}

func (s *simProc) pid() int { return s.cmd.Process.Pid }

func (s *simProc) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	<-s.done
	if s.err != nil {
		s.t.Errorf("soak: cloudsim exited with %v", s.err)
	}
}

// procFigures is a look at a process from /proc: CPU time and context
// switches, its threads summed.
type procFigures struct {
	at        time.Time
	ticks     int64         // utime+stime of /proc/<pid>/stat (USER_HZ)
	cpu       time.Duration // the threads' schedstat, to the nanosecond
	voluntary int64         // voluntary_ctxt_switches: the thread slept (a wake-up follows)
	forced    int64         // nonvoluntary_ctxt_switches: preempted
	rssKB     int64         // VmRSS
}

func lookProc(t testing.TB, pid int) procFigures {
	t.Helper()
	f := procFigures{at: time.Now()}
	var err error
	if f.ticks, err = cpuTicks(pid); err != nil {
		t.Fatal(err)
	}
	if f.cpu, err = cpuTime(pid); err != nil {
		t.Fatal(err)
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatalf("soak: threads of %d: %v", pid, err)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				f.rssKB, _ = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			}
		}
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, task.Name()))
		if err != nil {
			continue // the thread ended meanwhile
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			switch k {
			case "voluntary_ctxt_switches":
				f.voluntary += n
			case "nonvoluntary_ctxt_switches":
				f.forced += n
			}
		}
	}
	return f
}

// idleFigures are what a process cost between two looks.
type idleFigures struct {
	secs       float64
	cpuPct     float64 // schedstat CPU time, percent of a core
	tickPct    float64 // utime+stime, percent of a core (10 ms resolution)
	switchesPS float64 // voluntary context switches a second: wake-ups
	forcedPS   float64
	perf       perfFigures
	reads      int   // state reads in the window
	rssKB      int64 // resident memory at the window's end
}

func between(a, b procFigures) idleFigures {
	s := b.at.Sub(a.at).Seconds()
	return idleFigures{
		secs:       s,
		cpuPct:     100 * (b.cpu - a.cpu).Seconds() / s,
		tickPct:    100 * float64(b.ticks-a.ticks) / clockTicks / s,
		switchesPS: float64(b.voluntary-a.voluntary) / s,
		forcedPS:   float64(b.forced-a.forced) / s,
		rssKB:      b.rssKB,
	}
}

// perfFigures are perf stat's software counters over a window.
type perfFigures struct {
	ok              bool
	taskClockMS     float64
	contextSwitches float64
}

// perfWorks says whether perf stat can count here (software events; this
// virtual machine has no hardware counters).
func perfWorks() bool {
	return exec.Command("perf", "stat", "-e", "task-clock,context-switches", "true").Run() == nil
}

// startPerf counts the process's task-clock and context switches until the
// returned function is called, which returns the counts.
func startPerf(t testing.TB, pid int) func() perfFigures {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("perf", "stat", "-x", ",", "-e", "task-clock,context-switches", "-p", strconv.Itoa(pid))
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Logf("soak: perf stat: %v", err)
		return func() perfFigures { return perfFigures{} }
	}
	return func() perfFigures {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
		var p perfFigures
		for line := range strings.SplitSeq(stderr.String(), "\n") {
			f := strings.Split(line, ",")
			if len(f) < 3 {
				continue
			}
			v, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				continue
			}
			switch {
			case strings.HasPrefix(f[2], "task-clock"):
				p.taskClockMS, p.ok = v, true
			case strings.HasPrefix(f[2], "context-switches"):
				p.contextSwitches = v
			}
		}
		if !p.ok {
			t.Logf("soak: perf stat said: %s", stderr.String())
		}
		return p
	}
}

// connCounter counts the TCP connections opened to a port while it runs:
// ss -E reports every socket as the kernel destroys it, so a client's
// connection is counted once it is closed (by the client, or at its exit).
type connCounter struct {
	cmd   *exec.Cmd
	out   bytes.Buffer
	ready bool
}

func countConns(port string) *connCounter {
	c := &connCounter{}
	args := []string{"-oL", "ss", "-t", "-E", "-n", "-H", "dport", "=", ":" + port}
	c.cmd = exec.Command("stdbuf", args...)
	c.cmd.Stdout = &c.out
	c.ready = c.cmd.Start() == nil
	return c
}

// stop ends ss and returns the number of distinct client sockets seen, or
// -1 when ss could not run.
func (c *connCounter) stop() int {
	if !c.ready {
		return -1
	}
	time.Sleep(300 * time.Millisecond) // the last sockets' destruction reaches ss
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	_ = c.cmd.Wait()
	seen := map[string]bool{}
	for line := range strings.SplitSeq(c.out.String(), "\n") {
		if f := strings.Fields(line); len(f) >= 5 {
			seen[f[3]] = true // the client's address:port
		}
	}
	return len(seen)
}

// established counts the connections to port open now.
func established(port string) int {
	out, err := exec.Command("ss", "-t", "-n", "-H", "state", "established", "dport", "=", ":"+port).Output()
	if err != nil {
		return -1
	}
	return strings.Count(string(out), "\n")
}

// loadAverages is /proc/loadavg's first three fields.
func loadAverages() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// spread is min / median / max of xs.
func spread(xs []float64) (lo, med, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Sorted(slices.Values(xs))
	med = s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[0], med, s[len(s)-1]
}
