package app_test

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/scheduler"
)

// The health of a daemon the cloud asks to wait: a long Retry-After must not turn
// /healthz 503 or stop the watchdog, since a restart would not shorten the wait
// and would read every device again.

// rateLimiter stands between the bridge and the simulated cloud: it
// answers the next state reads it is armed for with 429 and
// Retry-After: 999999, or refuses every connection, as a test says.
type rateLimiter struct {
	base   http.RoundTripper
	now    func() time.Time
	mu     sync.Mutex
	armed  int
	refuse bool
	at     []time.Time // when each 429 was answered, on the daemon's clock
}

func (l *rateLimiter) arm(n int) { l.mu.Lock(); l.armed += n; l.mu.Unlock() }

func (l *rateLimiter) setRefuse(on bool) { l.mu.Lock(); l.refuse = on; l.mu.Unlock() }

func (l *rateLimiter) answered() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.at...)
}

func (l *rateLimiter) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	refuse, limit := l.refuse, l.armed > 0 && cloud.EndpointOf(r.URL.Path) == cloud.EndpointState
	if limit {
		l.armed--
		l.at = append(l.at, l.now())
	}
	l.mu.Unlock()
	switch {
	case refuse:
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	case limit:
		if r.Body != nil {
			_, _ = io.Copy(io.Discard, r.Body)
		}
		return &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"999999"}},
			Body: io.NopCloser(strings.NewReader(`{"code":429,"msg":"Too Many Requests"}`)), Request: r}, nil
	}
	return l.base.RoundTrip(r)
}

// startRateLimited starts a bridge of one device, read every minute, whose
// cloud requests go through a rateLimiter.
func startRateLimited(t *testing.T) (*harness, *rateLimiter) {
	t.Helper()
	h := startHarness(t, harnessOptions{noStart: true, sim: cloudsim.Options{Catalogue: firstDevices(1)},
		env: map[string]string{"HTTP_ADDR": "127.0.0.1:0", "POLL_INTERVAL": "60s"}})
	l := &rateLimiter{base: http.DefaultTransport, now: h.clock.Now}
	h.main.HTTPClient = &http.Client{Transport: l, Timeout: 5 * time.Second}
	h.start()
	availability(h.watch, wait, "online", h.ids()...)
	h.watch.until(wait, "/healthz 200", func() bool { code, _ := getHealth(t, h); return code == 200 })
	return h, l
}

// sitOutTheHold arms one 429, jumps the clock (10 s at a time) until it is
// answered and then until the device is read again, calling look after
// each jump; it returns when the 429 came.
func sitOutTheHold(t *testing.T, h *harness, l *rateLimiter, look func()) time.Time {
	t.Helper()
	l.arm(1)
	h.jumpUntil(wait, time.Second, "the 429", func() bool { return len(l.answered()) == 1 })
	limitedAt := l.answered()[0]
	before := len(h.sim.Requests())
	h.jumpUntil(faultWait, 10*time.Second, "the device read again after the hold", func() bool {
		look()
		for _, q := range h.sim.Requests()[before:] {
			if q.Endpoint == cloud.EndpointState && q.HTTPStatus == 200 {
				return true
			}
		}
		return false
	})
	if held := h.clock.Now().Sub(limitedAt); held < scheduler.MaxRetryAfter {
		t.Errorf("the device was read again %s after the 429, want after the capped wait (%s)", held, scheduler.MaxRetryAfter)
	}
	return limitedAt
}

// TestRateLimitHoldIsHealthy: through the whole wait of a 429 /healthz
// stays 200, its reasons naming the hold and its end (details.held_until
// too); once the device is read again nothing is said; when the cloud is
// really out of reach it is 503, naming it.
func TestRateLimitHoldIsHealthy(t *testing.T) {
	t.Parallel()
	h, l := startRateLimited(t)
	var (
		looks, unhealthy int
		named            bool
		heldUntil        string
	)
	limitedAt := sitOutTheHold(t, h, l, func() {
		code, body := getHealth(t, h)
		looks++
		reasons := strings.Join(toStrings(body["reasons"]), "; ")
		if code != 200 {
			unhealthy++
			t.Errorf("/healthz during the 429's wait, %s after it: %d %s", h.clock.Now().Sub(l.answered()[0]).Round(time.Second), code, reasons)
			return
		}
		details, _ := body["details"].(map[string]any)
		if until := toString(details["held_until"]); until != "" {
			heldUntil = until
			named = named || strings.Contains(reasons, "429") && strings.Contains(reasons, "held until "+until)
		}
	})
	t.Logf("/healthz looked at %d times over the 429's wait: %d unhealthy", looks, unhealthy)
	end, err := time.Parse(time.RFC3339, heldUntil)
	if err != nil || !named {
		t.Fatalf("/healthz never named the hold and its end (held_until %q, named %v)", heldUntil, named)
	}
	if want := limitedAt.Add(scheduler.MaxRetryAfter); end.Sub(want).Abs() > 2*time.Second {
		t.Errorf("held until %v, want the capped Retry-After's end %v", end, want.UTC())
	}
	if code, body := getHealth(t, h); code != 200 || len(toStrings(body["reasons"])) != 0 {
		t.Errorf("/healthz once the device is read again: %d %v, want 200 and no reason", code, body["reasons"])
	}

	l.setRefuse(true)
	var reasons string
	h.jumpUntil(wait, time.Second, "/healthz 503 naming the cloud", func() bool {
		code, body := getHealth(t, h)
		reasons = strings.Join(toStrings(body["reasons"]), "; ")
		return code == 503 && strings.Contains(reasons, "not reachable")
	})
}

// TestWatchdogPingsThroughARateLimitHold: systemd's watchdog (Type=notify,
// WatchdogSec) goes on being pinged through a 429's whole wait: the
// daemon is not restarted for it.
func TestWatchdogPingsThroughARateLimitHold(t *testing.T) {
	sock := listenNotify(t)
	t.Setenv("WATCHDOG_USEC", "60000000") // WatchdogSec=60 (deploy/systemd): a tick every 30 s
	h, l := startRateLimited(t)
	atHold := -1
	sitOutTheHold(t, h, l, func() {
		if atHold < 0 {
			atHold = sock.count("WATCHDOG=1")
		}
	})
	// A tick every 30 s of the wait: 10 (the last may still be on its way
	// to the test's reader).
	pings := sock.count("WATCHDOG=1") - atHold
	t.Logf("over the 429's wait: %d pings", pings)
	if strings.Contains(h.logs.String(), "watchdog not pinged") || pings < int(scheduler.MaxRetryAfter/(30*time.Second))-2 {
		t.Errorf("over the 429's wait (%s): %d pings, log says not pinged: %v; want a ping every 30 s",
			scheduler.MaxRetryAfter, pings, strings.Contains(h.logs.String(), "watchdog not pinged"))
	}
}

// notifyLog listens where systemd would (NOTIFY_SOCKET) and keeps what it
// is told.
type notifyLog struct {
	mu  sync.Mutex
	got []string
}

func listenNotify(t *testing.T) *notifyLog {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NOTIFY_SOCKET", path)
	n := &notifyLog{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 512)
		for {
			k, err := conn.Read(buf)
			if err != nil {
				return
			}
			n.mu.Lock()
			n.got = append(n.got, string(buf[:k]))
			n.mu.Unlock()
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	return n
}

func (n *notifyLog) count(msg string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, m := range n.got {
		if m == msg {
			c++
		}
	}
	return c
}
