package registry

import "iter"

// State is a read of one device as the registry takes it: the cloud's
// answer (cloud.DeviceState) is one. Declared here, by its user, so that
// the registry depends on the value language alone.
type State interface {
	// Online reports the device's online flag; known is false when the
	// read carries none.
	Online() (online, known bool)
	// All yields every readable instance's value in normalised form
	// (capability.Normalize); the last of a repeated instance wins.
	All() iter.Seq2[string, any]
}
