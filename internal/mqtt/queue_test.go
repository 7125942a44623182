package mqtt

import (
	"fmt"
	"testing"
)

// TestOutQueueBoundedInBytes: thousands of small messages fit where a
// count bound would drop them; the byte bound holds; order is kept.
func TestOutQueueBoundedInBytes(t *testing.T) {
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
