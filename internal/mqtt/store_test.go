package mqtt

import (
	"testing"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
)

// TestStoreHandsOutCopiesOfPublishes: what paho's resume takes from the
// store to send again is a copy, so that marking it a duplicate does not
// write the packet a lost connection's writer may still be writing
// (paho#703); the copy carries the same message, and other packets come
// back as stored.
func TestStoreHandsOutCopiesOfPublishes(t *testing.T) {
	s := &store{Store: paho.NewOrderedMemoryStore(), onAll: func() {}}
	s.Open()
	defer s.Close()
	pub := packets.NewControlPacket(packets.Publish).(*packets.PublishPacket)
	pub.Qos, pub.TopicName, pub.MessageID, pub.Payload = 1, "c2m/d0/state", 7, []byte(`{"on":true}`)
	s.Put("o.7", pub)
	rel := packets.NewControlPacket(packets.Pubrel).(*packets.PubrelPacket)
	rel.MessageID = 8
	s.Put("o.8", rel)

	got, ok := s.Get("o.7").(*packets.PublishPacket)
	if !ok {
		t.Fatalf("Get of a stored publish: %T", s.Get("o.7"))
	}
	if got == pub {
		t.Fatal("Get handed out the stored publish itself; want a copy")
	}
	got.Dup = true // what paho's resume does
	if pub.Dup {
		t.Error("marking the copy a duplicate marked the stored publish")
	}
	if got.TopicName != pub.TopicName || got.MessageID != pub.MessageID || string(got.Payload) != string(pub.Payload) || got.Qos != 1 {
		t.Errorf("the copy %v differs from the stored publish %v", got, pub)
	}
	if r := s.Get("o.8"); r != rel {
		t.Errorf("Get of a stored pubrel: %v, want the packet stored", r)
	}
}
