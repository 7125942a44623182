package lan

import (
	"context"
	"sync"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock"
)

// Dispatcher sends commands given as cloud instances and values, one Send
// at a time per device, coalescing as the cloud's scheduler does. A newer
// value for a waiting setting replaces it (a colour and a white are one
// setting), and all waiting commands go out in the next Send together.
type Dispatcher struct {
	c   *Client
	ctx context.Context
	end context.CancelFunc
	wg  sync.WaitGroup

	mu      sync.Mutex
	pending map[string][]*job // by device id, in arrival order
	running map[string]bool
}

type job struct {
	slot   string
	cmd    Command
	report func(Status, error)
}

// NewDispatcher dispatches over the client until Close.
func NewDispatcher(c *Client) *Dispatcher {
	ctx, end := context.WithCancel(context.Background())
	return &Dispatcher{c: c, ctx: ctx, end: end, pending: map[string][]*job{}, running: map[string]bool{}}
}

// Submit queues a command if it has a LAN form and the device is
// reachable; false means the caller sends it to the cloud. report is called
// once, from another goroutine, with the confirming status,
// capability.ErrSuperseded, or the Send's error (then use the cloud).
func (q *Dispatcher) Submit(id, instance string, value any, report func(Status, error)) bool {
	cmd, ok := CommandFor(instance, value)
	if !ok || !q.c.Reachable(id) {
		return false
	}
	row, _ := capability.LocalFor(instance) // CommandFor found it
	j := &job{slot: row.Slot, cmd: cmd, report: report}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ctx.Err() != nil {
		return false
	}
	waiting := q.pending[id]
	for i, old := range waiting {
		if old.slot == j.slot {
			waiting = append(waiting[:i], waiting[i+1:]...)
			q.wg.Add(1)
			done := clock.Busy(q.c.cfg.Clock, "lan: a superseded command's report")
			go func() {
				defer q.wg.Done()
				defer done()
				old.report(Status{}, capability.ErrSuperseded)
			}()
			break
		}
	}
	q.pending[id] = append(waiting, j)
	// A job queued behind a running Send waits with it (the device's
	// goroutine takes it next); a new goroutine is work in hand from here.
	if !q.running[id] {
		q.running[id] = true
		q.wg.Add(1)
		tk := newTask(q.c.cfg.Clock, "lan: the commands of "+id)
		go q.run(id, tk)
	}
	return true
}

// run sends the device's waiting commands until none wait. It holds work
// in hand except while a Send waits.
func (q *Dispatcher) run(id string, tk *task) {
	defer q.wg.Done()
	defer tk.end()
	ctx := withTask(q.ctx, tk)
	for {
		q.mu.Lock()
		jobs := q.pending[id]
		delete(q.pending, id)
		if len(jobs) == 0 {
			delete(q.running, id)
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		cmds := make([]Command, len(jobs))
		for i, j := range jobs {
			cmds[i] = j.cmd
		}
		s, err := q.c.Send(ctx, id, cmds...)
		for _, j := range jobs {
			j.report(s, err)
		}
	}
}

// Close stops sending: commands in flight or waiting report the context's
// error; it waits for the device goroutines.
func (q *Dispatcher) Close() {
	q.mu.Lock()
	q.end()
	q.mu.Unlock()
	q.wg.Wait()
}
