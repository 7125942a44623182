package mqtt

import "sync"

// outQueue is the ordered outbound queue, bounded by the bytes it holds
// rather than by a count of messages: a republish of thousands of small
// discovery configs fits, while memory stays what is actually waiting.
type outQueue struct {
	mu     sync.Mutex
	msgs   []outMsg
	head   int
	bytes  int
	max    int
	notify chan struct{} // has a value while msgs is not empty
}

// keptCapacity is how many slots an empty queue keeps for the next burst.
const keptCapacity = 1024

func newOutQueue(maxBytes int) *outQueue {
	return &outQueue{max: maxBytes, notify: make(chan struct{}, 1)}
}

// size is what a message costs in the queue.
func (m outMsg) size() int { return len(m.topic) + len(m.payload) + 64 }

// push appends m; false when it would take the queue over its bound.
func (q *outQueue) push(m outMsg) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.bytes+m.size() > q.max && q.len() > 0 {
		return false
	}
	q.msgs = append(q.msgs, m)
	q.bytes += m.size()
	select {
	case q.notify <- struct{}{}:
	default:
	}
	return true
}

// pop takes the oldest message.
func (q *outQueue) pop() (outMsg, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.len() == 0 {
		return outMsg{}, false
	}
	m := q.msgs[q.head]
	q.msgs[q.head] = outMsg{}
	q.head++
	q.bytes -= m.size()
	if q.head == len(q.msgs) {
		q.msgs, q.head = q.msgs[:0], 0
		if cap(q.msgs) > keptCapacity {
			// Drained after a burst (a full republish of a large
			// account): do not keep its backing array for good.
			q.msgs = nil
		}
	} else if q.head > 1024 && q.head*2 > len(q.msgs) {
		// Move the rest to the front now and then, so the backing
		// array does not grow without bound under a steady stream.
		n := copy(q.msgs, q.msgs[q.head:])
		clear(q.msgs[n:])
		q.msgs, q.head = q.msgs[:n], 0
	}
	return m, true
}

// Len is the number of messages waiting.
func (q *outQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.len()
}

func (q *outQueue) len() int { return len(q.msgs) - q.head }
