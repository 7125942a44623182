package lan

// SetTrace makes the client report every datagram's fate ("scan",
// "status", "malformed", "oversized", "unsolicited", "spoofed", "unknown")
// after handling it, from its reader goroutine. Set before any datagram
// arrives.
func SetTrace(c *Client, f func(event string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trace = f
}
