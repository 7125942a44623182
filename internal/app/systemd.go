package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/rs/zerolog"

	"cloud2mqtt/internal/clock"
)

// Systemd tells systemd about the daemon (Type=notify): READY=1 once ready,
// WATCHDOG=1 while the poller makes progress, STOPPING=1 at shutdown. Outside
// systemd (no NOTIFY_SOCKET) it does nothing.
type Systemd struct {
	Log zerolog.Logger
	// Clock is the watchdog's time (nil: clock.Real).
	Clock clock.Clock

	lastStatus string
}

// Ready sends READY=1.
func (s Systemd) Ready() {
	if ok, err := daemon.SdNotify(false, daemon.SdNotifyReady); err != nil {
		s.Log.Warn().Err(err).Msg("systemd: READY=1 not sent")
	} else if ok {
		s.Log.Info().Msg("systemd: ready")
	}
}

// Status sends STATUS=<text>, which systemctl status shows; the same text twice
// in a row is sent once.
func (s *Systemd) Status(format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	if text == s.lastStatus {
		return
	}
	s.lastStatus = text
	_, _ = daemon.SdNotify(false, "STATUS="+strings.ReplaceAll(text, "\n", " "))
}

// Stopping sends STOPPING=1.
func (s Systemd) Stopping() { _, _ = daemon.SdNotify(false, daemon.SdNotifyStopping) }

// Watchdog pings systemd's watchdog at half its interval, but only while
// progress() is more recent than stale(), so that a stuck poller gets the
// daemon restarted. It returns when ctx ends.
func (s Systemd) Watchdog(ctx context.Context, progress func() time.Time, stale func() time.Duration) {
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil || interval <= 0 {
		return
	}
	s.Log.Info().Dur("interval", interval).Msg("systemd watchdog enabled")
	clk := clock.Or(s.Clock)
	t := clk.NewTicker(interval / 2)
	defer t.Stop()
	start := clk.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			last := progress()
			if last.IsZero() {
				last = start // nothing to read yet: the first list is still on its way
			}
			if clk.Now().Sub(last) > stale() {
				s.Log.Error().Time("last_progress", last).Msg("systemd watchdog not pinged: no read answered by the cloud for too long (or the poller is stuck)")
			} else {
				_, _ = daemon.SdNotify(false, daemon.SdNotifyWatchdog)
			}
			t.Done()
		}
	}
}
