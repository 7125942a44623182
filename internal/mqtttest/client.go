package mqtttest

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// Message is a message a test Client received.
type Message struct {
	Topic    string
	Payload  string
	Retained bool
	QoS      byte
}

// ClientOptions configures a test Client.
type ClientOptions struct {
	ClientID           string // default: a unique id
	Username, Password string
	CAFile             string // for ssl:// and wss://
	Persistent         bool   // clean session off
	Will               *Message
	AutoReconnect      bool
	// NoRetry makes the first failed connect the answer: a test expecting
	// the connection to fail (no CA, a proxy that is down) sets it, so it
	// does not wait out the retries meant for a broker still starting.
	NoRetry bool
}

// Client is a plain paho client for a test's side of the conversation:
// publishing commands and watching what the code under test publishes.
type Client struct {
	t    testing.TB
	pc   paho.Client
	msgs chan Message
	lost atomic.Uint64
}

var clientSeq atomic.Uint64

// NewClient connects to url or fails the test; t.Cleanup disconnects it.
func NewClient(t testing.TB, url string, o ClientOptions) *Client {
	t.Helper()
	c, err := DialClient(t, url, o)
	if err != nil {
		t.Fatalf("mqtttest: connect test client to %s: %v", url, err)
	}
	return c
}

// DialClient is NewClient returning the connection error (for tests of
// refused connections).
func DialClient(t testing.TB, url string, o ClientOptions) (*Client, error) {
	t.Helper()
	if o.ClientID == "" {
		o.ClientID = fmt.Sprintf("mqtttest-%d-%d", os.Getpid(), clientSeq.Add(1))
	}
	c := &Client{t: t, msgs: make(chan Message, 4096)}
	po := paho.NewClientOptions().AddBroker(url).SetClientID(o.ClientID).
		SetUsername(o.Username).SetPassword(o.Password).
		SetProtocolVersion(4).
		SetCleanSession(!o.Persistent).
		SetAutoReconnect(o.AutoReconnect).
		SetConnectTimeout(5 * time.Second).
		SetConnectRetry(false).
		SetOrderMatters(true).
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) {
			select {
			case c.msgs <- Message{Topic: m.Topic(), Payload: string(m.Payload()), Retained: m.Retained(), QoS: m.Qos()}:
			default:
				c.lost.Add(1)
			}
		})
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		po.SetTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	}
	if o.Will != nil {
		po.SetWill(o.Will.Topic, o.Will.Payload, o.Will.QoS, o.Will.Retained)
	}
	c.pc = paho.NewClient(po)
	// A broker that has just started (TLS listeners above all) can reset
	// the first connections while it is still setting up: try again
	// briefly on network errors; a refusal (CONNACK) is the answer.
	deadline := time.Now().Add(5 * time.Second)
	for {
		tok := c.pc.Connect()
		if !tok.WaitTimeout(10 * time.Second) {
			c.pc.Disconnect(0)
			return nil, fmt.Errorf("no CONNACK within 10s")
		}
		err := tok.Error()
		if err == nil {
			break
		}
		var netErr net.Error
		if o.NoRetry || !errors.As(err, &netErr) && !strings.Contains(err.Error(), "network Error") || time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Cleanup(c.Close)
	return c, nil
}

// Subscribe subscribes (waiting for the SUBACK) or fails the test.
func (c *Client) Subscribe(filter string, qos byte) {
	c.t.Helper()
	tok := c.pc.Subscribe(filter, qos, nil)
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		c.t.Fatalf("mqtttest: subscribe %s: %v", filter, tok.Error())
	}
}

// Publish publishes (waiting for the acknowledgement) or fails the test.
func (c *Client) Publish(topic, payload string, retained bool, qos byte) {
	c.t.Helper()
	tok := c.pc.Publish(topic, qos, retained, payload)
	// A large payload takes its time on a loaded machine (tests send 50 MB
	// to see it refused): a second more for every MiB.
	wait := 5*time.Second + time.Duration(len(payload)>>20)*time.Second
	if !tok.WaitTimeout(wait) {
		c.t.Fatalf("mqtttest: publish %s: not acknowledged within %s", topic, wait)
	}
	if err := tok.Error(); err != nil {
		c.t.Fatalf("mqtttest: publish %s: %v", topic, err)
	}
}

// Next returns the next message received, or false after timeout.
func (c *Client) Next(timeout time.Duration) (Message, bool) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m := <-c.msgs:
		return m, true
	case <-t.C:
		return Message{}, false
	}
}

// WaitFor reads messages until one on topic has payload, or fails the test
// after timeout listing what it saw instead.
func (c *Client) WaitFor(topic, payload string, timeout time.Duration) Message {
	c.t.Helper()
	seen := c.Until(topic, payload, timeout)
	return seen[len(seen)-1]
}

// Until reads messages until one on topic has payload and returns all it
// read, that one last; it fails the test after timeout.
func (c *Client) Until(topic, payload string, timeout time.Duration) []Message {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	var seen []Message
	for {
		m, ok := c.Next(time.Until(deadline))
		if !ok {
			c.t.Fatalf("mqtttest: no %q on %s within %s; saw %+v", payload, topic, timeout, seen)
			return nil
		}
		seen = append(seen, m)
		if m.Topic == topic && m.Payload == payload {
			return seen
		}
	}
}

// Paho is the underlying client, for what the helpers do not cover.
func (c *Client) Paho() paho.Client { return c.pc }

// Close disconnects cleanly (the will is not published).
func (c *Client) Close() {
	c.pc.Disconnect(100)
}
