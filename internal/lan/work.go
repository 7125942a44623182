package lan

import (
	"context"

	"cloud2mqtt/internal/clock"
)

// Work in hand (clock.Busy and its kin): a test clock jumps only when none
// is, so the client reports its datagrams and its waits' wake-ups.

// task is the work in hand of one goroutine that waits between steps. It is
// let go while the goroutine waits, so a test can jump the clock over the
// wait. A nil task does nothing.
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
