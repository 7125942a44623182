package app

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/clock/clocktest"
)

// notifySocket listens where systemd would and collects what it is told.
func notifySocket(t *testing.T) notified {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return notified{t, conn}
}

type notified struct {
	t    *testing.T
	conn *net.UnixConn
}

// sent returns the messages waiting in the socket, without waiting: an
// sd-notify call has sent its message when it returns.
func (n notified) sent() []string {
	n.t.Helper()
	rc, err := n.conn.SyscallConn()
	if err != nil {
		n.t.Fatal(err)
	}
	var got []string
	buf := make([]byte, 256)
	err = rc.Read(func(fd uintptr) bool {
		for {
			k, _, err := syscall.Recvfrom(int(fd), buf, syscall.MSG_DONTWAIT)
			if err != nil {
				return true // EAGAIN: nothing more is waiting
			}
			got = append(got, string(buf[:k]))
		}
	})
	if err != nil {
		n.t.Fatal(err)
	}
	return got
}

func TestSystemdReadyAndStopping(t *testing.T) {
	sock := notifySocket(t)
	sd := Systemd{Log: zerolog.Nop()}
	sd.Ready()
	sd.Stopping()
	got := sock.sent()
	if len(got) != 2 || got[0] != "READY=1" || got[1] != "STOPPING=1" {
		t.Errorf("notifications %q, want READY=1 then STOPPING=1", got)
	}
}

func TestSystemdStatus(t *testing.T) {
	sock := notifySocket(t)
	sd := Systemd{Log: zerolog.Nop()}
	sd.Status("waiting for the cloud's device list: %d failed tries", 3)
	sd.Status("waiting for the cloud's device list: %d failed tries", 3) // not repeated
	sd.Status("%d devices, %d × 429 since start", 18, 0)
	got := sock.sent()
	want := []string{"STATUS=waiting for the cloud's device list: 3 failed tries", "STATUS=18 devices, 0 × 429 since start"}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("notifications %q, want %q", got, want)
	}
}

// TestWatchdogPingsOnlyWhileThePollerProgresses: WATCHDOG=1 goes out while
// progress is recent and stops when the poller is stuck, so that systemd
// restarts the daemon. Each jump of half the interval is one tick, answered by
// a ping or by the stuck poller's error line.
func TestWatchdogPingsOnlyWhileThePollerProgresses(t *testing.T) {
	sock := notifySocket(t)
	t.Setenv("WATCHDOG_USEC", "100000") // a tick every 50 ms
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	clk := clocktest.NewFrozen(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	var mu sync.Mutex
	last := clk.Now()
	progress := func() time.Time { mu.Lock(); defer mu.Unlock(); return last }
	unpinged := make(chan struct{}, 16)
	log := zerolog.New(lineFunc(func(line string) {
		if strings.Contains(line, "watchdog not pinged") {
			unpinged <- struct{}{}
		}
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Systemd{Log: log, Clock: clk}.Watchdog(ctx, progress, func() time.Duration { return time.Second })
	}()
	defer func() { cancel(); <-done }()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := clk.WaitPending(wctx, 1); err != nil {
		t.Fatalf("the watchdog's ticker: %v", err)
	}

	for i := range 3 {
		clk.Advance(50 * time.Millisecond)
		if got := sock.next(10 * time.Second); got != "WATCHDOG=1" {
			t.Fatalf("tick %d while progressing: %q, want WATCHDOG=1", i+1, got)
		}
	}
	mu.Lock()
	last = clk.Now().Add(-time.Hour) // the poller is stuck
	mu.Unlock()
	// A tick's error line is written once the tick before it is done:
	// the socket then holds whatever that one sent.
	for i := range 4 {
		clk.Advance(50 * time.Millisecond)
		select {
		case <-unpinged:
		case <-time.After(10 * time.Second):
			t.Fatalf("tick %d while stuck: no error line", i+1)
		}
		if got := sock.sent(); len(got) != 0 {
			t.Errorf("ticks up to %d while stuck: %q, want no ping", i+1, got)
		}
	}
}

// next returns the next message, waiting at most timeout ("" when none).
func (n notified) next(timeout time.Duration) string {
	buf := make([]byte, 256)
	_ = n.conn.SetReadDeadline(time.Now().Add(timeout))
	k, err := n.conn.Read(buf)
	if err != nil {
		return ""
	}
	return string(buf[:k])
}

// lineFunc is a function as a log's writer, called with each line.
type lineFunc func(line string)

func (f lineFunc) Write(p []byte) (int, error) { f(string(p)); return len(p), nil }
