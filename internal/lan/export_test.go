package lan

// ScanAnswerWindow is how long after a scan its answers are accepted.
const ScanAnswerWindow = scanAnswerWindow

// MaxEarly is how many ids' scan answers are kept before the device list.
const MaxEarly = maxEarly

// SetTrace makes the client report each datagram's fate ("scan", "spoofed",
// ...) from its reader. Set it before any datagram arrives.
func SetTrace(c *Client, f func(event string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trace = f
}

// SetOnStatus makes the client report every accepted status answer in
// arrival order; f must not block or call the client. Set it before any
// datagram arrives.
func SetOnStatus(c *Client, f func(id string, s Status)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onStatus = f
}
