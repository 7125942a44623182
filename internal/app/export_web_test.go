package app

// SetPageAddr makes the status page judge HTTP_ADDR to be addr for its
// loopback rule (a test binds loopback and has the page take it for a
// network address); call it before Run.
func (m *Main) SetPageAddr(addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pageAddr = addr
}
