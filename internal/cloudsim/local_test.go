package cloudsim

import (
	"testing"

	"cloud2mqtt/internal/capability"
)

func TestSetLocal(t *testing.T) {
	s := New(Options{})
	const light = "AA:BB:CC:DD:EE:FF:10:02" // white 2200–6500 K
	if err := s.SetLocal(light, capability.InstanceColorTemperatureK, int64(3000)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetLocal(light, capability.InstanceColorRGB, int64(0x102030)); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Value(light, capability.InstanceColorTemperatureK); v != int64(0) {
		t.Errorf("colour temperature after a local colour: %v, want 0 as the cloud reports it", v)
	}
	if err := s.SetLocal(light, capability.InstanceColorTemperatureK, int64(9000)); err == nil {
		t.Error("a white outside the light's range was stored")
	}
	if err := s.SetLocal(light, "online", true); err == nil {
		t.Error("a read-only instance was set")
	}
	if err := s.SetOnline(light, false); err != nil {
		t.Fatal(err)
	}
	if err := s.SetLocal(light, capability.InstancePower, int64(0)); err != nil {
		t.Errorf("the LAN works while the cloud sees the light offline: %v", err)
	}
	if n := len(s.Requests()) + len(s.ControlLog()); n != 0 {
		t.Errorf("local changes logged %d requests or controls", n)
	}
}
