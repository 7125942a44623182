package cloudsim

import (
	"strings"
	"testing"
)

func TestHousehold(t *testing.T) {
	c, err := Household(1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Devices) != 1000 {
		t.Fatalf("%d devices, want 1000", len(c.Devices))
	}
	seen := map[string]bool{}
	lights := 0
	for _, d := range c.Devices {
		if seen[d.Device.Device] {
			t.Fatalf("device id %s twice", d.Device.Device)
		}
		seen[d.Device.Device] = true
		if strings.HasSuffix(d.Type, "light") {
			lights++
		}
	}
	if lights < 350 || lights > 450 {
		t.Errorf("%d lights in 1000, want about 40 %%", lights)
	}
}
