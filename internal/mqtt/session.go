package mqtt

// The session: what happens on every (re)connection, and paho's store of
// messages in flight that it resends.

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
)

// session handles each (re)connection: resubscription, onConnect, birth.
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
		c.tookOver()

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
		c.clearBacklog(gen)
		if c.onConnect != nil {
			c.callOnConnect()
		}
		// "online" last: whoever sees it (Home Assistant, a test, a
		// flow) may send a command at once, and the subscriptions that
		// take it are in place by now.
		if c.cfg.StateTopic != "" {
			tok := c.pc.Publish(c.cfg.StateTopic, 1, true, Online)
			if err := c.wait(tok, gen); err != nil {
				c.log.Warn().Err(err).Str("topic", c.cfg.StateTopic).Msg("could not publish the online state")
			}
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
// its own that may come late) closes the gate for publishes. It then
// judges the connection lost (takeover.go, backlog.go).
func (c *Client) reconnecting(paho.Client, *paho.ClientOptions) {
	c.mu.Lock()
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
	c.mu.Unlock()
	c.lostBacklog(c.judge())
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
// still unacknowledged, and keeps the work in hand of the publishes paho
// holds to send again (hold).
type store struct {
	paho.Store
	onAll func()

	mu      sync.Mutex
	resends map[string]bool     // outbound publishes listed by the last All
	held    map[string][]func() // work in hand by key, let go when paho deletes it
	inbound map[string]bool     // inbound packets kept (QoS 2 publishes, PUBRELs)
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

// Put keeps a copy of an outbound publish and Get hands out a copy of that,
// because paho's writer and its resume both write the stored packet
// (eclipse-paho/paho.mqtt.golang#703); the payload is shared, nothing
// writes it. Inbound QoS 0 and 1 publishes are not kept: resume discards
// them anyway.
func (s *store) Put(key string, p packets.ControlPacket) {
	if pub, ok := p.(*packets.PublishPacket); ok {
		if strings.HasPrefix(key, "i.") && pub.Qos < 2 {
			return
		}
		cp := *pub
		p = &cp
	}
	if strings.HasPrefix(key, "i.") {
		s.mu.Lock()
		if s.inbound == nil {
			s.inbound = map[string]bool{}
		}
		s.inbound[key] = true
		s.mu.Unlock()
	}
	s.Store.Put(key, p)
}

func (s *store) Get(key string) packets.ControlPacket {
	p := s.Store.Get(key)
	if pub, ok := p.(*packets.PublishPacket); ok {
		cp := *pub
		return &cp
	}
	return p
}

func (s *store) Del(key string) {
	s.mu.Lock()
	if strings.HasPrefix(key, "i.") && !s.inbound[key] {
		s.mu.Unlock()
		return // an inbound publish Put did not keep
	}
	delete(s.inbound, key)
	s.mu.Unlock()
	s.Store.Del(key)
	s.mu.Lock()
	delete(s.resends, key)
	held := s.held[key]
	delete(s.held, key)
	s.mu.Unlock()
	for _, done := range held {
		done()
	}
}

func (s *store) Reset() {
	s.Store.Reset()
	s.letGo()
	s.mu.Lock()
	clear(s.resends)
	clear(s.inbound)
	s.mu.Unlock()
}

// hold keeps the work in hand of the outbound publish mid (done lets go of
// it) while paho keeps that publish to send it again, until paho deletes it
// (its acknowledgement, a reset); at once when paho has deleted it already.
// paho deletes before the Del's lock is taken: either the lookup here
// misses it or that Del finds done.
func (s *store) hold(mid uint16, done func()) {
	key := "o." + strconv.FormatUint(uint64(mid), 10) // paho's key
	s.mu.Lock()
	if s.Store.Get(key) == nil {
		s.mu.Unlock()
		done()
		return
	}
	if s.held == nil {
		s.held = map[string][]func(){}
	}
	s.held[key] = append(s.held[key], done)
	s.mu.Unlock()
}

// letGo lets go of the work in hand of every publish held: paho sends none
// of them again (the Client stopped, the session reset).
func (s *store) letGo() {
	s.mu.Lock()
	held := s.held
	s.held = nil
	s.mu.Unlock()
	for _, dones := range held {
		for _, done := range dones {
			done()
		}
	}
}

// resending reports how many resent publishes await their acknowledgement.
func (s *store) resending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.resends)
}

// notify logs failed connection attempts and keeps the last error, and
// what it means, for Connect's message. paho calls it synchronously.
func (c *Client) notify(_ paho.Client, n paho.ConnectionNotification) {
	switch n := n.(type) {
	case paho.ConnectionNotificationFailed:
		c.attempting(true)
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return
		}
		hint := c.hint(n.Reason)
		c.mu.Lock()
		c.lastErr, c.lastHint = n.Reason, hint
		c.mu.Unlock()
		c.log.Warn().Err(n.Reason).Str("hint", hint).Msg("cannot connect to MQTT broker; retrying")
	case paho.ConnectionNotificationConnecting:
		c.attempting(false)
		c.attemptBacklog()
		c.log.Debug().Bool("reconnect", n.IsReconnect).Int("attempt", n.Attempt).Msg("connecting")
	}
}

// lastFailure is the last failed attempt's error and what it means.
func (c *Client) lastFailure() (hint string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastHint, c.lastErr
}

// endSession asks the broker to forget the session of a client id made up
// for this run only, which would otherwise collect the bridge's messages
// for ever on mosquitto; MQTT 3.1.1's one way is a clean-session connection.
// Best effort: within a second, or ctx.
func (c *Client) endSession(ctx context.Context) {
	tlsCfg, err := c.cfg.tlsConfig(c.broker)
	if err != nil {
		return
	}
	pc := paho.NewClient(c.options(tlsCfg).
		SetCleanSession(true).
		SetAutoReconnect(false).
		SetConnectRetry(false).
		SetConnectTimeout(time.Second).
		SetDialer(&net.Dialer{Timeout: time.Second}).
		SetWebsocketOptions(&paho.WebsocketOptions{Proxy: http.ProxyFromEnvironment}))
	tok := pc.Connect()
	select {
	case <-tok.Done():
	case <-ctx.Done():
		return
	}
	if tok.Error() != nil {
		c.log.Debug().Err(tok.Error()).Msg("could not end this run's session on the broker; it keeps it until it expires")
		return
	}
	pc.Disconnect(50)
}
