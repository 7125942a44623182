package app

import "time"

// SetPageAddr makes the status page judge HTTP_ADDR to be addr for its
// loopback rule (a test binds loopback and has the page take it for a
// network address); call it before Run.
func (m *Main) SetPageAddr(addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.web.pageAddr = addr
}

// SetHTTPIdleTimeout shortens how long the HTTP endpoint keeps an idle
// kept-alive connection open; call it before Run.
func (m *Main) SetHTTPIdleTimeout(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.web.timeouts.idle = d
}

// IngressURL is the ingress listener's base URL once it serves ("" none).
func (m *Main) IngressURL() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.web.ingressURL
}
