package lan

import (
	"context"

	"cloud2mqtt/internal/clock"
)

// Work in hand (clock.Busy and its kin): a test clock jumps only when none
// is, so the client reports its datagrams and its waits' wake-ups.

// task is the work in hand of a goroutine that waits between its steps (a
// poll's read, a probe, a device's Sends): held while it runs, let go while
// it waits on the clock or for an answer, so that the wait can be jumped.
// What wakes it (a timer's value, an answer) holds work until it has taken
// its own again (wake). A nil task does nothing; a task is one goroutine's.
type task struct {
	clk  clock.Clock
	what string
	done func() // nil while let go
}

func newTask(clk clock.Clock, what string) *task {
	return &task{clk: clk, what: what, done: clock.Busy(clk, what)}
}

// wait lets the work go, as the goroutine starts waiting.
func (t *task) wait() {
	if t != nil && t.done != nil {
		t.done()
		t.done = nil
	}
}

// wake takes the work again, before what woke the goroutine is let go.
func (t *task) wake() {
	if t != nil && t.done == nil {
		t.done = clock.Busy(t.clk, t.what)
	}
}

// end lets the work go for good.
func (t *task) end() { t.wait() }

type taskKey struct{}

// withTask is ctx carrying t to the calls that wait on its goroutine's
// behalf (Status and Send from a poll's read or the dispatcher).
func withTask(ctx context.Context, t *task) context.Context {
	return context.WithValue(ctx, taskKey{}, t)
}

// taskOf is ctx's task; nil when it has none.
func taskOf(ctx context.Context) *task {
	t, _ := ctx.Value(taskKey{}).(*task)
	return t
}

// answer is a status answer handed to a waiter: work in hand until the
// waiter has taken it (done).
type answer struct {
	s    Status
	done func()
}
