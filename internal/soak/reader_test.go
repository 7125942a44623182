package soak

import (
	"bufio"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/cloudsim"
)

// buildTool builds a main package of this module into dir: the release
// way (as deploy/ builds the daemon) for the measurements, the test cache's
// way otherwise.
func buildTool(t testing.TB, pkg, dir string, release bool) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	args := []string{"build"}
	if release {
		args = append(args, "-trimpath", "-ldflags=-s -w")
	}
	cmd := exec.Command("go", append(args, "-o", out, pkg)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("soak: go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// readerProc is internal/soak/barereader running as its own process.
type readerProc struct {
	t       testing.TB
	cmd     *exec.Cmd
	lines   chan string   // its stdout, line by line
	done    chan struct{} // closed once it has exited
	waitErr error
}

// startReader runs the bare reader against the cloud at url and returns
// once it has scheduled every device (its "ready" line).
func startReader(t testing.TB, bin, url string, interval time.Duration, mode string, env []string) *readerProc {
	t.Helper()
	cmd := exec.Command(bin, "-url", url, "-key", soakKey, "-interval", interval.String(), "-mode", mode)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("soak: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("soak: start %s: %v", bin, err)
	}
	p := &readerProc{t: t, cmd: cmd, lines: make(chan string, 16), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, stdout)
		close(p.lines)
		p.waitErr = cmd.Wait() // after the pipe is read to its end
		close(p.done)
	}()
	t.Cleanup(p.stop)
	if line := p.next(30 * time.Second); !strings.HasPrefix(line, "ready ") {
		t.Fatalf("soak: the bare reader said %q; want ready <devices>", line)
	}
	return p
}

func (p *readerProc) pid() int { return p.cmd.Process.Pid }

// next is the reader's next line of output, or a failure after timeout.
func (p *readerProc) next(timeout time.Duration) string {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			<-p.done
			p.t.Fatalf("soak: the bare reader exited: %v", p.waitErr)
		}
		return line
	case <-time.After(timeout):
		p.t.Fatalf("soak: the bare reader said nothing within %s", timeout)
		return ""
	}
}

// counts asks the reader (SIGUSR1) how many reads it has made and how many
// failed.
func (p *readerProc) counts() (reads, errs int) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		p.t.Fatalf("soak: signal the bare reader: %v", err)
	}
	line := p.next(10 * time.Second)
	if _, err := fmt.Sscanf(line, "reads=%d errors=%d", &reads, &errs); err != nil {
		p.t.Fatalf("soak: the bare reader's counts %q: %v", line, err)
	}
	return reads, errs
}

// stop ends the reader (SIGTERM) and waits for it.
func (p *readerProc) stop() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for range p.lines {
	}
	<-p.done
	if p.waitErr != nil {
		p.t.Errorf("soak: the bare reader exited with %v", p.waitErr)
	}
}

// TestBareReader: the yardstick of TestIdleRatio reads every device once
// per interval in each of its modes, no faster, and every read succeeds.
func TestBareReader(t *testing.T) {
	bin := buildTool(t, "cloud2mqtt/internal/soak/barereader", t.TempDir(), false)
	for _, mode := range []string{"timers", "ticker", "grid"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			const n = 6
			sim := cloudsim.New(cloudsim.Options{APIKey: soakKey, Catalogue: generateCatalogue(t, n)})
			srv := httptest.NewServer(sim)
			t.Cleanup(srv.Close)
			p := startReader(t, bin, srv.URL, 500*time.Millisecond, mode, nil)
			perDevice := func() map[string]int {
				m := map[string]int{}
				for _, r := range sim.Requests() {
					if r.Endpoint == cloud.EndpointState {
						m[r.Device]++
					}
				}
				return m
			}
			deadline := time.Now().Add(20 * time.Second)
			var m map[string]int
			for {
				m = perDevice()
				least := 2
				for _, d := range sim.Devices() {
					least = min(least, m[d.Device])
				}
				if least >= 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("not every device was read twice within 20 s at a 500 ms interval: %v", m)
				}
				time.Sleep(10 * time.Millisecond)
			}
			for dev, k := range m {
				if k > 3 {
					t.Errorf("device %s read %d times while another was read twice: the reader reads faster than its interval", dev, k)
				}
			}
			if reads, errs := p.counts(); reads < n || errs != 0 {
				t.Errorf("the reader counts %d reads and %d errors; want at least %d reads and none failed", reads, errs, n)
			}
		})
	}
}
