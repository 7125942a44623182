package app

import "cloud2mqtt/internal/lan"

// SetLANClient replaces the LAN client's settings (the simulator's ports
// and loopback addresses, short timeouts); call it before Run.
func (m *Main) SetLANClient(c lan.Config) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lanClient = &c
}
