// Package bridge is the MQTT side of the daemon, both ways. The Mirror
// keeps the broker's retained topics (device list, Home Assistant
// discovery, state, availability, stats) in step with the registry, whose
// observer it is. The Bridge takes every MQTT message: it turns commands into
// validated cloud control requests for the scheduler, records what the
// cloud accepted in the registry, and answers the bridge's requests.
//
// It knows topics and payloads but not the broker: it publishes through a
// Publisher and receives every message through Handle, so tests drive it
// without one. It does not decide when the cloud is asked (the poller and
// the scheduler do), and it keeps no device state (the registry does).
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

// BulkPublisher is a Publisher that can send some messages after all the
// others queued (mqtt.Client): the mirror sends Home Assistant's discovery
// configs through PublishBulk, so that a start's or a reconnect's thousands
// of them do not hold back the states, the device list and the bridge's
// own topics. Each topic always takes the same one of the two methods.
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

// Registry is what the bridge asks of the registry: the device a command
// is for, the value a partial command completes, and what the cloud
// accepted.
type Registry interface {
	Devices() []capability.Device
	Listed() bool
	FirstList() <-chan struct{}
	Device(k capability.Key) (capability.Device, bool)
	Value(k capability.Key, instance string) (any, bool)
	SetOptimistic(k capability.Key, instance string, value any)
}

// Operator changes the bridge's settings at run time (internal/app does):
// raw is the request's "options" object. What it returns is the response's
// data, or the error that says what is wrong and how to fix it (nothing is
// changed then).
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
	// OnError, when set, sees every answer published on <id>/error for a
	// device the mirror knows: its key, the instance the answer names (""
	// when none), whether it answers a read on request (<id>/get) and the
	// error's text (the status page's last error, which a later success
	// of the same kind clears). Answers for ids that name no device are
	// not passed on.
	OnError func(k capability.Key, instance string, read bool, msg string)
	// RejectRate and RejectBurst bound the answers on <id>/error per device
	// (zero: DefaultRejectRate, DefaultRejectBurst); the rejections over it
	// are answered together in one message. RejectLogRate and
	// RejectLogBurst bound the log lines of rejections for the whole bridge.
	RejectRate, RejectLogRate   rate.Limit
	RejectBurst, RejectLogBurst int
	// Clock times the corrections of the bridge's retained topics
	// another client overwrote (keep.go); nil is the system's clock.
	Clock clock.Clock
	Log   zerolog.Logger
}

// mirrorSide is all the Bridge asks of the Mirror (which owns the published
// topics, their lock and the id of every device): it never takes the
// Mirror's lock or reads its entries itself.
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

// New returns a bridge that answers through mirror, looks devices up in
// and records commands in reg, asks read for reads and refreshes, commands
// through cmd and has op change settings (nil: settings requests are
// refused).
func New(mirror *Mirror, reg Registry, read Reader, cmd Commander, op Operator) *Bridge {
	return &Bridge{opt: mirror.opt, log: mirror.log, mirror: mirror, reg: reg, read: read, cmd: cmd, op: op, heldKick: make(chan struct{}, 1),
		rejects: newRejects(mirror.opt)}
}

// Subscriptions lists the topic filters whose messages must reach Handle:
// the commands and requests, the bridge's own retained topics it keeps
// true (keep.go), and Home Assistant's status.
func (b *Bridge) Subscriptions() []string {
	subs := append(b.opt.Layout.Inbound(), b.opt.Layout.Watched()...)
	if b.opt.DiscoveryEnabled {
		subs = append(subs, b.opt.HAStatusTopic)
	}
	return subs
}
