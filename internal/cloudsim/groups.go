package cloudsim

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Groups made in the vendor's app: the live service lists them as devices
// (with SKUs of their own), accepts their commands, and answers their state
// reads with 400 "devices not exist".

// GroupSKUs are the SKUs the live service gives app-made groups.
var GroupSKUs = []string{"SameModeGroup", "BaseGroup", "DreamViewScenic"}

// IsGroupSKU reports whether sku is one of GroupSKUs.
func IsGroupSKU(sku string) bool { return slices.Contains(GroupSKUs, sku) }

// statelessOf is the set of stateless device ids of a catalogue.
func statelessOf(cat *Catalogue) map[string]bool {
	out := map[string]bool{}
	for _, d := range cat.Devices {
		if on, named := cat.Stateless[d.Device.Device]; named && !on {
			continue
		}
		if IsGroupSKU(d.SKU) || cat.Stateless[d.Device.Device] {
			out[d.Device.Device] = true
		}
	}
	return out
}

// AddGroups appends n app-made groups of lights to the catalogue, with
// numeric ids as the live service gives them. Their state reads answer 400
// "devices not exist"; their commands are accepted.
func AddGroups(cat *Catalogue, n int) error {
	var light json.RawMessage
	for _, d := range DemoCatalogue().Devices {
		if d.SKU == "H6008" {
			light = d.Raw
		}
	}
	if light == nil {
		return fmt.Errorf("cloudsim: the demo catalogue has no H6008 to make groups of")
	}
	for i := range n {
		var d map[string]any
		if err := json.Unmarshal(light, &d); err != nil {
			return fmt.Errorf("cloudsim: demo device H6008: %w", err)
		}
		d["sku"] = GroupSKUs[i%len(GroupSKUs)]
		d["device"] = fmt.Sprintf("%d", 11000001+i)
		d["deviceName"] = fmt.Sprintf("Group %d", i+1)
		b, err := json.Marshal([]any{d})
		if err != nil {
			return err
		}
		one, err := ParseCatalogue(b)
		if err != nil {
			return err
		}
		for _, have := range cat.Devices {
			if have.Device.Device == one.Devices[0].Device.Device {
				return fmt.Errorf("cloudsim: group id %s is taken in the catalogue", have.Device.Device)
			}
		}
		cat.Devices = append(cat.Devices, one.Devices[0])
	}
	return nil
}

// SetStateless makes the device's state reads answer 400 "devices not
// exist" (on) or its state (off), as when a group becomes readable.
func (s *Sim) SetStateless(id string, on bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.lookup(id); err != nil {
		return err
	}
	if on {
		s.stateless[id] = true
	} else {
		delete(s.stateless, id)
	}
	return nil
}
