package app

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// notifySocket listens where systemd would and collects what it is told:
// read returns the messages that arrive within timeout. Sd-notify messages
// are sent synchronously, so what a call sent is there at once: drained
// with drain, a timeout that only ends the reading.
func notifySocket(t *testing.T) func(timeout time.Duration) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return func(timeout time.Duration) []string {
		var got []string
		buf := make([]byte, 256)
		deadline := time.Now().Add(timeout)
		for {
			_ = conn.SetReadDeadline(deadline)
			n, err := conn.Read(buf)
			if err != nil {
				return got
			}
			got = append(got, string(buf[:n]))
		}
	}
}

// drain is how long read waits for more once the messages sent are in.
const drain = 50 * time.Millisecond

func TestSystemdReadyAndStopping(t *testing.T) {
	read := notifySocket(t)
	sd := Systemd{Log: zerolog.Nop()}
	sd.Ready()
	sd.Stopping()
	got := read(drain)
	if len(got) != 2 || got[0] != "READY=1" || got[1] != "STOPPING=1" {
		t.Errorf("notifications %q, want READY=1 then STOPPING=1", got)
	}
}

func TestSystemdStatus(t *testing.T) {
	read := notifySocket(t)
	sd := Systemd{Log: zerolog.Nop()}
	sd.Status("waiting for the cloud's device list: %d failed tries", 3)
	sd.Status("waiting for the cloud's device list: %d failed tries", 3) // not repeated
	sd.Status("%d devices, %d × 429 since start", 18, 0)
	got := read(drain)
	want := []string{"STATUS=waiting for the cloud's device list: 3 failed tries", "STATUS=18 devices, 0 × 429 since start"}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("notifications %q, want %q", got, want)
	}
}

// TestWatchdogPingsOnlyWhileThePollerProgresses: WATCHDOG=1 goes out while
// progress is recent and stops when the poller is stuck, so systemd
// restarts a daemon that no longer reads the cloud.
func TestWatchdogPingsOnlyWhileThePollerProgresses(t *testing.T) {
	read := notifySocket(t)
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

	if got := read(400 * time.Millisecond); len(got) < 2 || got[0] != "WATCHDOG=1" {
		t.Fatalf("while progressing: %q, want several WATCHDOG=1", got)
	}
	mu.Lock()
	last = time.Now().Add(-time.Hour) // the poller is stuck
	mu.Unlock()
	read(100 * time.Millisecond) // a ping already on its way
	if got := read(400 * time.Millisecond); len(got) != 0 {
		t.Errorf("while stuck: %q, want no ping", got)
	}
}
