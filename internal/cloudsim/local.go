package cloudsim

import (
	"fmt"

	"cloud2mqtt/internal/capability"
)

// SetLocal changes a light's state as a LAN command would: validated and
// stored like a control, but costing no request or token, whatever the
// cloud's online flag.
func (s *Sim) SetLocal(device, instance string, v any) error {
	v = capability.NormalizeValue(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	sd, err := s.lookup(device)
	if err != nil {
		return err
	}
	c, ok := sd.dev.Capability(instance)
	if !ok || !c.Controllable() {
		return fmt.Errorf("cloudsim: set %s of %s locally: the device has no such controllable instance", instance, device)
	}
	if err := capability.Validate(s.effective(sd, c), v); err != nil {
		return fmt.Errorf("cloudsim: set %s of %s locally: %w", instance, device, err)
	}
	sd.values[instance] = merge(sd.values[instance], capability.WithDefaults(c, v))
	sd.zeroAfter(instance)
	return nil
}
