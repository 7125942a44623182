package mqtt

import (
	"fmt"
	"testing"
)

// TestOutQueueBoundedInBytes: thousands of small messages fit where a
// count bound would drop them; the byte bound holds; order is kept.
func TestOutQueueBoundedInBytes(t *testing.T) {
	t.Parallel()
	q := newOutQueue(1 << 20)
	payload := make([]byte, 500)
	n := 0
	for q.push(outMsg{topic: fmt.Sprintf("homeassistant/light/d%d/config", n), payload: payload}) {
		n++
	}
	if n < 1500 || n > 2000 {
		t.Fatalf("%d messages of ~600 bytes fit in 1 MiB", n)
	}
	if q.Len() != n {
		t.Fatalf("Len = %d, want %d", q.Len(), n)
	}
	for i := range n {
		m, ok := q.pop()
		if !ok || m.topic != fmt.Sprintf("homeassistant/light/d%d/config", i) {
			t.Fatalf("pop %d = %q, %v", i, m.topic, ok)
		}
		if i == n/2 && !q.push(outMsg{topic: "late", payload: payload}) {
			t.Fatalf("no room after popping half")
		}
	}
	if m, ok := q.pop(); !ok || m.topic != "late" {
		t.Fatalf("the late message: %q %v", m.topic, ok)
	}
	if _, ok := q.pop(); ok || q.bytes != 0 {
		t.Fatalf("queue not empty: %d bytes", q.bytes)
	}
	// One message larger than the bound still goes through an empty queue.
	if !q.push(outMsg{topic: "big", payload: make([]byte, 2<<20)}) {
		t.Errorf("an oversized message was refused by an empty queue")
	}
}

// TestOutQueueReleasesBurst: once a burst (a large account's republish)
// has drained, the queue does not hold on to the burst's backing array.
func TestOutQueueReleasesBurst(t *testing.T) {
	t.Parallel()
	q := newOutQueue(64 << 20)
	for i := range 10 * keptCapacity {
		if !q.push(outMsg{topic: fmt.Sprintf("t/%d", i), payload: []byte("x")}) {
			t.Fatalf("push %d refused", i)
		}
	}
	for range 10 * keptCapacity {
		if _, ok := q.pop(); !ok {
			t.Fatal("queue emptied early")
		}
	}
	if c := cap(q.lanes[laneFirst].msgs); c > keptCapacity {
		t.Errorf("after draining a burst of %d messages the queue keeps room for %d; want at most %d", 10*keptCapacity, c, keptCapacity)
	}
	if !q.push(outMsg{topic: "after", payload: []byte("x")}) {
		t.Fatal("push after the burst refused")
	}
	if m, ok := q.pop(); !ok || m.topic != "after" {
		t.Fatalf("pop after the burst = %q, %v", m.topic, ok)
	}
}

// TestOutQueueLanes: the first lane empties before the bulk lane, whatever
// the order of the pushes; each lane keeps its order; the byte bound is
// the queue's, both lanes together.
func TestOutQueueLanes(t *testing.T) {
	t.Parallel()
	q := newOutQueue(10 * outMsg{topic: "t/0", payload: []byte("x")}.size())
	for i := range 6 {
		lane := laneBulk
		if i%2 == 1 {
			lane = laneFirst
		}
		if !q.pushTo(lane, outMsg{topic: fmt.Sprintf("t/%d", i), payload: []byte("x")}) {
			t.Fatalf("push %d refused", i)
		}
	}
	for i := 6; i < 10; i++ {
		if !q.push(outMsg{topic: fmt.Sprintf("t/%d", i), payload: []byte("x")}) {
			t.Fatalf("push %d refused", i)
		}
	}
	if q.pushTo(laneBulk, outMsg{topic: "t/x", payload: []byte("x")}) || q.push(outMsg{topic: "t/y", payload: []byte("x")}) {
		t.Errorf("a push beyond the bound of both lanes together was taken")
	}
	var got []string
	for {
		m, ok := q.pop()
		if !ok {
			break
		}
		got = append(got, m.topic)
	}
	if want := "[t/1 t/3 t/5 t/6 t/7 t/8 t/9 t/0 t/2 t/4]"; fmt.Sprint(got) != want {
		t.Errorf("popped %v, want %s", got, want)
	}
	if q.Len() != 0 || q.bytes != 0 {
		t.Errorf("emptied queue: %d messages, %d bytes", q.Len(), q.bytes)
	}
}
