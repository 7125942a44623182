package bridge

import (
	"strings"
	"testing"

	"cloud2mqtt/internal/capability"
)

// TestIDsInAnyCase: an id typed in capitals, or the cloud's "sku/device" in
// another case, names the device when no other matches, and the answer goes to
// the device's own topics.
func TestIDsInAnyCase(t *testing.T) {
	b, pub, cmd, _ := newTestBridge(t, false)
	pub.take()
	b.Handle("c2m/"+strings.ToUpper(lampID)+"/set/brightness", []byte("50"), false)
	if len(cmd.reqs) != 1 || cmd.reqs[0].Device != lamp.Device {
		t.Fatalf("the command in capitals sent %+v, want the lamp's", cmd.reqs)
	}
	for _, m := range pub.take() {
		if strings.Contains(m.topic, strings.ToUpper(lampID)) || m.topic == "c2m/bridge/error" {
			t.Errorf("published %s %s: the answer is the lamp's, on its own topics", m.topic, m.payload)
		}
	}
	for _, ref := range []string{lampID, strings.ToUpper(lampID), "H6072/AA:BB:CC:DD:EE:FF:00:01", "h6072/aa:bb:cc:dd:ee:ff:00:01"} {
		if k, id, ok := b.m.KeyOf(ref); !ok || k != lamp.Key() || id != lampID {
			t.Errorf("KeyOf(%q) = %v, %q, %v; want the lamp", ref, k, id, ok)
		}
	}
}

// TestIDsDifferingOnlyInCase: two devices whose cloud ids differ only in
// case are not guessed between; the exact form still names each.
func TestIDsDifferingOnlyInCase(t *testing.T) {
	b, _, _, _ := newTestBridge(t, false)
	upper := lamp
	lower := lamp
	lower.Device = strings.ToLower(lamp.Device)
	lower.Name = "Other lamp"
	b.Devices([]capability.Device{upper, lower}, nil, nil)
	if _, _, ok := b.m.KeyOf("h6072/Aa:bB:cc:dd:ee:ff:00:01"); ok {
		t.Error("a mixed-case reference matching two devices was taken for one")
	}
	for _, d := range []capability.Device{upper, lower} {
		if k, _, ok := b.m.KeyOf(d.SKU + "/" + d.Device); !ok || k != d.Key() {
			t.Errorf("the exact %s/%s names %v, %v", d.SKU, d.Device, k, ok)
		}
	}
}
