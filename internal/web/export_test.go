package web

// Test seams: what only the tests of this package read.

// count is the streams open (ingress included).
func (s *streamSlots) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total + s.ingress
}
