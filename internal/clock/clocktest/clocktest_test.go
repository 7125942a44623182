package clocktest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/clock/clocktest"
)

// The tests run the flowing clock in a synctest bubble, where the system's
// time is the bubble's: what is left of a timer after a jump passes to the
// nanosecond, and "never fires" is checked by sleeping past it. Only
// TestConcurrentUse runs on the real system time.

func received(ch <-chan time.Time) (time.Time, bool) {
	select {
	case at := <-ch:
		return at, true
	default:
		return time.Time{}, false
	}
}

// TestNowFlowsAndJumps: the clock is the system's time plus every jump.
func TestNowFlowsAndJumps(t *testing.T) {
	c := clocktest.New()
	c.Advance(time.Hour)
	c.Advance(30 * time.Minute)
	before := time.Now()
	got := c.Now()
	after := time.Now()
	if got.Before(before.Add(90*time.Minute)) || got.After(after.Add(90*time.Minute)) {
		t.Errorf("Now %v, want the system's time %v…%v plus 90m", got, before, after)
	}
	synctest.Test(t, func(t *testing.T) {
		c := clocktest.New()
		start := c.Now()
		time.Sleep(time.Minute)
		if d := c.Now().Sub(start); d != time.Minute {
			t.Errorf("a minute of the system's time moved the clock %v", d)
		}
	})
}

func TestFrozenMovesOnlyByAdvance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
		c := clocktest.NewFrozen(t0)
		tm := c.NewTimer(time.Second)
		k := c.NewTicker(time.Second)
		time.Sleep(time.Hour)
		synctest.Wait()
		if !c.Now().Equal(t0) {
			t.Errorf("a frozen clock moved to %v", c.Now())
		}
		if _, ok := received(tm.C()); ok {
			t.Error("a frozen clock's timer fired without an Advance")
		}
		if _, ok := received(k.C()); ok {
			t.Error("a frozen clock's ticker ticked without an Advance")
		}
		c.Advance(1500 * time.Millisecond)
		if at, ok := received(tm.C()); !ok || !at.Equal(t0.Add(1500*time.Millisecond)) {
			t.Errorf("timer after Advance: %v, %v", at, ok)
		}
		if _, ok := received(k.C()); !ok {
			t.Error("ticker did not tick at the Advance past its period")
		}
		c.Advance(400 * time.Millisecond) // 1.9 s: the next tick is at 2 s
		if _, ok := received(k.C()); ok {
			t.Error("ticker ticked before its next period")
		}
		c.Advance(100 * time.Millisecond)
		if _, ok := received(k.C()); !ok {
			t.Error("ticker did not tick at 2 s")
		}
		k.Stop()
	})
}

// TestTimerDueByAJumpFiresAtOnce: a timer the jump reaches has fired when
// Advance returns, with the new time; one it passes by fires as well.
func TestTimerDueByAJumpFiresAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clocktest.New()
		exact := c.NewTimer(time.Hour)
		passed := c.NewTimer(time.Minute)
		if n := c.Pending(); n != 2 {
			t.Fatalf("Pending %d, want 2", n)
		}
		c.Advance(time.Hour)
		now := c.Now()
		for name, tm := range map[string]clock.Timer{"reached": exact, "passed": passed} {
			if at, ok := received(tm.C()); !ok || !at.Equal(now) {
				t.Errorf("%s timer: %v, %v; want fired at %v", name, at, ok, now)
			}
			if tm.Stop() {
				t.Errorf("%s timer: Stop after it fired and was received said it was armed", name)
			}
		}
		if n := c.Pending(); n != 0 {
			t.Errorf("Pending %d after both fired", n)
		}
	})
}

// TestTimerNotDueRunsWhatIsLeft: a timer the jump does not reach fires when
// what is left of it has passed, not sooner, not later.
func TestTimerNotDueRunsWhatIsLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clocktest.New()
		start := c.Now()
		tm := c.NewTimer(90 * time.Minute)
		c.Advance(time.Hour)
		time.Sleep(30*time.Minute - time.Nanosecond)
		synctest.Wait()
		if _, ok := received(tm.C()); ok {
			t.Fatal("fired before what was left of it passed")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		at, ok := received(tm.C())
		if !ok || at.Sub(start) != 90*time.Minute {
			t.Errorf("fired %v at %v after it was made, want at 1h30m", ok, at.Sub(start))
		}
		// Two jumps, each short of it.
		tm.Reset(time.Hour)
		c.Advance(20 * time.Minute)
		c.Advance(20 * time.Minute)
		if _, ok := received(tm.C()); ok {
			t.Fatal("fired after 40 of its 60 minutes")
		}
		time.Sleep(20 * time.Minute)
		synctest.Wait()
		if _, ok := received(tm.C()); !ok {
			t.Error("did not fire after the last 20 minutes")
		}
	})
}

// TestTimerMadeAfterAJumpRunsItsWholeDuration: a jump moves no timer made
// after it.
func TestTimerMadeAfterAJumpRunsItsWholeDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clocktest.New()
		c.Advance(time.Hour)
		tm := c.NewTimer(time.Hour)
		time.Sleep(time.Hour - time.Nanosecond)
		synctest.Wait()
		if _, ok := received(tm.C()); ok {
			t.Fatal("a timer made after a jump fired early")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if _, ok := received(tm.C()); !ok {
			t.Error("did not fire after its whole duration")
		}
	})
}

// TestStopAndReset follow time.Timer's (Go 1.23) rules: no value sent
// before a Stop or Reset is received after it, and they say whether the
// timer was armed or its value not yet received.
func TestStopAndReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clocktest.New()

		stopped := c.NewTimer(time.Minute)
		if !stopped.Stop() {
			t.Error("Stop of an armed timer said it was not")
		}
		if stopped.Stop() {
			t.Error("second Stop said it was armed")
		}
		c.Advance(time.Hour)
		time.Sleep(time.Hour)
		synctest.Wait()
		if _, ok := received(stopped.C()); ok {
			t.Error("a stopped timer fired")
		}

		unreceived := c.NewTimer(time.Minute)
		c.Advance(time.Minute)
		if !unreceived.Stop() {
			t.Error("Stop of a timer whose value was not received said it was not armed")
		}
		if _, ok := received(unreceived.C()); ok {
			t.Error("a value sent before Stop was received after it")
		}

		reset := c.NewTimer(time.Minute)
		c.Advance(time.Minute) // fired, not received
		if !reset.Reset(time.Hour) {
			t.Error("Reset of a fired, unreceived timer said it was not armed")
		}
		if _, ok := received(reset.C()); ok {
			t.Error("a value sent before Reset was received after it")
		}
		c.Advance(59 * time.Minute)
		if _, ok := received(reset.C()); ok {
			t.Error("fired before its new duration")
		}
		if !reset.Reset(2 * time.Minute) {
			t.Error("Reset of an armed timer said it was not")
		}
		c.Advance(time.Minute)
		if _, ok := received(reset.C()); ok {
			t.Error("fired at its old deadline after a Reset to a later one")
		}
		c.Advance(time.Minute)
		if _, ok := received(reset.C()); !ok {
			t.Error("did not fire at its new deadline")
		}
		if reset.Reset(0) {
			t.Error("Reset of a fired, received timer said it was armed")
		}
		if _, ok := received(reset.C()); !ok {
			t.Error("Reset(0) did not fire at once")
		}
	})
}

// TestResetAtKeepsTheDeadline: a loop that computes its wait from Now and
// then resets its timer loses a jump made between the two (the wait runs
// whole after it); ResetAt to the deadline does not.
func TestResetAtKeepsTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clocktest.New()
		deadline := c.Now().Add(time.Hour)
		relative, absolute := c.NewTimer(time.Hour), c.NewTimer(time.Hour)
		relative.Stop()
		absolute.Stop()

		wait := deadline.Sub(c.Now()) // the loop computes its wait…
		c.Advance(time.Hour)          // …the test jumps…
		relative.Reset(wait)          // …and the loop resets its timer
		if absolute.ResetAt(deadline) {
			t.Error("ResetAt of a stopped timer said it was armed")
		}
		if at, ok := received(absolute.C()); !ok || !at.Equal(c.Now()) {
			t.Errorf("ResetAt a deadline the clock has reached: %v, %v; want fired at once", at, ok)
		}
		if _, ok := received(relative.C()); ok {
			t.Fatal("Reset with a wait computed before the jump fired at once (the test shows nothing)")
		}
		if !relative.ResetAt(c.Now().Add(time.Minute)) {
			t.Error("ResetAt of an armed timer said it was not")
		}
		c.Advance(59 * time.Second)
		if _, ok := received(relative.C()); ok {
			t.Error("ResetAt fired before its deadline")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if _, ok := received(relative.C()); !ok {
			t.Error("ResetAt did not fire at its deadline")
		}
	})
}

func TestAfterFunc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clocktest.New()
		var runs atomic.Int32
		f := c.AfterFunc(time.Hour, func() { runs.Add(1) })
		if f.C() != nil {
			t.Error("an AfterFunc timer has a channel")
		}
		stopped := c.AfterFunc(time.Hour, func() { t.Error("a stopped AfterFunc ran") })
		stopped.Stop()
		c.Advance(59 * time.Minute)
		synctest.Wait()
		if runs.Load() != 0 {
			t.Fatal("ran before its time")
		}
		c.Advance(time.Minute)
		synctest.Wait()
		if runs.Load() != 1 {
			t.Fatalf("ran %d times after the jump, want once", runs.Load())
		}
		if f.Stop() {
			t.Error("Stop after it ran said it was armed")
		}
		f.Reset(time.Second) // again, on the system's time
		time.Sleep(time.Second)
		synctest.Wait()
		if runs.Load() != 2 {
			t.Errorf("ran %d times after a Reset and its second, want twice", runs.Load())
		}
	})
}

// TestTicker: a ticker ticks every period; a jump over several periods
// gives one tick (as a slow receiver gets) and keeps it on its schedule.
func TestTicker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clocktest.New()
		start := c.Now()
		k := c.NewTicker(10 * time.Second)
		defer k.Stop()
		for i := 1; i <= 2; i++ {
			if at := <-k.C(); at.Sub(start) != time.Duration(i)*10*time.Second {
				t.Errorf("tick %d after %v", i, at.Sub(start))
			}
		}
		c.Advance(35 * time.Second) // from 20 s to 55 s: 30, 40 and 50 s jumped over
		if _, ok := received(k.C()); !ok {
			t.Fatal("no tick at a jump over three periods")
		}
		if _, ok := received(k.C()); ok {
			t.Error("more than one tick for the jump")
		}
		if at := <-k.C(); at.Sub(start) != 60*time.Second {
			t.Errorf("next tick after %v, want on its schedule at 60s", at.Sub(start))
		}
		k.Reset(time.Minute)
		time.Sleep(59 * time.Second)
		synctest.Wait()
		if _, ok := received(k.C()); ok {
			t.Error("tick within the reset period")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if _, ok := received(k.C()); !ok {
			t.Error("no tick at the reset period")
		}
		k.Stop()
		c.Advance(time.Hour)
		if _, ok := received(k.C()); ok {
			t.Error("a stopped ticker ticked")
		}
		if n := c.Pending(); n != 0 {
			t.Errorf("Pending %d after Stop", n)
		}
	})
}

func TestWaitPending(t *testing.T) {
	c := clocktest.New()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		tm := c.NewTimer(time.Hour)
		<-tm.C()
		cancel()
	}()
	if err := c.WaitPending(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Hour)
	<-ctx.Done() // the goroutine saw its timer fire
	if err := c.WaitPending(ctx, 1); err == nil {
		t.Error("WaitPending with no timer armed and its context done returned nil")
	}
}

func TestAdvanceBackwardsPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Advance(-1s) did not panic")
		}
	}()
	clocktest.New().Advance(-time.Second)
}

// TestConcurrentUse: goroutines make, reset and stop timers while another
// jumps the clock, on the system's time (run with -race): every timer
// fires once, never before its deadline, and no stopped one fires.
func TestConcurrentUse(t *testing.T) {
	c := clocktest.New()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	jumping := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-jumping:
				return
			default:
			}
			c.Advance(time.Minute)
			_ = c.Pending()
		}
	})
	var fired, funcs atomic.Int64
	var workers sync.WaitGroup
	const workersN, timersEach = 8, 50
	for w := range workersN {
		workers.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range timersEach {
				d := time.Duration(1+r.IntN(120)) * time.Minute
				set := c.Now()
				tm := c.NewTimer(d)
				if i%3 == 0 {
					set = c.Now()
					tm.Reset(d / 2)
					d /= 2
				}
				skip := c.NewTimer(d)
				skip.Stop()
				done := make(chan struct{})
				c.AfterFunc(d, func() { funcs.Add(1); close(done) })
				select {
				case at := <-tm.C():
					if at.Before(set.Add(d)) {
						t.Errorf("timer of %v fired %v after it was set", d, at.Sub(set))
					}
					fired.Add(1)
				case <-ctx.Done():
					t.Error("a timer did not fire within a minute of jumps")
					return
				}
				select {
				case <-done:
				case <-ctx.Done():
					t.Error("an AfterFunc did not run within a minute of jumps")
					return
				}
				if _, ok := received(skip.C()); ok {
					t.Error("a stopped timer fired")
				}
			}
		})
	}
	workers.Wait()
	close(jumping)
	wg.Wait()
	if fired.Load() != workersN*timersEach || funcs.Load() != workersN*timersEach {
		t.Errorf("%d timers fired and %d functions ran, want %d each", fired.Load(), funcs.Load(), workersN*timersEach)
	}
}

func ExampleClock_Advance() {
	c := clocktest.NewFrozen(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	holdOff := c.NewTimer(time.Minute)
	c.Advance(time.Minute) // the test jumps the hold-off instead of waiting it out
	fmt.Println((<-holdOff.C()).Format(time.TimeOnly))
	// Output: 12:01:00
}

// TestNewAtRunsFromItsStart: a clock made at noon says noon, runs on, and
// jumps from there.
func TestNewAtRunsFromItsStart(t *testing.T) {
	noon := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	c := clocktest.NewAt(noon)
	if got := c.Now(); got.Before(noon) || got.Sub(noon) > time.Second {
		t.Fatalf("Now right after NewAt(noon) = %s", got)
	}
	tm := c.NewTimer(time.Hour)
	c.Advance(time.Hour)
	select {
	case at := <-tm.C():
		if at.Before(noon.Add(time.Hour)) || at.Sub(noon.Add(time.Hour)) > time.Second {
			t.Errorf("the timer fired at %s, want about 13:00", at)
		}
	default:
		t.Fatal("an hour's timer did not fire when the clock jumped an hour")
	}
}

// TestRecord: after Record, every wait that ends at its deadline is kept
// (a timer, a ticker's periods, by the clock flowing or by a jump); a
// timer reset or stopped before its deadline, and one armed for an instant
// already reached (it fires at once), woke nobody and are not.
func TestRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clocktest.New()
		early := c.NewTimer(time.Second) // fires before Record: not kept
		<-early.C()
		c.Record()
		start := c.Now()
		tm := c.NewTimer(5 * time.Second)
		tm.ResetAt(start.Add(7 * time.Second)) // 5 s never ends
		stopped := c.NewTimer(9 * time.Second)
		stopped.Stop()
		now := c.NewTimer(0) // fires at once
		<-now.C()
		k := c.NewTicker(10 * time.Second)
		defer k.Stop()
		<-tm.C()
		<-k.C()
		c.Advance(15 * time.Second) // from 10 s to 25 s: the tick of 20 s
		want := []time.Duration{7 * time.Second, 10 * time.Second, 20 * time.Second}
		got := c.Recorded()
		if len(got) != len(want) {
			t.Fatalf("recorded %v, want %d deadlines %v after the start", got, len(want), want)
		}
		for i, at := range got {
			if at.Sub(start) != want[i] {
				t.Errorf("deadline %d at %v after the start, want %v", i, at.Sub(start), want[i])
			}
		}
		c.Record()
		if got := c.Recorded(); len(got) != 0 {
			t.Errorf("Record again kept %v", got)
		}
	})
}

// TestFreezeStopsARunningClock: after Freeze the clock stands where it
// stood (system time passing moves it no more), a timer armed before
// waits for a jump, and Advance moves it and fires what is due.
func TestFreezeStopsARunningClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clocktest.New()
		time.Sleep(time.Minute) // the clock runs with the system's time
		tm := c.NewTimer(time.Second)
		c.Freeze()
		at := c.Now()
		time.Sleep(time.Hour)
		if got := c.Now(); !got.Equal(at) {
			t.Fatalf("a frozen clock moved %v while an hour passed", got.Sub(at))
		}
		select {
		case <-tm.C():
			t.Fatal("a second's timer fired on a frozen clock without a jump")
		default:
		}
		c.Advance(time.Second)
		select {
		case got := <-tm.C():
			if !got.Equal(at.Add(time.Second)) {
				t.Errorf("the timer fired at %v, want a second after the freeze", got.Sub(at))
			}
		default:
			t.Fatal("the jump to the timer's deadline did not fire it")
		}
		c.Freeze() // again: nothing changes
		if got := c.Now(); !got.Equal(at.Add(time.Second)) {
			t.Errorf("Freeze again moved the clock to %v", got.Sub(at))
		}
	})
}

// TestDeadlines: the armed timers' and tickers' next instants, earliest
// first; a stopped or fired timer is not among them.
func TestDeadlines(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	c := clocktest.NewFrozen(start)
	late := c.NewTimer(3 * time.Second)
	c.NewTimer(time.Second)
	k := c.NewTicker(2 * time.Second)
	defer k.Stop()
	stopped := c.NewTimer(time.Hour)
	stopped.Stop()
	at := func(d ...time.Duration) []time.Time {
		var out []time.Time
		for _, x := range d {
			out = append(out, start.Add(x))
		}
		return out
	}
	if got, want := c.Deadlines(), at(time.Second, 2*time.Second, 3*time.Second); !slices.Equal(got, want) {
		t.Fatalf("Deadlines = %v, want %v", got, want)
	}
	c.Advance(2 * time.Second) // the second's timer fired, the ticker is due at 4 s
	late.Stop()
	if got, want := c.Deadlines(), at(4*time.Second); !slices.Equal(got, want) {
		t.Errorf("after a jump and a stop: Deadlines = %v, want %v", got, want)
	}
}
