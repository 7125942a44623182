package cloudsim

import (
	"encoding/json"
	"fmt"
)

// householdMix is the share of each demo device (by SKU) in a generated
// account: a household is mostly lights, plugs and sensors, with a few of
// the rest.
var householdMix = []struct {
	sku    string
	weight int
}{
	{"H6008", 20}, {"H619C", 12}, {"H6076", 8}, // lights: plain bulbs, strips with segments
	{"H5082", 20},               // plugs
	{"H5179", 12}, {"H5100", 6}, // thermometers, sensors
	{"H5106", 3},               // air quality monitors
	{"H7102", 3}, {"H7126", 3}, // fans, purifiers
	{"H7133", 2}, {"H7171", 2}, // heaters
	{"H7142", 2}, {"H7151", 2}, // humidifiers, dehumidifiers
	{"H7172", 1}, {"H7161", 2}, // ice makers, diffusers
	{"H6604", 2}, // sync boxes
}

// Household is an account of n devices cloned from the demo catalogue in
// the proportions of a real home, for load tests and benchmarks.
func Household(n int) (*Catalogue, error) {
	raw := map[string]json.RawMessage{}
	for _, d := range DemoCatalogue().Devices {
		raw[d.SKU] = d.Raw
	}
	var wheel []string
	for _, m := range householdMix {
		if _, ok := raw[m.sku]; !ok {
			return nil, fmt.Errorf("cloudsim: the demo catalogue has no %s", m.sku)
		}
		for range m.weight {
			wheel = append(wheel, m.sku)
		}
	}
	devices := make([]json.RawMessage, 0, n)
	for i := range n {
		sku := wheel[i%len(wheel)]
		var d map[string]any
		if err := json.Unmarshal(raw[sku], &d); err != nil {
			return nil, fmt.Errorf("cloudsim: demo device %s: %w", sku, err)
		}
		d["device"] = fmt.Sprintf("5A:%02X:%02X:%02X:C0:FF:EE:%02X", i>>16&0xff, i>>8&0xff, i&0xff, len(sku))
		d["deviceName"] = fmt.Sprintf("%s %d", sku, i)
		b, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		devices = append(devices, b)
	}
	b, err := json.Marshal(map[string]any{"code": 200, "message": "success", "data": devices})
	if err != nil {
		return nil, err
	}
	return ParseCatalogue(b)
}
