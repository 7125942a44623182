package soak

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The daemon binary is built once per test run, from this checkout.
var (
	// releaseBuild: build the binary as deploy/ does (-trimpath, stripped);
	// the long measurements set it, the smoke test reuses the test cache.
	releaseBuild bool
	buildOnce    sync.Once
	buildDir     string
	buildPath    string
	buildErr     error
)

func bridgeBinary(t testing.TB) string {
	t.Helper()
	if *binary != "" {
		return *binary
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "soak-bridge-")
		if buildErr != nil {
			return
		}
		buildPath = filepath.Join(buildDir, "bridge")
		// The measuring runs build the binary the way deploy/ does; the
		// smoke test reuses the test build's cache (-trimpath would
		// compile everything again).
		args := []string{"build", "-ldflags=-X main.version=soak"}
		if releaseBuild {
			args = []string{"build", "-trimpath", "-ldflags=-s -w -X main.version=soak"}
		}
		cmd := exec.Command("go", append(args, "-o", buildPath, "cloud2mqtt/cmd/bridge")...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("soak: go build cmd/bridge: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

func removeBinary() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

// daemon is the real bridge binary running as a child process.
type daemon struct {
	t        testing.TB
	cmd      *exec.Cmd
	started  time.Time
	httpAddr string
	logs     *logCounter
	logDone  chan struct{}
	exited   chan struct{}
	waitErr  error
}

// startDaemon runs the bridge with exactly this environment (plus PATH and
// HOME), its JSON log written to logPath and counted.
func startDaemon(t testing.TB, env map[string]string, logPath string) *daemon {
	t.Helper()
	return startDaemonBin(t, bridgeBinary(t), env, logPath)
}

// startDaemonBin is startDaemon with the binary to run.
func startDaemonBin(t testing.TB, bin string, env map[string]string, logPath string) *daemon {
	t.Helper()
	addr := freeAddr(t)
	full := map[string]string{
		"PATH":       os.Getenv("PATH"),
		"HOME":       os.Getenv("HOME"),
		"LOG_FORMAT": "json",
		"HTTP_ADDR":  addr,
	}
	for k, v := range env {
		full[k] = v
	}
	for kv := range strings.SplitSeq(*daemonEnv, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			full[k] = v
		}
	}
	var environ []string
	for k, v := range full {
		environ = append(environ, k+"="+v)
	}
	sort.Strings(environ)

	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("soak: create daemon log: %v", err)
	}
	cmd := exec.Command(bin)
	cmd.Env = environ
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatalf("soak: %v", err)
	}
	d := &daemon{t: t, cmd: cmd, httpAddr: addr, logs: newLogCounter(), logDone: make(chan struct{}), exited: make(chan struct{})}
	d.started = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("soak: start bridge: %v", err)
	}
	go func() {
		defer close(d.logDone)
		defer logFile.Close()
		d.logs.scan(io.TeeReader(stderr, logFile))
	}()
	go func() {
		<-d.logDone // Wait closes the pipe: read it to the end first
		d.waitErr = cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() { d.stop() })
	return d
}

// stop sends SIGTERM and waits for a clean exit.
func (d *daemon) stop() {
	select {
	case <-d.exited:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		if d.waitErr != nil {
			d.t.Errorf("bridge exited with %v after SIGTERM", d.waitErr)
		}
	case <-time.After(20 * time.Second):
		d.t.Errorf("bridge did not stop within 20 s of SIGTERM; killing it")
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

// alive fails the test when the daemon has exited.
func (d *daemon) alive() {
	d.t.Helper()
	select {
	case <-d.exited:
		d.t.Fatalf("bridge exited early: %v; log:\n%s", d.waitErr, d.logs.tail())
	default:
	}
}

// waitHTTP waits for the metrics endpoint to answer.
func (d *daemon) waitHTTP(timeout time.Duration) {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		d.alive()
		if _, err := d.metrics(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("bridge's /metrics did not answer within %s; log:\n%s", timeout, d.logs.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// metrics reads the daemon's Prometheus metrics (unlabelled samples only).
func (d *daemon) metrics() (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.httpAddr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("soak: /metrics answered %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		out[name] = f
	}
	return out, sc.Err()
}

// sample is one look at the daemon from outside.
type sample struct {
	At         time.Duration // since the daemon started
	RSSKB      int64         // VmRSS of /proc/<pid>/status
	AnonKB     int64         // RssAnon: the heap, stacks and runtime (VmRSS = RssAnon + RssFile)
	FileKB     int64         // RssFile: the pages of the binary in memory
	CPUTicks   int64         // utime+stime of /proc/<pid>/stat
	CPUTime    time.Duration // the threads' schedstat: nanoseconds
	HeapAlloc  float64       // go_memstats_heap_alloc_bytes
	HeapInuse  float64       // go_memstats_heap_inuse_bytes
	NextGC     float64       // go_memstats_next_gc_bytes: the GC's heap goal, (1 + GOGC/100) × the live heap at the last GC
	Sys        float64       // go_memstats_sys_bytes
	Goroutines float64
	Requests   int // cloud requests so far (simulator)
	Limited    int // 429s so far (simulator)
}

// look reads RSS and CPU first (scraping /metrics costs the daemon a little
// memory and CPU), then the Go runtime's own figures.
func (d *daemon) look() sample {
	d.t.Helper()
	d.alive()
	s := sample{At: time.Since(d.started)}
	var err error
	if s.RSSKB, s.AnonKB, s.FileKB, err = rssKB(d.pid()); err != nil {
		d.t.Fatalf("soak: %v", err)
	}
	if s.CPUTime, err = cpuTime(d.pid()); err != nil {
		d.t.Fatal(err)
	}
	if s.CPUTicks, err = cpuTicks(d.pid()); err != nil {
		d.t.Fatalf("soak: %v", err)
	}
	m, err := d.metrics()
	if err != nil {
		d.t.Fatalf("soak: read /metrics: %v", err)
	}
	s.HeapAlloc = m["go_memstats_heap_alloc_bytes"]
	s.HeapInuse = m["go_memstats_heap_inuse_bytes"]
	s.NextGC = m["go_memstats_next_gc_bytes"]
	s.Sys = m["go_memstats_sys_bytes"]
	s.Goroutines = m["go_goroutines"]
	return s
}

func (s sample) String() string {
	return fmt.Sprintf("t=%7.1fs rss=%6.1fMB (anon %5.1f file %5.1f) heap_alloc=%5.1fMB heap_inuse=%5.1fMB gc_goal=%5.1fMB sys=%5.1fMB goroutines=%4.0f cpu=%6.2fs requests=%d 429s=%d",
		s.At.Seconds(), float64(s.RSSKB)/1024, float64(s.AnonKB)/1024, float64(s.FileKB)/1024, s.HeapAlloc/(1<<20), s.HeapInuse/(1<<20), s.NextGC/(1<<20),
		s.Sys/(1<<20), s.Goroutines, float64(s.CPUTicks)/clockTicks, s.Requests, s.Limited)
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// rssKB returns VmRSS, RssAnon and RssFile of /proc/<pid>/status, in KiB.
func rssKB(pid int) (rss, anon, file int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0, fmt.Errorf("soak: read status of %d: %w", pid, err)
	}
	fields := map[string]*int64{"VmRSS:": &rss, "RssAnon:": &anon, "RssFile:": &file}
	found := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || fields[f[0]] == nil {
			continue
		}
		if *fields[f[0]], err = strconv.ParseInt(f[1], 10, 64); err != nil {
			return 0, 0, 0, fmt.Errorf("soak: /proc/%d/status: %s: %w", pid, line, err)
		}
		found++
	}
	if found != len(fields) {
		return 0, 0, 0, fmt.Errorf("soak: /proc/%d/status lacks VmRSS, RssAnon or RssFile", pid)
	}
	return rss, anon, file, nil
}

// cpuTime is the process's time on a CPU to the nanosecond: the sum of its
// threads' /proc/<pid>/task/<tid>/schedstat (the first field). /proc's
// ticks (10 ms) are too coarse for a daemon that uses a tenth of a percent
// of a core: a minute holds six of them.
func cpuTime(pid int) (time.Duration, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, fmt.Errorf("soak: threads of %d: %w", pid, err)
	}
	var total int64
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, task.Name()))
		if err != nil {
			continue // the thread ended meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("soak: %s schedstat: %w", task.Name(), err)
		}
		total += ns
	}
	return time.Duration(total), nil
}

func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("soak: read stat of %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces: count from the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("soak: unreadable /proc/<pid>/stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, errors.New("soak: short /proc/<pid>/stat")
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("soak: /proc/<pid>/stat times: %w", err)
	}
	return u + s, nil
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("soak: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// logCounter reads the daemon's JSON log: lines by level, the messages of
// warnings and errors, and any "bug:" line (a recovered panic).
type logCounter struct {
	mu       sync.Mutex
	byLevel  map[string]int
	messages map[string]int // "level: message" of warn and above
	bugs     int
	lines    int
	last     []string
}

func newLogCounter() *logCounter {
	return &logCounter{byLevel: map[string]int{}, messages: map[string]int{}}
}

func (l *logCounter) scan(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		var e struct {
			Level   string `json:"level"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal([]byte(line), &e)
		l.mu.Lock()
		l.lines++
		l.byLevel[e.Level]++
		switch e.Level {
		case "warn", "error", "fatal", "panic":
			l.messages[e.Level+": "+e.Message]++
		}
		if strings.Contains(line, "bug:") {
			l.bugs++
		}
		l.last = append(l.last, line)
		if len(l.last) > 40 {
			l.last = l.last[1:]
		}
		l.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r)
}

func (l *logCounter) count(level string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byLevel[level]
}

func (l *logCounter) bugCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bugs
}

// summary lists the warning and error messages by count.
func (l *logCounter) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var keys []string
	for k := range l.messages {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%d log lines:", l.lines)
	for _, lv := range []string{"debug", "info", "warn", "error"} {
		fmt.Fprintf(&b, " %s=%d", lv, l.byLevel[lv])
	}
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %5d × %s", l.messages[k], k)
	}
	return b.String()
}

func (l *logCounter) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.last, "\n")
}
