package registry

import "cloud2mqtt/internal/clock"

// Option configures a Registry made by New.
type Option func(*Registry)

// WithClock makes c the registry's time: when a device's values were last
// read (Stats' OldestState) and the instants of what Save and the state
// files say (nil: clock.Real). The registry keeps no timers.
func WithClock(c clock.Clock) Option {
	return func(r *Registry) { r.now = clock.Or(c).Now }
}
