package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// message is the last payload seen on a topic and when it arrived.
type message struct {
	payload []byte
	at      time.Time
}

// store keeps the last message of every topic the check subscribes to
// (everything: discovery, the bridge's topics, Home Assistant's mirror).
type store struct {
	mu   sync.Mutex
	last map[string]message
}

func newStore() *store { return &store{last: map[string]message{}} }

func (s *store) put(topic string, payload []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last[topic] = message{payload: append([]byte(nil), payload...), at: time.Now()}
}

func (s *store) get(topic string) (message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.last[topic]
	return m, ok
}

// prefixed returns the topics under prefix with their last message.
func (s *store) prefixed(prefix string) map[string]message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]message{}
	for t, m := range s.last {
		if strings.HasPrefix(t, prefix) {
			out[t] = m
		}
	}
	return out
}

// mqttClient connects to the broker and records every message in st.
func mqttClient(broker string, st *store) (paho.Client, error) {
	opts := paho.NewClientOptions().AddBroker(broker).
		SetClientID(fmt.Sprintf("ha-e2e-%d", time.Now().UnixNano())).
		SetAutoReconnect(true).SetOrderMatters(true) // the last message kept must be the broker's last
	opts.SetOnConnectHandler(func(c paho.Client) {
		c.Subscribe("#", 0, func(_ paho.Client, m paho.Message) { st.put(m.Topic(), m.Payload()) })
	})
	c := paho.NewClient(opts)
	tok := c.Connect()
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		return nil, fmt.Errorf("ha-e2e: connect to %s: %v", broker, tok.Error())
	}
	return c, nil
}

func publish(c paho.Client, topic string, payload []byte, retain bool) error {
	tok := c.Publish(topic, 1, retain, payload)
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		return fmt.Errorf("ha-e2e: publish %s: %v", topic, tok.Error())
	}
	return nil
}

// callService asks Home Assistant (through the automation on e2e/call) to
// call a service on an entity, as a user's click would.
func callService(c paho.Client, action, entity string, data map[string]any) error {
	if data == nil {
		data = map[string]any{}
	}
	b, err := json.Marshal(map[string]any{"action": action, "entity_id": entity, "data": data})
	if err != nil {
		return fmt.Errorf("ha-e2e: encode call: %w", err)
	}
	return publish(c, "e2e/call", b, false)
}

// eventually polls f until it returns nil or the timeout passes; it returns
// f's last error.
func eventually(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}
