package app

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
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

// within returns the messages that arrive within timeout.
func (n notified) within(timeout time.Duration) []string {
	var got []string
	buf := make([]byte, 256)
	deadline := time.Now().Add(timeout)
	for {
		_ = n.conn.SetReadDeadline(deadline)
		k, err := n.conn.Read(buf)
		if err != nil {
			return got
		}
		got = append(got, string(buf[:k]))
	}
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
// progress is recent and stops when the poller is stuck, so systemd
// restarts a daemon that no longer reads the cloud.
func TestWatchdogPingsOnlyWhileThePollerProgresses(t *testing.T) {
	sock := notifySocket(t)
	t.Setenv("WATCHDOG_USEC", "100000") // pings every 50 ms
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	var mu sync.Mutex
	last := time.Now()
	progress := func() time.Time { mu.Lock(); defer mu.Unlock(); return last }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Systemd{Log: zerolog.Nop()}.Watchdog(ctx, progress, func() time.Duration { return time.Second })
	}()
	defer func() { cancel(); <-done }()

	if got := sock.within(400 * time.Millisecond); len(got) < 2 || got[0] != "WATCHDOG=1" {
		t.Fatalf("while progressing: %q, want several WATCHDOG=1", got)
	}
	mu.Lock()
	last = time.Now().Add(-time.Hour) // the poller is stuck
	mu.Unlock()
	sock.within(100 * time.Millisecond) // a ping already on its way
	if got := sock.within(400 * time.Millisecond); len(got) != 0 {
		t.Errorf("while stuck: %q, want no ping", got)
	}
}
