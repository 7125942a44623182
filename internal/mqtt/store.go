package mqtt

import (
	"bytes"
	"slices"
	"sync"

	"github.com/eclipse/paho.mqtt.golang/packets"
)

// copyStore is paho's in-flight store holding each packet as its encoded
// bytes, in the order stored. paho's memory stores keep the packet objects
// themselves, and on every (re)connect paho's resume sets the DUP flag on
// them while its sending goroutine may be writing the same object: a data
// race (paho issue #703). Encoding on Put and decoding a fresh packet on Get
// means resume only ever touches its own copy.
type copyStore struct {
	mu    sync.Mutex
	open  bool
	keys  []string
	items map[string][]byte
}

func newCopyStore() *copyStore { return &copyStore{items: map[string][]byte{}} }

func (s *copyStore) Open() {
	s.mu.Lock()
	s.open = true
	s.mu.Unlock()
}

func (s *copyStore) Put(key string, p packets.ControlPacket) {
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		return // a packet that cannot be encoded could not be resent either
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		return
	}
	if _, ok := s.items[key]; !ok {
		s.keys = append(s.keys, key)
	}
	s.items[key] = buf.Bytes()
}

func (s *copyStore) Get(key string) packets.ControlPacket {
	s.mu.Lock()
	b, ok := s.items[key]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	p, err := packets.ReadPacket(bytes.NewReader(b))
	if err != nil {
		return nil
	}
	return p
}

func (s *copyStore) All() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.keys)
}

func (s *copyStore) Del(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.items[key]; !ok {
		return
	}
	delete(s.items, key)
	s.keys = slices.DeleteFunc(s.keys, func(k string) bool { return k == key })
}

func (s *copyStore) Close() {
	s.mu.Lock()
	s.open = false
	s.mu.Unlock()
}

func (s *copyStore) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys, s.items = nil, map[string][]byte{}
}
