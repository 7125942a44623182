package mqtt

import (
	"bytes"
	"sync"
	"testing"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
)

// storeWithPublish is an open store and a QoS 1 publish (id 7) to put in it.
func storeWithPublish(t *testing.T) (*store, *packets.PublishPacket) {
	s := &store{Store: paho.NewOrderedMemoryStore(), onAll: func() {}}
	s.Open()
	t.Cleanup(s.Close)
	pub := packets.NewControlPacket(packets.Publish).(*packets.PublishPacket)
	pub.Qos, pub.TopicName, pub.MessageID, pub.Payload = 1, "c2m/d0/state", 7, []byte(`{"on":true}`)
	return s, pub
}

// TestStoreHandsOutCopiesOfPublishes: what paho's resume takes from the
// store to send again is a copy, so that marking it a duplicate does not
// write the packet a lost connection's writer may still be writing
// (paho#703); the copy carries the same message, and other packets come
// back as stored.
func TestStoreHandsOutCopiesOfPublishes(t *testing.T) {
	t.Parallel()
	s, pub := storeWithPublish(t)
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

// TestStoreGetDoesNotRaceWithPahosWriter: paho's writer sets fields of the
// publish it writes (PublishPacket.Write sets the remaining length) while,
// after a reconnect, resume takes the same message from the store and marks
// it a duplicate (paho#703). What Get hands out must not be read from the
// packet the writer writes: under -race this fails when it is.
func TestStoreGetDoesNotRaceWithPahosWriter(t *testing.T) {
	t.Parallel()
	s, pub := storeWithPublish(t)
	s.Put("o.7", pub) // as paho's Publish does, before it hands pub to its writer

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the lost connection's writer
		defer wg.Done()
		var buf bytes.Buffer
		if err := pub.Write(&buf); err != nil {
			t.Error(err)
		}
	}()
	got := s.Get("o.7").(*packets.PublishPacket) // resume, meanwhile
	got.Dup = true
	wg.Wait()

	var buf bytes.Buffer
	if err := got.Write(&buf); err != nil {
		t.Fatal(err)
	}
	again, err := packets.ReadPacket(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := again.(*packets.PublishPacket); !ok || !p.Dup || p.Qos != 1 || p.MessageID != 7 || p.TopicName != pub.TopicName || string(p.Payload) != string(pub.Payload) {
		t.Errorf("the resent publish reads back as %v", again)
	}
	if s.Get("o.7").(*packets.PublishPacket).Dup {
		t.Error("marking what Get handed out a duplicate marked the stored publish")
	}
}
