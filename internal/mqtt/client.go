// Package mqtt is the bridge's connection to its MQTT broker, on
// eclipse/paho.mqtt.golang: a persistent session (clean session off, QoS 1),
// birth and will on the bridge's state topic, automatic reconnection with
// back-off, resubscription and an on-connect callback on every (re)connect,
// and handlers that run on the Client's own goroutines so that paho's are
// never blocked.
//
// It knows nothing about topics' meaning or payloads (package topic and the
// bridge do). Messages flow like this:
//
//   - Inbound: paho hands each message, in arrival order, to the dispatcher
//     (flow.go), which queues it for every matching subscription; one
//     goroutine per subscription runs its handler and then acknowledges the
//     message, so a crash loses nothing the broker counts as delivered. A
//     full queue drops the message (Stats.Dropped); a redelivery already
//     handled is acknowledged, not handled twice.
//   - Outbound: Publish queues the message and returns; one goroutine sends
//     the queue in order while the session is up (publish.go) and holds it
//     while down. PublishBulk's messages (discovery configs) go after
//     Publish's. A full queue makes Publish fail with ErrQueueFull.
package mqtt

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/topic"
)

// pendingMax bounds the messages kept for subscriptions not yet made: after
// a restart the broker delivers the persistent session's queued messages
// right after connecting, before the bridge has called Subscribe again.
const pendingMax = 256

// Stats are the connection's counters since Connect.
type Stats struct {
	Published     uint64 // messages the broker acknowledged (QoS 1) or that were written (QoS 0)
	PublishErrors uint64 // publishes that failed or timed out
	Received      uint64 // messages received from the broker
	Dropped       uint64 // messages dropped: a full inbound or outbound queue, or a full pending buffer
	Reconnects    uint64 // connections after the first
	Conflicts     uint64 // connections most likely taken over by another client with the same id (takeover.go)
	Queued        int    // messages waiting to be published
	Connected     bool
}

// inMsg is a message received. The queues hold pointers: a subscription's
// queue (Config.QueueSize places, made at Subscribe) then takes 8 bytes a
// place, not 32.
type inMsg struct {
	paho.Message
	gen uint64 // the connection it arrived on
	ack ack    // shared by every subscription it went to
}

type outMsg struct {
	topic    string
	payload  []byte
	retained bool
	qos      byte
	held     func() // lets go of its work in hand; nil when no clock counts it
}

func nop() {}

// release lets go of m's work in hand: it is published or given up.
func (m *outMsg) release() {
	if m.held != nil {
		m.held()
	}
}

// Handler takes one message of a subscription. retained is true only for
// a message the broker sent because the subscription was made after it was
// published with the retain flag (a retained message, stale by then: MQTT
// 3.1.1 §3.3.1.3); a message published while the subscription stood
// arrives with retained false, whatever flag its sender set.
type Handler func(topic string, payload []byte, retained bool)

type subscription struct {
	filter  string
	qos     byte
	handler Handler // guarded by Client.mu
	queue   chan *inMsg
}

// Client is a connection to the broker. Its methods are safe for concurrent use.
type Client struct {
	cfg       Config
	broker    *url.URL
	log       zerolog.Logger
	pc        paho.Client
	store     *store
	onConnect func(*Client)
	// counts: cfg.Clock keeps count of work in hand (not clock.Real); only
	// then does a message carry a hold (Config.Clock).
	counts bool

	connected chan struct{} // paho's on-connect, coalesced (capacity 1)
	firstUp   chan struct{} // closed when the first session is set up (subscriptions, onConnect, birth)
	out       *outQueue
	flush     chan struct{} // closed by Close: publish what is queued, then stop
	flushed   chan struct{} // closed by the publisher when it stops
	stop      chan struct{} // closed by Close: every worker stops
	quit      chan struct{} // closed when Close starts: a reconnection's back-off ends
	quitting  sync.Once
	wg        sync.WaitGroup

	mu       sync.Mutex
	subs     []*subscription
	pending  []*inMsg
	ready    chan struct{} // closed while the session is up (the publisher may send)
	resumed  chan struct{} // closed once paho has taken stock of its store after connecting
	armed    bool          // resumed is waiting for the store's All (reconnects)
	gen      uint64        // incremented on each connection loss
	closed   bool
	stopping bool // the workers stop: nothing more is queued for them
	lastErr  error
	lastHint string // what lastErr means (hint)
	connects int
	// releasing: a return of memory after a large message is scheduled;
	// released: when the last one ran.
	releasing bool
	released  time.Time
	// redelivered holds the packet ids of QoS 1 messages handled after
	// their connection was lost: the broker sends them again.
	redelivered map[uint16]bool
	conflict    takeover
	bl          backlog // the broker's backlog (backlog.go)

	dropLog *rate.Limiter // logDrop's lines

	published, publishErrors, received, dropped, reconnects, conflicts atomic.Uint64
	queued                                                             atomic.Int64 // in c.out or being sent
}

// Connect validates cfg, starts connecting and returns once the first
// connection is up, or with an error when ctx ends first (naming how long it
// waited and the last failure: DNS, refused, not authorized, TLS). While it
// waits, failed attempts are logged as warnings and retried every
// ConnectRetryInterval.
//
// On every connection, including reconnections, the Client (on its own
// goroutine) subscribes again to every filter given to Subscribe, calls
// onConnect (may be nil), where the bridge subscribes the first time and
// republishes discovery and states, and then publishes "online" retained on
// cfg.StateTopic: once "online" is out, a command sent is taken. The first
// call returns before Connect does. onConnect must return promptly; it may
// call Publish and Subscribe (through its argument: Connect has not returned
// yet the first time).
func Connect(ctx context.Context, cfg Config, onConnect func(c *Client)) (*Client, error) {
	cfg, err := cfg.normalized()
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(cfg.URL) // validated above
	tlsCfg, err := cfg.tlsConfig(u)
	if err != nil {
		return nil, err
	}
	// The logger's fields leave the client id out: warnings and errors
	// reach bridge/logging, where any client of the broker may read them.
	c := &Client{
		cfg:       cfg,
		broker:    u,
		counts:    cfg.Clock != clock.Real,
		log:       cfg.Logger.With().Str("component", "mqtt").Str("broker", u.Redacted()).Logger(),
		onConnect: onConnect,
		connected: make(chan struct{}, 1),
		firstUp:   make(chan struct{}),
		out:       newOutQueue(cfg.MaxQueuedBytes),
		flush:     make(chan struct{}),
		flushed:   make(chan struct{}),
		stop:      make(chan struct{}),
		quit:      make(chan struct{}),
		ready:     make(chan struct{}),
		resumed:   make(chan struct{}),

		redelivered: map[uint16]bool{},
		conflict:    takeover{lost: make(chan struct{}, 1)},
		dropLog:     rate.NewLimiter(1, 5),
	}

	if cfg.Record != nil {
		c.bl.fence = cfg.StateTopic + "/fence"
		c.bl.caught = cfg.Record.seen(cfg.ClientID)
		c.bl.wake = clock.NewWake(cfg.Clock, "MQTT: the record of the last connection, to be written")
	}

	c.store = &store{Store: paho.NewOrderedMemoryStore(), onAll: c.storeListed}
	o := c.options(tlsCfg).
		SetCleanSession(false).
		SetResumeSubs(false). // the Client resubscribes itself on every connect
		// Messages are acknowledged once handled (flow.go), not once
		// received: a crash loses none, and what the broker sends again
		// after one is newer than everything handled.
		SetAutoAckDisabled(true).
		// paho calls the dispatcher on its router goroutine in arrival
		// order (without, each message gets a goroutine of its own and two
		// commands for one device may swap); the dispatcher only queues,
		// which is what paho requires of it then.
		SetOrderMatters(true).
		SetStore(c.store).
		SetKeepAlive(cfg.KeepAlive).
		SetPingTimeout(min(cfg.KeepAlive, 10*time.Second)).
		SetWriteTimeout(cfg.PublishTimeout).
		SetDialer(&net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second,
			Control: func(string, string, syscall.RawConn) error { return c.dialing() }}).
		SetWebsocketOptions(&paho.WebsocketOptions{Proxy: func(r *http.Request) (*url.URL, error) {
			if err := c.dialing(); err != nil {
				return nil, err
			}
			return http.ProxyFromEnvironment(r)
		}}).
		SetAutoReconnect(true).
		SetMaxReconnectInterval(cfg.MaxReconnectInterval).
		SetConnectRetry(!cfg.FailFast).
		SetConnectRetryInterval(cfg.ConnectRetryInterval).
		SetDefaultPublishHandler(c.dispatch).
		SetOnConnectHandler(func(paho.Client) {
			select {
			case c.connected <- struct{}{}:
			default: // a connect is already being handled; it will see the new connection
			}
		}).
		SetConnectionLostHandler(c.lost).
		SetReconnectingHandler(c.reconnecting).
		SetConnectionNotificationHandler(c.notify)
	if cfg.StateTopic != "" {
		o.SetWill(cfg.StateTopic, Offline, 1, true)
	}
	c.pc = paho.NewClient(o)

	c.wg.Add(2)
	go c.session()
	go c.publisher()
	if cfg.Record != nil {
		c.wg.Add(1)
		go c.keepRecord()
	}

	start := time.Now()
	c.log.Info().Str("client_id", cfg.ClientID).Msg("connecting to MQTT broker")
	tok := c.pc.Connect()
	select {
	case <-tok.Done():
		if err := tok.Error(); err != nil {
			why, _ := c.lastFailure() // notify explained this attempt's failure
			if why == "" {
				why = c.hint(err)
			}
			c.shutdown(0)
			return nil, fmt.Errorf("mqtt: connect to %s: %w (%s)", u.Redacted(), err, why)
		}
		// paho completes the token after resuming its store.
		c.mu.Lock()
		if !c.armed {
			close(c.resumed)
			// The broker kept no session for the id: no backlog to judge
			// (backlog.go). paho tells it of the first connection only.
			ct, ok := tok.(*paho.ConnectToken)
			c.bl.fresh = ok && !ct.SessionPresent()
		}
		c.mu.Unlock()
	case <-ctx.Done():
	}
	// Connected; wait for the session (subscriptions, onConnect, birth) so
	// that a Subscribe after Connect takes effect at once.
	select {
	case <-c.firstUp:
		return c, nil
	case <-ctx.Done():
		why, last := c.lastFailure()
		c.shutdown(0)
		if last == nil {
			return nil, fmt.Errorf("mqtt: no connection to %s after %s: %w", u.Redacted(), time.Since(start).Round(time.Millisecond), ctx.Err())
		}
		return nil, fmt.Errorf("mqtt: no connection to %s after %s (%s): %w: %w", u.Redacted(), time.Since(start).Round(time.Millisecond), why, ctx.Err(), last)
	}
}

// options are paho's options for a connection to the broker as cfg says
// (address, id, credentials, TLS), without the session's.
func (c *Client) options(tlsCfg *tls.Config) *paho.ClientOptions {
	o := paho.NewClientOptions().
		AddBroker(c.cfg.URL).
		SetClientID(c.cfg.ClientID).
		SetUsername(c.cfg.Username).
		SetPassword(c.cfg.Password).
		SetProtocolVersion(4).
		SetConnectTimeout(c.cfg.ConnectTimeout)
	if tlsCfg != nil {
		o.SetTLSConfig(tlsCfg)
	}
	return o
}

// dialing refuses a dial once the Client is closing (paho's dialer's
// Control, its WebSocket proxy): paho's reconnection would otherwise
// connect once more during Close and take the id back from another client.
func (c *Client) dialing() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	return nil
}

// ClientID is the client id in use (the default when Config.ClientID was empty).
func (c *Client) ClientID() string { return c.cfg.ClientID }

// Connected reports whether the connection to the broker is up now.
func (c *Client) Connected() bool { return c.pc.IsConnectionOpen() }

// Stats returns the counters.
func (c *Client) Stats() Stats {
	return Stats{
		Published:     c.published.Load(),
		PublishErrors: c.publishErrors.Load(),
		Received:      c.received.Load(),
		Dropped:       c.dropped.Load(),
		Reconnects:    c.reconnects.Load(),
		Conflicts:     c.conflicts.Load(),
		Queued:        int(c.queued.Load()),
		Connected:     c.Connected(),
	}
}

// Publish queues a message and returns without waiting for the network.
// Messages are sent in the order they were queued, as soon as the session
// is up, before those PublishBulk queued; failures after queueing are
// logged and counted (Stats.PublishErrors). It fails when the topic is
// invalid, after Close, or when the queue is full (ErrQueueFull; the
// message is dropped).
//
// The payload is kept, not copied, until it is sent: the caller must not
// modify it after the call, since a discovery republish queues megabytes.
func (c *Client) Publish(topic string, payload []byte, retained bool, qos byte) error {
	return c.publish(laneFirst, topic, payload, retained, qos)
}

// PublishBulk is Publish for messages that may wait for everything Publish
// queued before or after them: Home Assistant's discovery configs, which a
// start or a reconnect sends by the thousand while the states are what
// changed. Messages of one topic must all go through the same one of the
// two (else a newer one could be sent before an older one).
func (c *Client) PublishBulk(topic string, payload []byte, retained bool, qos byte) error {
	return c.publish(laneBulk, topic, payload, retained, qos)
}

func (c *Client) publish(lane int, topic string, payload []byte, retained bool, qos byte) error {
	if err := checkTopic(topic); err != nil {
		return fmt.Errorf("mqtt: publish to %q: %w", topic, err)
	}
	if qos > 2 {
		return fmt.Errorf("mqtt: publish to %q: QoS %d does not exist (use 0, 1 or 2)", topic, qos)
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return fmt.Errorf("mqtt: publish to %q: %w", topic, ErrClosed)
	}
	m := outMsg{topic: topic, payload: payload, retained: retained, qos: qos}
	if c.counts {
		// Before the publisher can see it, which lets go (publish.go).
		m.held = clock.Busy(c.cfg.Clock, "MQTT publish to "+topic+", queued or unacknowledged")
	}
	c.queued.Add(1)
	if c.out.pushTo(lane, m) {
		return nil
	}
	c.queued.Add(-1)
	defer m.release()
	if c.out.isClosed() {
		return fmt.Errorf("mqtt: publish to %q: %w", topic, ErrClosed) // the publisher has stopped
	}
	n := c.dropped.Add(1)
	c.logDrop(n, "outbound", topic)
	return fmt.Errorf("mqtt: publish to %q: %w: %d messages (%d MiB, the limit) already wait for the broker; this one is dropped", topic, ErrQueueFull, c.out.Len(), c.cfg.MaxQueuedBytes>>20)
}

// Subscribe registers handler for messages matching filter and subscribes
// now when connected (waiting for the broker's answer), else on the next
// connect; the Client subscribes again on every reconnect. It fails on a bad
// filter, after Close, or when the broker refuses the subscription (ACL); a
// subscription that could not be confirmed because the connection dropped is
// logged and made again on the next connect. Calling it again for the
// same filter replaces the handler. Each filter's handler runs on
// its own goroutine, one message at a time, in arrival order; a message
// matching several filters reaches each of their handlers. Messages that
// arrived for the filter before this call (queued in the persistent session
// while the bridge was away) are handed to the handler first. Every
// resubscription makes the broker send the retained messages matching the
// filter again, flagged retained (see Handler).
func (c *Client) Subscribe(filter string, qos byte, handler Handler) error {
	if err := checkFilter(filter); err != nil {
		return fmt.Errorf("mqtt: subscribe to %q: %w", filter, err)
	}
	if qos > 2 {
		return fmt.Errorf("mqtt: subscribe to %q: QoS %d does not exist (use 0, 1 or 2)", filter, qos)
	}
	if handler == nil {
		return fmt.Errorf("mqtt: subscribe to %q: handler is nil", filter)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("mqtt: subscribe to %q: %w", filter, ErrClosed)
	}
	var s *subscription
	for _, x := range c.subs {
		if x.filter == filter {
			s = x
		}
	}
	if s == nil {
		s = &subscription{filter: filter, queue: make(chan *inMsg, c.cfg.QueueSize)}
		c.subs = append(c.subs, s)
		c.wg.Add(1)
		go c.work(s)
	}
	s.qos, s.handler = qos, handler
	kept := c.pending[:0]
	for _, m := range c.pending {
		if !topic.Matches(filter, m.Topic()) {
			kept = append(kept, m)
			continue
		}
		if c.counts {
			// Work in hand from now on: a handler takes it.
			m.ack.held = clock.Busy(c.cfg.Clock, "MQTT message on "+m.Topic()+", not handled and acknowledged")
		}
		select {
		case s.queue <- m:
		default:
			c.drop("inbound", m)
		}
	}
	clear(c.pending[len(kept):])
	c.pending = kept
	ready, gen := c.ready, c.gen
	c.mu.Unlock()

	select {
	case <-ready:
	default:
		return nil // the session will subscribe on connect
	}
	err := c.subscribe(filter, qos, gen)
	if errors.Is(err, errRefused) {
		return err
	}
	if err != nil {
		// The connection dropped or the broker is slow: the subscription
		// stays registered and is made again on the next connect.
		c.log.Warn().Err(err).Msg("subscribe not confirmed")
	}
	return nil
}

// subscribe sends one SUBSCRIBE and waits for the SUBACK.
func (c *Client) subscribe(filter string, qos byte, gen uint64) error {
	tok := c.pc.Subscribe(filter, qos, nil) // nil: messages go to c.dispatch
	if err := c.wait(tok, gen); err != nil {
		return fmt.Errorf("mqtt: subscribe to %q: %w (it is retried on the next connect)", filter, err)
	}
	if st, ok := tok.(*paho.SubscribeToken); ok {
		if code, ok := st.Result()[filter]; ok && code == 0x80 {
			return fmt.Errorf("mqtt: subscribe to %q: %w (not authorized? check the broker's ACL for MQTT_USERNAME)", filter, errRefused)
		}
	}
	return nil
}

// Close publishes what is queued (until ctx ends), publishes "offline"
// retained on the state topic, disconnects cleanly (waiting up to 250 ms)
// and stops the Client's goroutines. It returns ctx's error if a handler
// did not return before ctx ended.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.quitting.Do(func() { close(c.quit) })

	close(c.flush)
	select {
	case <-c.flushed:
	case <-ctx.Done():
		c.log.Warn().Int("queued", c.out.Len()).Msg("closing before every queued message was published")
	}
	if c.cfg.Record != nil {
		c.touch() // connected until now, if it is
	}
	if c.cfg.StateTopic != "" && c.pc.IsConnectionOpen() {
		tok := c.pc.Publish(c.cfg.StateTopic, 1, true, Offline)
		wait := time.NewTimer(time.Second)
		select {
		case <-tok.Done():
			if err := tok.Error(); err != nil {
				c.log.Warn().Err(err).Msg("could not publish offline state; the broker publishes the will instead")
			}
		case <-wait.C:
		case <-ctx.Done():
		}
		wait.Stop()
	}
	err := c.shutdown(250, ctx)
	if c.cfg.Record != nil {
		c.saveRecord()
		if c.cfg.Record.ephemeral(c.cfg.ClientID) {
			c.endSession(ctx)
		}
	}
	return err
}

// shutdown disconnects and stops the workers, waiting for them until ctx
// (the first one given) ends.
func (c *Client) shutdown(quiesce uint, ctxs ...context.Context) error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.quitting.Do(func() { close(c.quit) })
	c.pc.Disconnect(quiesce)
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	done := make(chan struct{})
	go func() {
		c.wg.Wait()
		c.store.letGo() // the publisher, which hands publishes to it, has stopped
		close(done)
	}()
	ctx := context.Background()
	if len(ctxs) > 0 {
		ctx = ctxs[0]
	}
	select {
	case <-done:
		c.log.Info().Msg("disconnected from MQTT broker")
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mqtt: close: a message handler is still running: %w", ctx.Err())
	}
}

var (
	errRefused = errors.New("the broker refused the subscription")
	errLost    = errors.New("mqtt: connection lost while waiting for the broker")
	errTimeout = errors.New("mqtt: no answer from the broker in time")
)
