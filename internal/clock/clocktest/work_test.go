package clocktest_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/clock/clocktest"
)

// busy says that c has work in hand and that Holders names it.
func busy(t *testing.T, c *clocktest.Clock, want string) {
	t.Helper()
	if c.Idle() {
		t.Fatalf("the clock is idle, want work in hand: %s", want)
	}
	if h := strings.Join(c.Holders(), "; "); !strings.Contains(h, want) {
		t.Errorf("work in hand %q, want it to name %q", h, want)
	}
}

func TestBusyIsInHandUntilDone(t *testing.T) {
	c := clocktest.NewFrozen(time.Unix(0, 0))
	if !c.Idle() {
		t.Fatal("a new clock has work in hand")
	}
	done := clock.Busy(c, "a read on the wire")
	busy(t, c, "a read on the wire")
	done()
	done() // a second call changes nothing
	c.IdleWithin(t, 5*time.Second, "once the work was let go")
	if !c.Idle() {
		t.Error("work let go twice left the clock busy")
	}
	// The system's clock keeps no count.
	clock.Busy(clock.Real, "nothing")()
}

func TestWaitIdleNamesTheWorkStillInHand(t *testing.T) {
	c := clocktest.NewFrozen(time.Unix(0, 0))
	defer clock.Busy(c, "a publish unacknowledged")()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := c.WaitIdle(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "a publish unacknowledged") {
		t.Errorf("WaitIdle = %v, want the deadline naming the publish", err)
	}
}

func TestAFiredTimerIsInHandUntilHandled(t *testing.T) {
	for _, end := range []struct {
		name string
		do   func(clock.Timer)
	}{
		{"Done", func(tm clock.Timer) { tm.Done() }},
		{"Stop", func(tm clock.Timer) { tm.Stop() }},
		{"Reset", func(tm clock.Timer) { tm.Reset(time.Hour) }},
		{"ResetAt", func(tm clock.Timer) { tm.ResetAt(time.Unix(0, 0).Add(time.Hour)) }},
	} {
		t.Run(end.name, func(t *testing.T) {
			c := clocktest.NewFrozen(time.Unix(0, 0))
			tm := c.NewTimer(time.Second)
			if !c.Idle() {
				t.Fatal("an armed timer is work in hand; it is a wait")
			}
			c.Advance(time.Second)
			busy(t, c, "made at work_test.go") // named by where it was made
			<-tm.C()
			busy(t, c, "unhandled") // received, not yet handled
			end.do(tm)
			c.IdleWithin(t, 5*time.Second, "once the work was let go")
		})
	}
}

func TestAValueStoppedUnreceivedIsNotInHand(t *testing.T) {
	c := clocktest.NewFrozen(time.Unix(0, 0))
	tm := c.NewTimer(time.Second)
	c.Advance(time.Second)
	tm.Stop()
	c.IdleWithin(t, 5*time.Second, "once the work was let go")
}

func TestEachTickIsInHandUntilDone(t *testing.T) {
	c := clocktest.NewFrozen(time.Unix(0, 0))
	tk := c.NewTicker(time.Second)
	defer tk.Stop()
	c.Advance(time.Second)
	<-tk.C()
	c.Advance(time.Second) // a second tick while the first is handled
	tk.Done()
	busy(t, c, "1 unhandled")
	<-tk.C()
	tk.Done()
	c.IdleWithin(t, 5*time.Second, "once the work was let go")
	tk.Done() // no tick in hand: nothing to let go
	c.IdleWithin(t, 5*time.Second, "once the work was let go")
}

func TestAfterFuncIsInHandWhileItRuns(t *testing.T) {
	c := clocktest.NewFrozen(time.Unix(0, 0))
	release := make(chan struct{})
	ran := make(chan struct{})
	c.AfterFunc(time.Second, func() { <-release; close(ran) })
	c.Advance(time.Second)
	busy(t, c, "AfterFunc")
	close(release)
	<-ran
	c.IdleWithin(t, 5*time.Second, "once the work was let go")
}

func TestAWakeUpIsInHandUntilTheLoopLetsItGo(t *testing.T) {
	c := clocktest.NewFrozen(time.Unix(0, 0))
	w := clock.NewWake(c, "poller: woken")
	w.Notify()
	w.Notify() // one wake-up for both
	busy(t, c, "poller: woken")
	<-w.C()
	done := w.Take()
	w.Notify() // after Take: the loop is woken again for it
	done()
	busy(t, c, "poller: woken")
	<-w.C()
	w.Take()()
	c.IdleWithin(t, 5*time.Second, "once the work was let go")
	select {
	case <-w.C():
		t.Error("a wake-up left in the channel after every notification was taken")
	default:
	}
	w.Take()() // nothing taken: nothing to let go
}

func TestADatagramIsInHandOnItsWayToAListener(t *testing.T) {
	c := clocktest.NewFrozen(time.Unix(0, 0))
	device := netip.MustParseAddrPort("127.0.0.2:4003")
	bridge := netip.MustParseAddrPort("0.0.0.0:4002")
	stopDevice := clock.Listening(c, device)
	defer clock.Listening(c, bridge)()

	clock.Sent(c, netip.MustParseAddrPort("127.0.0.9:4003"), []byte("to nobody"))
	c.IdleWithin(t, 5*time.Second, "once the work was let go")

	clock.Sent(c, device, []byte(`{"cmd":"devStatus"}`))
	busy(t, c, "on its way to 127.0.0.2:4003")
	handled := clock.Arrived(c, device, []byte(`{"cmd":"devStatus"}`))
	busy(t, c, "taken in at 127.0.0.2:4003")
	// The answer goes out before the request is handled: no gap.
	clock.Sent(c, netip.MustParseAddrPort("127.0.0.1:4002"), []byte(`{"on":1}`))
	handled()
	busy(t, c, "on its way to 127.0.0.1:4002") // the bridge listens on every address
	clock.Arrived(c, bridge, []byte(`{"on":1}`))()
	c.IdleWithin(t, 5*time.Second, "once the work was let go")

	// A datagram to a device that stops is lost, as the kernel loses it.
	clock.Sent(c, device, []byte(`{"cmd":"turn"}`))
	stopDevice()
	stopDevice()
	c.IdleWithin(t, 5*time.Second, "once the work was let go")
}

func TestAdvancedIsHowFarTheTestJumped(t *testing.T) {
	c := clocktest.NewAt(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	c.Advance(time.Minute)
	c.Advance(30 * time.Second)
	if got := c.Advanced(); got != 90*time.Second {
		t.Errorf("Advanced = %v after jumps of 1m and 30s, want 1m30s", got)
	}
}
