package cloud

import "sync"

// names hands out the capability types and instances of state answers as
// strings without allocating one per answer: the same few dozen names come
// back in every read (powerSwitch, brightness, …), so the first answer's
// copy serves the rest. It keeps at most maxNames, so that a cloud
// answering with ever new names costs an allocation each, as before, and
// no memory beyond that.
type names struct {
	mu   sync.Mutex
	seen map[string]string
}

const maxNames = 512

// get returns b as a string: the one kept for it when there is one.
func (n *names) get(b []byte) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s, ok := n.seen[string(b)]; ok { // no allocation for the lookup
		return s
	}
	s := string(b)
	if n.seen == nil {
		n.seen = make(map[string]string)
	}
	if len(n.seen) < maxNames {
		n.seen[s] = s
	}
	return s
}
