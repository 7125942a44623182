package mqtt

import "sync"

// outQueue is the ordered outbound queue, bounded in bytes so that thousands
// of small discovery configs fit. What Publish queues goes before what
// PublishBulk queued, so that states are not held behind the configs; each
// lane keeps its order.
type outQueue struct {
	mu     sync.Mutex
	lanes  [2]lane // laneFirst, laneBulk
	bytes  int
	peak   int // the most bytes queued since takePeak last looked
	max    int
	notify chan struct{} // has a value while a lane is not empty
	closed bool          // the publisher stopped: nothing is taken any more
}

// The lanes, in the order they are sent.
const (
	laneFirst = iota
	laneBulk
)

// lane is one ordered list of messages.
type lane struct {
	msgs []outMsg
	head int
}

// keptCapacity is how many slots an empty lane keeps for the next burst.
const keptCapacity = 1024

func newOutQueue(maxBytes int) *outQueue {
	return &outQueue{max: maxBytes, notify: make(chan struct{}, 1)}
}

// size is what a message costs in the queue.
func (m outMsg) size() int { return len(m.topic) + len(m.payload) + 64 }

// push appends m to the first lane; false when it would take the queue
// over its bound.
func (q *outQueue) push(m outMsg) bool { return q.pushTo(laneFirst, m) }

// pushTo appends m to a lane; false when it would take the queue over its
// bound, or the queue is closed.
func (q *outQueue) pushTo(l int, m outMsg) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.bytes+m.size() > q.max && q.len() > 0 {
		return false
	}
	q.lanes[l].msgs = append(q.lanes[l].msgs, m)
	q.bytes += m.size()
	q.peak = max(q.peak, q.bytes)
	select {
	case q.notify <- struct{}{}:
	default:
	}
	return true
}

// pop takes the oldest message of the first lane that has one.
func (q *outQueue) pop() (outMsg, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := range q.lanes {
		if m, ok := q.lanes[i].pop(); ok {
			q.bytes -= m.size()
			return m, true
		}
	}
	return outMsg{}, false
}

func (l *lane) pop() (outMsg, bool) {
	if l.len() == 0 {
		return outMsg{}, false
	}
	m := l.msgs[l.head]
	l.msgs[l.head] = outMsg{}
	l.head++
	if l.head == len(l.msgs) {
		l.msgs, l.head = l.msgs[:0], 0
		if cap(l.msgs) > keptCapacity {
			// Drained after a burst (a full republish of a large
			// account): do not keep its backing array for good.
			l.msgs = nil
		}
	} else if l.head > 1024 && l.head*2 > len(l.msgs) {
		// Move the rest to the front now and then, so the backing
		// array does not grow without bound under a steady stream.
		n := copy(l.msgs, l.msgs[l.head:])
		clear(l.msgs[n:])
		l.msgs, l.head = l.msgs[:n], 0
	}
	return m, true
}

// close empties the queue for good: it returns what it held, and refuses
// every message from now on (the publisher stops).
func (q *outQueue) close() []outMsg {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	var rest []outMsg
	for i := range q.lanes {
		l := &q.lanes[i]
		rest = append(rest, l.msgs[l.head:]...)
		l.msgs, l.head = nil, 0
	}
	q.bytes = 0
	return rest
}

// takePeak returns the most bytes the queue held since the last call.
func (q *outQueue) takePeak() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.peak
	q.peak = q.bytes
	return p
}

func (q *outQueue) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

func (l *lane) len() int { return len(l.msgs) - l.head }

// Len is the number of messages waiting.
func (q *outQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.len()
}

func (q *outQueue) len() int { return q.lanes[laneFirst].len() + q.lanes[laneBulk].len() }
