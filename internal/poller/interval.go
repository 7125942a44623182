package poller

import (
	"time"

	"cloud2mqtt/internal/capability"
)

// Interval is a device's poll interval in force, for the status page.
type Interval struct {
	// Every is the time between the device's periodic reads now: its own
	// interval or the poller's, lengthened by the back-off of a device
	// offline or failing.
	Every time.Duration
	// Own is true when the device has an interval of its own
	// (SetDeviceOptions).
	Own bool
	// Why says why it is read at that interval: WhyOften, WhyQuiet,
	// WhyPlain, WhyOwn, WhyLocal, WhyDisabled or WhyNoState.
	Why string
}

// Intervals returns every listed device's poll interval in force, by key.
func (p *Poller) Intervals() map[capability.Key]Interval {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[capability.Key]Interval, len(p.devices))
	for k, d := range p.devices {
		out[k] = Interval{Every: p.deviceInterval(d), Own: d.own > 0, Why: p.why(d)}
	}
	return out
}
