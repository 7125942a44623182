package scheduler

// Priority orders requests competing for the same budget or the same
// in-flight slots. Lower values go first.
type Priority int

const (
	// PriorityCommand is a user's control command.
	PriorityCommand Priority = iota
	// PriorityConfirm is the state read that confirms a command's effect.
	PriorityConfirm
	// PriorityFirst is a device's first state read (after the start, or
	// once the device list adds it): it may go on the wire beside the
	// steady reads in flight, up to Config.FirstInFlight at once, since
	// the cloud's state limit is per device and its bucket is full.
	PriorityFirst
	// PriorityPoll is a periodic state read.
	PriorityPoll
	// PriorityRefresh is a device-list or scene refresh.
	PriorityRefresh
)

// String names the priority for logs and metrics.
func (p Priority) String() string {
	switch p {
	case PriorityCommand:
		return "command"
	case PriorityConfirm:
		return "confirm"
	case PriorityFirst:
		return "first"
	case PriorityPoll:
		return "poll"
	case PriorityRefresh:
		return "refresh"
	}
	return "unknown"
}
