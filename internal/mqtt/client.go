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
//   - Inbound: paho hands each message to a non-blocking dispatcher that
//     puts it on the queue of every matching subscription; one goroutine per
//     subscription runs its handler in arrival order. A full queue drops the
//     message (counted in Stats.Dropped, logged), so a slow handler delays
//     only its own subscription and never the connection. QoS 1 messages
//     are acknowledged once queued.
//   - Outbound: Publish puts the message on a queue and returns; one
//     goroutine sends queued messages in order while the session is up and
//     holds them while it is down, so state published while disconnected is
//     sent, in order, after the next connect (after the birth message). A
//     full queue makes Publish fail with ErrQueueFull.
package mqtt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
	"github.com/rs/zerolog"
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
	Queued        int    // messages waiting to be published
	Connected     bool
}

type inMsg struct {
	topic   string
	payload []byte
}

type outMsg struct {
	topic    string
	payload  []byte
	retained bool
	qos      byte
}

type subscription struct {
	filter  string
	qos     byte
	handler func(topic string, payload []byte) // guarded by Client.mu
	queue   chan inMsg
}

// Client is a connection to the broker. Its methods are safe for concurrent use.
type Client struct {
	cfg       Config
	log       zerolog.Logger
	pc        paho.Client
	store     *store
	onConnect func(*Client)

	connected chan struct{} // paho's on-connect, coalesced (capacity 1)
	firstUp   chan struct{} // closed when the first session is set up (birth, subscriptions, onConnect)
	out       *outQueue
	flush     chan struct{} // closed by Close: publish what is queued, then stop
	flushed   chan struct{} // closed by the publisher when it stops
	stop      chan struct{} // closed by Close: every worker stops
	wg        sync.WaitGroup

	mu       sync.Mutex
	subs     []*subscription
	pending  []inMsg
	ready    chan struct{} // closed while the session is up and birth was sent
	resumed  chan struct{} // closed once paho has taken stock of its store after connecting
	armed    bool          // resumed is waiting for the store's All (reconnects)
	gen      uint64        // incremented on each connection loss
	closed   bool
	lastErr  error
	connects int

	published, publishErrors, received, dropped, reconnects atomic.Uint64
	queued                                                  atomic.Int64 // in c.out or being sent
}

// Connect validates cfg, starts connecting and returns once the first
// connection is up, or with an error when ctx ends first (naming how long it
// waited and the last failure: DNS, refused, not authorized, TLS). While it
// waits, failed attempts are logged as warnings and retried every
// ConnectRetryInterval.
//
// On every connection, including reconnections, the Client (on its own
// goroutine) publishes "online" retained on cfg.StateTopic, subscribes again
// to every filter given to Subscribe, and then calls onConnect (may be nil),
// where the bridge republishes discovery and states. The first call returns
// before Connect does. onConnect must return promptly; it may call Publish
// and Subscribe (through its argument: Connect has not returned yet the
// first time).
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
	c := &Client{
		cfg:       cfg,
		log:       cfg.Logger.With().Str("component", "mqtt").Str("broker", u.Redacted()).Str("client_id", cfg.ClientID).Logger(),
		onConnect: onConnect,
		connected: make(chan struct{}, 1),
		firstUp:   make(chan struct{}),
		out:       newOutQueue(cfg.MaxQueuedBytes),
		flush:     make(chan struct{}),
		flushed:   make(chan struct{}),
		stop:      make(chan struct{}),
		ready:     make(chan struct{}),
		resumed:   make(chan struct{}),
	}

	c.store = &store{Store: paho.NewOrderedMemoryStore(), onAll: c.storeListed}
	o := paho.NewClientOptions().
		AddBroker(cfg.URL).
		SetClientID(cfg.ClientID).
		SetUsername(cfg.Username).
		SetPassword(cfg.Password).
		SetProtocolVersion(4).
		SetCleanSession(false).
		SetResumeSubs(false). // the Client resubscribes itself on every connect
		// Order matters: messages reach the dispatcher in the order they
		// arrived, so two commands for one device are not swapped. The
		// dispatcher never blocks (it only queues), which is what paho
		// requires of an ordered handler.
		SetOrderMatters(true).
		SetStore(c.store).
		SetKeepAlive(cfg.KeepAlive).
		SetPingTimeout(min(cfg.KeepAlive, 10*time.Second)).
		SetConnectTimeout(cfg.ConnectTimeout).
		SetWriteTimeout(cfg.PublishTimeout).
		SetDialer(&net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}).
		SetAutoReconnect(true).
		SetMaxReconnectInterval(cfg.MaxReconnectInterval).
		SetConnectRetry(true).
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
	if tlsCfg != nil {
		o.SetTLSConfig(tlsCfg)
	}
	if cfg.StateTopic != "" {
		o.SetWill(cfg.StateTopic, Offline, 1, true)
	}
	c.pc = paho.NewClient(o)

	c.wg.Add(2)
	go c.session()
	go c.publisher()

	start := time.Now()
	c.log.Info().Msg("connecting to MQTT broker")
	tok := c.pc.Connect()
	select {
	case <-tok.Done():
		if err := tok.Error(); err != nil {
			c.shutdown(0)
			return nil, fmt.Errorf("mqtt: connect to %s: %w (%s)", u.Redacted(), err, hint(err))
		}
		// paho completes the token after resuming its store.
		c.mu.Lock()
		if !c.armed {
			close(c.resumed)
		}
		c.mu.Unlock()
	case <-ctx.Done():
	}
	// Connected; wait for the session (birth, subscriptions, onConnect) so
	// that a Subscribe after Connect takes effect at once.
	select {
	case <-c.firstUp:
		return c, nil
	case <-ctx.Done():
		last := c.lastError()
		c.shutdown(0)
		if last == nil {
			return nil, fmt.Errorf("mqtt: no connection to %s after %s: %w", u.Redacted(), time.Since(start).Round(time.Millisecond), ctx.Err())
		}
		return nil, fmt.Errorf("mqtt: no connection to %s after %s (%s): %w: %w", u.Redacted(), time.Since(start).Round(time.Millisecond), hint(last), ctx.Err(), last)
	}
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
		Queued:        int(c.queued.Load()),
		Connected:     c.Connected(),
	}
}

// Publish queues a message and returns without waiting for the network.
// Messages are sent in the order they were queued, as soon as the session
// is up; failures after queueing are logged and counted
// (Stats.PublishErrors). It fails when the topic is invalid, after Close, or
// when the queue is full (ErrQueueFull; the message is dropped).
//
// The payload is kept, not copied, until it is sent: the caller must not
// modify it after the call. (A republish of a large account's discovery
// queues megabytes; a copy would hold them twice.)
func (c *Client) Publish(topic string, payload []byte, retained bool, qos byte) error {
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
	c.queued.Add(1)
	if c.out.push(m) {
		return nil
	}
	c.queued.Add(-1)
	n := c.dropped.Add(1)
	c.logDrop(n, "outbound", topic)
	return fmt.Errorf("mqtt: publish to %q: %w: %d messages (%d MiB, the limit) already wait for the broker; this one is dropped", topic, ErrQueueFull, c.out.Len(), c.cfg.MaxQueuedBytes>>20)
}

// Subscribe registers handler for messages matching filter and subscribes
// now when connected (waiting for the broker's answer), else on the next
// connect; the Client subscribes again on every reconnect. It fails on a bad
// filter, after Close, or when the broker refuses the subscription (ACL); a
// subscription that could not be confirmed because the connection dropped is
// logged and made again on the next connect. Calling it again
// for the same filter replaces the handler. Each filter's handler runs on
// its own goroutine, one message at a time, in arrival order; a message
// matching several filters reaches each of their handlers. Messages that
// arrived for the filter before this call (queued in the persistent session
// while the bridge was away) are handed to the handler first.
func (c *Client) Subscribe(filter string, qos byte, handler func(topic string, payload []byte)) error {
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
		s = &subscription{filter: filter, queue: make(chan inMsg, c.cfg.QueueSize)}
		c.subs = append(c.subs, s)
		c.wg.Add(1)
		go c.work(s)
	}
	s.qos, s.handler = qos, handler
	kept := c.pending[:0]
	for _, m := range c.pending {
		if !match(filter, m.topic) {
			kept = append(kept, m)
			continue
		}
		select {
		case s.queue <- m:
		default:
			c.logDrop(c.dropped.Add(1), "inbound", m.topic)
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

	close(c.flush)
	select {
	case <-c.flushed:
	case <-ctx.Done():
		c.log.Warn().Int("queued", c.out.Len()).Msg("closing before every queued message was published")
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
	return c.shutdown(250, ctx)
}

// shutdown disconnects and stops the workers, waiting for them until ctx
// (the first one given) ends.
func (c *Client) shutdown(quiesce uint, ctxs ...context.Context) error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.pc.Disconnect(quiesce)
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	done := make(chan struct{})
	go func() {
		c.wg.Wait()
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

// session handles each (re)connection: birth, resubscription, onConnect.
func (c *Client) session() {
	defer c.wg.Done()
	for {
		select {
		case <-c.stop:
			return
		case <-c.connected:
		}
		if !c.pc.IsConnectionOpen() {
			continue // already lost; paho reconnects and signals again
		}
		// After connecting, paho resends what its store holds, reading
		// the store concurrently with the on-connect handler: a publish
		// stored before it took stock would be sent twice and raced on.
		c.mu.Lock()
		resumed := c.resumed
		c.mu.Unlock()
		wait := time.NewTimer(2 * time.Second)
		select {
		case <-resumed:
		case <-wait.C:
			c.log.Debug().Msg("paho did not resume its store within 2s; going on")
		case <-c.stop:
			wait.Stop()
			return
		}
		wait.Stop()
		// Messages in flight when the connection dropped are being sent
		// again; anything newer (birth, queued publishes) goes after them,
		// so that a retained topic ends with its newest value.
		if !c.awaitResends() {
			return
		}
		c.mu.Lock()
		gen := c.gen
		c.connects++
		first := c.connects == 1
		c.lastErr = nil
		c.mu.Unlock()
		if !first {
			c.reconnects.Add(1)
		}
		c.log.Info().Bool("reconnect", !first).Msg("connected to MQTT broker")

		if c.cfg.StateTopic != "" {
			tok := c.pc.Publish(c.cfg.StateTopic, 1, true, Online)
			if err := c.wait(tok, gen); err != nil {
				c.log.Warn().Err(err).Str("topic", c.cfg.StateTopic).Msg("could not publish the online state")
			}
		}
		// Opening the gate and taking the subscriptions in one step: a
		// Subscribe racing with this either is in subs or sees the gate open
		// and subscribes itself.
		c.mu.Lock()
		if c.gen != gen || c.closed {
			c.mu.Unlock()
			continue // lost again already: the next connect starts over
		}
		select {
		case <-c.ready:
		default:
			close(c.ready) // the publisher may send
		}
		type want struct {
			filter string
			qos    byte
		}
		subs := make([]want, 0, len(c.subs))
		for _, s := range c.subs {
			subs = append(subs, want{s.filter, s.qos})
		}
		c.mu.Unlock()
		for _, s := range subs {
			if err := c.subscribe(s.filter, s.qos, gen); err != nil {
				c.log.Error().Err(err).Msg("resubscribe failed")
			}
		}
		if c.onConnect != nil {
			c.callOnConnect()
		}
		select {
		case <-c.firstUp:
		default:
			close(c.firstUp) // Connect returns
		}
	}
}

func (c *Client) callOnConnect() {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error().Interface("panic", r).Msg("on-connect callback panicked")
		}
	}()
	c.onConnect(c)
}

// reconnecting is paho's handler before each reconnection attempt. paho
// calls it synchronously, before the new connection's on-connect handler,
// so it (not the connection-lost handler, which paho runs on a goroutine of
// its own that may come late) closes the gate for publishes.
func (c *Client) reconnecting(paho.Client, *paho.ClientOptions) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++ // waits on the old connection's tokens give up
	if !c.armed {
		c.armed = true
		c.resumed = make(chan struct{})
	}
	select {
	case <-c.ready:
		c.ready = make(chan struct{}) // hold publishes until the next connect
	default:
	}
}

// awaitResends waits until paho's resent publishes are acknowledged, the
// connection drops again, or PublishTimeout passes; false when stopping.
func (c *Client) awaitResends() bool {
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()
	deadline := time.Now().Add(c.cfg.PublishTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for c.store.resending() > 0 && time.Now().Before(deadline) {
		select {
		case <-c.stop:
			return false
		case <-tick.C:
		}
		if c.replaced(gen) {
			return true
		}
	}
	return true
}

// storeListed is called when paho lists its store, which it does when it
// resumes a session after (re)connecting.
func (c *Client) storeListed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.armed {
		c.armed = false
		close(c.resumed)
	}
}

// store wraps paho's store to tell the Client when paho takes stock of it
// after connecting (resume) and which of the publishes it then resends are
// still unacknowledged.
type store struct {
	paho.Store
	onAll func()

	mu      sync.Mutex
	resends map[string]bool // outbound publishes listed by the last All
}

func (s *store) All() []string {
	keys := s.Store.All()
	s.mu.Lock()
	s.resends = map[string]bool{}
	for _, k := range keys {
		if _, ok := s.Store.Get(k).(*packets.PublishPacket); ok && strings.HasPrefix(k, "o.") {
			s.resends[k] = true
		}
	}
	s.mu.Unlock()
	s.onAll()
	return keys
}

func (s *store) Del(key string) {
	s.Store.Del(key)
	s.mu.Lock()
	delete(s.resends, key)
	s.mu.Unlock()
}

func (s *store) Reset() {
	s.Store.Reset()
	s.mu.Lock()
	clear(s.resends)
	s.mu.Unlock()
}

// resending reports how many resent publishes await their acknowledgement.
func (s *store) resending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.resends)
}

// lost is paho's connection-lost handler (on a paho goroutine).
func (c *Client) lost(_ paho.Client, err error) {
	c.log.Warn().Err(err).Str("hint", hint(err)).Msg("connection to MQTT broker lost; reconnecting")
}

// notify logs failed connection attempts and keeps the last error for
// Connect's message. paho calls it synchronously: it must not block.
func (c *Client) notify(_ paho.Client, n paho.ConnectionNotification) {
	switch n := n.(type) {
	case paho.ConnectionNotificationFailed:
		c.mu.Lock()
		c.lastErr = n.Reason
		closed := c.closed
		c.mu.Unlock()
		if !closed {
			c.log.Warn().Err(n.Reason).Str("hint", hint(n.Reason)).Msg("cannot connect to MQTT broker; retrying")
		}
	case paho.ConnectionNotificationConnecting:
		c.log.Debug().Bool("reconnect", n.IsReconnect).Int("attempt", n.Attempt).Msg("connecting")
	}
}

func (c *Client) lastError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr
}

// dispatch is paho's handler for every message: it only queues.
func (c *Client) dispatch(_ paho.Client, m paho.Message) {
	c.received.Add(1)
	msg := inMsg{topic: m.Topic(), payload: m.Payload()}
	c.mu.Lock()
	defer c.mu.Unlock()
	matched := false
	for _, s := range c.subs {
		if !match(s.filter, msg.topic) {
			continue
		}
		matched = true
		select {
		case s.queue <- msg:
		default:
			c.logDrop(c.dropped.Add(1), "inbound", msg.topic)
		}
	}
	if matched {
		return
	}
	if len(c.pending) == pendingMax {
		c.logDrop(c.dropped.Add(1), "pending", c.pending[0].topic)
		copy(c.pending, c.pending[1:])
		c.pending = c.pending[:pendingMax-1]
	}
	c.pending = append(c.pending, msg)
}

// work runs one subscription's handler for each queued message.
func (c *Client) work(s *subscription) {
	defer c.wg.Done()
	for {
		select {
		case <-c.stop:
			return
		case m := <-s.queue:
			c.mu.Lock()
			h := s.handler
			c.mu.Unlock()
			c.handle(h, s.filter, m)
		}
	}
}

func (c *Client) handle(h func(string, []byte), filter string, m inMsg) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error().Interface("panic", r).Str("filter", filter).Str("topic", m.topic).Msg("message handler panicked; message skipped")
		}
	}()
	h(m.topic, m.payload)
}

// publisher sends queued messages in order while the session is up. After
// Close it sends what is queued if connected and then stops.
func (c *Client) publisher() {
	defer c.wg.Done()
	defer close(c.flushed)
	flushing := false
	for {
		if !flushing {
			select {
			case <-c.stop:
				return
			default:
			}
		}
		m, ok := c.out.pop()
		if !ok {
			if flushing {
				return // everything queued was sent
			}
			select {
			case <-c.stop:
				return
			case <-c.flush:
				flushing = true
			case <-c.out.notify:
			}
			continue
		}
		for !c.send(m) {
			if flushing {
				c.queued.Add(-1)
				c.log.Warn().Int("unsent", c.out.Len()+1).Msg("closing while disconnected: queued messages are not published")
				return
			}
			c.mu.Lock()
			ready := c.ready
			c.mu.Unlock()
			select {
			case <-ready:
			case <-c.stop:
				return
			case <-c.flush:
				flushing = true
			}
		}
		c.queued.Add(-1)
	}
}

// send publishes m when the session is up and waits for the broker's
// acknowledgement; false means "not up, try again after the next connect".
func (c *Client) send(m outMsg) bool {
	c.mu.Lock()
	ready, gen := c.ready, c.gen
	c.mu.Unlock()
	select {
	case <-ready:
	default:
		return false
	}
	if !c.pc.IsConnectionOpen() {
		// Lost, and paho has not yet called the reconnecting handler that
		// closes the gate: wait a moment rather than hand paho a message
		// it would resend before the next birth.
		select {
		case <-c.stop:
		case <-time.After(10 * time.Millisecond):
		}
		return false
	}
	tok := c.pc.Publish(m.topic, m.qos, m.retained, m.payload)
	switch err := c.wait(tok, gen); {
	case errors.Is(err, errLost):
		// A QoS 1/2 message in flight when the connection dropped stays in
		// paho's store and is sent again on reconnect; QoS 0 is lost.
		return true
	case errors.Is(err, paho.ErrNotConnected):
		return false
	case errors.Is(err, ErrClosed):
		return true
	case err != nil:
		c.publishErrors.Add(1)
		c.log.Warn().Err(err).Str("topic", m.topic).Msg("publish failed")
		return true
	}
	c.published.Add(1)
	return true
}

var (
	errRefused = errors.New("the broker refused the subscription")
	errLost    = errors.New("mqtt: connection lost while waiting for the broker")
	errTimeout = errors.New("mqtt: no answer from the broker in time")
)

// wait waits for tok until it completes, PublishTimeout passes, the
// connection of generation gen is lost (paho keeps an unacknowledged QoS 1
// message and sends it again, under a new token, after reconnecting) or the
// Client stops.
func (c *Client) wait(tok paho.Token, gen uint64) error {
	timer := time.NewTimer(c.cfg.PublishTimeout)
	defer timer.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tok.Done():
			return tok.Error()
		case <-timer.C:
			return fmt.Errorf("%w (%s)", errTimeout, c.cfg.PublishTimeout)
		case <-c.stop:
			return ErrClosed
		case <-tick.C:
			if c.replaced(gen) {
				return errLost
			}
		}
	}
}

// logDrop logs the first dropped message and then every 100th.
func (c *Client) logDrop(n uint64, queue, topic string) {
	if n == 1 || n%100 == 0 {
		c.log.Warn().Str("queue", queue).Str("topic", topic).Uint64("dropped_total", n).Msg("MQTT queue full; message dropped")
	}
}

// replaced reports whether the session gen was replaced by a reconnect.
func (c *Client) replaced(gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen != gen
}
