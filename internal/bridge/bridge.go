// Package bridge is the MQTT side of the daemon, both ways. The Mirror keeps
// the broker's retained topics in step with the registry; the Bridge takes
// every MQTT message, turns commands into validated cloud requests for the
// scheduler, and answers the bridge's requests.
// It publishes through a Publisher and receives through Handle, so tests need
// no broker; it keeps no device state and does not decide when the cloud is asked.
package bridge

import (
	"encoding/json"
	"sync"

	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/topic"
)

// Publisher sends a message to the broker. It must not block on the network.
type Publisher interface {
	Publish(topic string, payload []byte, retained bool, qos byte) error
}

// BulkPublisher can send some messages after all others queued. The mirror
// sends discovery configs through PublishBulk so that thousands of them do not
// hold back the states; each topic always takes the same method.
type BulkPublisher interface {
	Publisher
	PublishBulk(topic string, payload []byte, retained bool, qos byte) error
}

// Commander queues control requests; the scheduler implements it.
type Commander interface {
	Control(req cloud.ControlRequest, report func(scheduler.CommandResult)) error
}

// Reader is what the bridge asks of the poller.
type Reader interface {
	Confirm(sku, device string)
	ReadNow(sku, device string, done func(error)) error
	RefreshDevices(done func(error)) error
	RefreshScenes(sku, device string, done func(error)) error
}

// Registry is what the bridge asks of the registry: the device a command is
// for, the value a partial command completes, and what the cloud accepted.
type Registry interface {
	Devices() []capability.Device
	Listed() bool
	FirstList() <-chan struct{}
	Device(k capability.Key) (capability.Device, bool)
	Value(k capability.Key, instance string) (any, bool)
	SetOptimistic(k capability.Key, instance string, value any)
}

// Operator changes the bridge's settings at run time; raw is the request's
// "options" object. It returns the response's data, or an error that says what
// to fix (and nothing changes).
type Operator interface {
	SetOptions(raw json.RawMessage) (any, error)
	SetDeviceOptions(id string, k capability.Key, raw json.RawMessage) (any, error)
}

// Options configures a Bridge.
type Options struct {
	Layout topic.Layout
	// Discovery is the Home Assistant mapping configuration; DiscoveryEnabled
	// false (HA_DISCOVERY=false) publishes no configs.
	Discovery        discovery.Config
	DiscoveryEnabled bool
	// HAStatusTopic is Home Assistant's birth topic (homeassistant/status):
	// "online" there makes the bridge republish configs and states.
	HAStatusTopic string
	// Health answers the health request: ok, the reasons when not, and details.
	Health func() (ok bool, reasons []string, details any)
	// OnCommand, when set, sees every command's outcome (for metrics).
	OnCommand func(scheduler.CommandResult)
	// OnError, when set, sees every answer on <id>/error for a known device: its
	// instance (or ""), whether it answers a <id>/get read, and the text. The
	// status page keeps it as the device's last error.
	OnError func(k capability.Key, instance string, read bool, msg string)
	// RejectRate and RejectBurst bound the answers on <id>/error per device (zero:
	// the defaults), the rest answered together; RejectLogRate and RejectLogBurst
	// bound the rejection log lines of the whole bridge.
	RejectRate, RejectLogRate   rate.Limit
	RejectBurst, RejectLogBurst int
	// Clock times the corrections of the bridge's retained topics
	// another client overwrote (keep.go); nil is the system's clock.
	Clock clock.Clock
	Log   zerolog.Logger
}

// mirrorSide is all the Bridge asks of the Mirror, which owns the published
// topics and their lock.
type mirrorSide interface {
	keyOf(id string) (capability.Key, string, bool)
	disabled(k capability.Key) bool
	deviceCount() int
	deviceList() []byte
	republish(withConfigs bool)
	republishState(k capability.Key)
	send(msgs []message)
	observed(t string, payload []byte)
}

// Bridge takes every MQTT message for the daemon. Its methods are safe for
// concurrent use.
type Bridge struct {
	opt       Options
	log       zerolog.Logger
	mirror    mirrorSide
	reg       Registry
	read      Reader
	cmd       Commander
	op        Operator
	heldMu    sync.Mutex
	held      []heldMessage // device messages waiting for the first device list
	heldBytes int           // their payloads' size
	released  bool          // the first list is in and nothing is held any more
	heldKick  chan struct{}
	rejects   *rejects
	local     Local        // nil: LAN control off (local.go)
	retained  retainedSeen // topics of retained commands logged (commands.go)
}

// New returns a bridge over mirror and reg that reads through read, commands
// through cmd and changes settings through op (nil: settings requests are refused).
func New(mirror *Mirror, reg Registry, read Reader, cmd Commander, op Operator) *Bridge {
	return &Bridge{opt: mirror.opt, log: mirror.log, mirror: mirror, reg: reg, read: read, cmd: cmd, op: op, heldKick: make(chan struct{}, 1),
		rejects: newRejects(mirror.opt)}
}

// Subscriptions lists the filters whose messages must reach Handle: commands,
// requests, the bridge's own retained topics it keeps true, and Home Assistant's status.
func (b *Bridge) Subscriptions() []string {
	subs := append(b.opt.Layout.Inbound(), b.opt.Layout.Watched()...)
	if b.opt.DiscoveryEnabled {
		subs = append(subs, b.opt.HAStatusTopic)
	}
	return subs
}
