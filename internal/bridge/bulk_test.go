package bridge

import (
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/topic"
)

// bulkPub records which of its two methods each topic went through.
type bulkPub struct {
	mu   sync.Mutex
	bulk map[string][]bool // topic → PublishBulk or not, per message
}

func (p *bulkPub) record(t string, bulk bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bulk[t] = append(p.bulk[t], bulk)
	return nil
}

func (p *bulkPub) Publish(t string, _ []byte, _ bool, _ byte) error { return p.record(t, false) }
func (p *bulkPub) PublishBulk(t string, _ []byte, _ bool, _ byte) error {
	return p.record(t, true)
}

// TestConfigsInBulkTheRestFirst: every discovery config, removals included, goes
// through PublishBulk and everything else through Publish, each topic always the
// same way, so that states are not held behind thousands of configs.
func TestConfigsInBulkTheRestFirst(t *testing.T) {
	for _, prefix := range []string{"homeassistant", "ha/discovery"} {
		t.Run(prefix, func(t *testing.T) {
			pub := &bulkPub{bulk: map[string][]bool{}}
			l := topic.New("c2m")
			b := newTestBridgeWith(t, Options{Layout: l, DiscoveryEnabled: true,
				Discovery: discovery.Config{Prefix: prefix, Layout: l, Version: "test", DailyLimit: 10000}, Log: zerolog.Nop()}, pub, &fakeCmd{}, &fakeReader{})
			plug := capability.Device{SKU: "H5080", Device: "AA:BB:CC:DD:EE:FF:00:02", Type: capability.DeviceSocket,
				Capabilities: []capability.Capability{{Type: capability.TypeOnOff, Instance: capability.InstancePower}}}
			b.Devices([]capability.Device{lamp, plug}, nil, nil)
			b.State(lamp, true, map[string]any{"powerSwitch": int64(1), "brightness": int64(40)})
			b.State(plug, true, map[string]any{"powerSwitch": int64(0)})
			b.Scenes(lamp, []capability.Option{{Name: "Sunrise", Value: map[string]any{"id": int64(1)}}}, nil)
			b.PublishStats(discovery.BridgeStats{})
			b.Devices([]capability.Device{lamp}, nil, nil) // the plug's configs emptied
			b.Connected()                                  // everything again

			kinds := map[bool]int{}
			for tp, how := range pub.bulk {
				config := strings.HasPrefix(tp, prefix+"/") && strings.HasSuffix(tp, "/config")
				for _, bulk := range how {
					if bulk != config {
						t.Errorf("%s sent with PublishBulk %v, want %v (only discovery configs in bulk)", tp, bulk, config)
						break
					}
				}
				kinds[config] += len(how)
			}
			for _, want := range []string{"c2m/bridge/devices", "c2m/" + lampID + "/state", "c2m/" + lampID + "/availability", "c2m/bridge/stats"} {
				if len(pub.bulk[want]) == 0 {
					t.Errorf("%s was not published", want)
				}
			}
			if kinds[true] == 0 || kinds[false] == 0 {
				t.Errorf("%d configs and %d other messages published; want both", kinds[true], kinds[false])
			}
		})
	}
}
