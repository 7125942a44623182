package mqtt

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/clock"
)

// Payloads of Config.StateTopic.
const (
	Online  = "online"
	Offline = "offline"
)

// Defaults applied by Connect to zero Config fields.
const (
	DefaultConnectTimeout       = 10 * time.Second
	DefaultKeepAlive            = 30 * time.Second
	DefaultConnectRetryInterval = 5 * time.Second
	// DefaultMaxReconnectInterval caps paho's wait before a reconnection:
	// a client that takes the bridge's id again and again keeps it away
	// no longer than this each time (takeover.go), and a broker that
	// restarts is found again within it.
	DefaultMaxReconnectInterval = 10 * time.Second
	DefaultPublishTimeout       = 10 * time.Second
	DefaultQueueSize            = 1024
	DefaultMaxQueuedBytes       = 64 << 20
)

// Config is the bridge's MQTT connection. Validate names the environment
// variable (MQTT_URL, MQTT_CA_FILE, ...) to fix, because that is what the
// user sets.
type Config struct {
	// URL of the broker: tcp:// (or mqtt://), ssl:// (or mqtts://, tls://),
	// ws:// or wss://. A missing port means 1883 (tcp) or 8883 (ssl).
	URL string
	// CAFile is a PEM bundle of CAs to trust instead of the system's (TLS only).
	CAFile string
	// CertFile and KeyFile are a client certificate and key (TLS only), both or neither.
	CertFile, KeyFile string
	// Username and Password for the broker; the password is never logged.
	Username, Password string
	// ClientID identifies the persistent session; empty means Record's
	// (made up once and kept in the state directory), or without a Record
	// DefaultClientID(StateTopic).
	ClientID string
	// Record is the bridge's record of its connection (record.go): its
	// client id, and when it was last connected, read at Connect and
	// written while connected and at Close. With it, what the broker kept
	// for the session while the Client was away longer than QueuedMaxAge
	// is dropped at connect (backlog.go), and a client id of this run only
	// (no state directory) has its session ended at Close. It needs
	// StateTopic (the fence is published under it). nil: none of that.
	Record *Record
	// QueuedMaxAge is, with Record, the longest time away after which what
	// the broker kept meanwhile is still handled (MQTT_QUEUED_COMMAND_MAX_AGE);
	// 0: none of it is.
	QueuedMaxAge time.Duration
	// StateTopic is the bridge's birth and will topic (<base>/bridge/state):
	// "online" retained on every connect, "offline" retained as the will and
	// on Close, both QoS 1. Empty means no birth and no will.
	StateTopic string
	// Logger gets the connection's events; the password never reaches it.
	Logger zerolog.Logger
	// ConnectTimeout bounds each connection attempt (dial, TLS, CONNECT).
	ConnectTimeout time.Duration
	// KeepAlive is the MQTT keep-alive interval.
	KeepAlive time.Duration
	// ConnectRetryInterval is the wait between attempts until the first
	// connection succeeds.
	ConnectRetryInterval time.Duration
	// MaxReconnectInterval caps paho's back-off between reconnection
	// attempts, and so how long another client taking the id keeps the
	// Client away.
	MaxReconnectInterval time.Duration
	// PublishTimeout bounds the wait for one publish to be acknowledged.
	PublishTimeout time.Duration
	// QueueSize is the capacity of each subscription's inbound queue.
	QueueSize int
	// MaxQueuedBytes bounds the outbound queue (topics and payloads waiting
	// for the broker): a republish of thousands of discovery configs must
	// fit, so it is bounded in bytes, not messages.
	MaxQueuedBytes int
	// FailFast makes Connect return the first attempt's failure at once
	// (-check: a refused connection or a wrong scheme is the answer); else
	// it tries again every ConnectRetryInterval until ctx ends (the
	// daemon: a broker that starts after the bridge is waited for).
	FailFast bool
	// Clock is told of the Client's work in hand (clock.Busy): every
	// message queued by Publish until the broker acknowledges it (QoS 1),
	// it is written (QoS 0) or given up, and every message received from
	// when paho hands it over until it is handled and acknowledged. nil
	// means clock.Real, where that costs nothing. The Client's own waits
	// keep the time package's timers.
	Clock clock.Clock
}

// Validate checks the configuration without touching the network; its
// messages name the variable and the fix.
func (c Config) Validate() error {
	_, err := c.normalized()
	return err
}

// normalized validates c and returns it with defaults applied and the URL
// completed with its default port.
func (c Config) normalized() (Config, error) {
	u, err := parseURL(c.URL)
	if err != nil {
		return c, err
	}
	c.URL = u.String()
	secure := isTLS(u.Scheme)
	if (c.CertFile == "") != (c.KeyFile == "") {
		return c, errors.New("mqtt: MQTT_CERT_FILE and MQTT_KEY_FILE must be set together (the client certificate and its key)")
	}
	if !secure && (c.CAFile != "" || c.CertFile != "") {
		return c, fmt.Errorf("mqtt: MQTT_CA_FILE/MQTT_CERT_FILE are set but MQTT_URL uses %s://, which is not encrypted: use ssl://, mqtts://, tls:// or wss://, or unset the TLS files", u.Scheme)
	}
	if c.CAFile != "" {
		if _, err := loadCA(c.CAFile); err != nil {
			return c, err
		}
	}
	if c.CertFile != "" {
		if _, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile); err != nil {
			return c, fmt.Errorf("mqtt: MQTT_CERT_FILE %s / MQTT_KEY_FILE %s: %w (both must be readable PEM files, the key matching the certificate)", c.CertFile, c.KeyFile, err)
		}
	}
	if c.Password != "" && c.Username == "" {
		return c, errors.New("mqtt: MQTT_PASSWORD is set but MQTT_USERNAME is empty: set the username too")
	}
	if c.StateTopic != "" {
		if err := checkTopic(c.StateTopic); err != nil {
			return c, fmt.Errorf("mqtt: state topic %q: %w (check MQTT_BASE_TOPIC)", c.StateTopic, err)
		}
	}
	if strings.ContainsAny(c.ClientID, "+#/") {
		return c, fmt.Errorf("mqtt: MQTT_CLIENT_ID %q must not contain '+', '#' or '/'", c.ClientID)
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"connect timeout", &c.ConnectTimeout, DefaultConnectTimeout},
		{"keep-alive", &c.KeepAlive, DefaultKeepAlive},
		{"connect retry interval", &c.ConnectRetryInterval, DefaultConnectRetryInterval},
		{"max reconnect interval", &c.MaxReconnectInterval, DefaultMaxReconnectInterval},
		{"publish timeout", &c.PublishTimeout, DefaultPublishTimeout},
	} {
		if *d.v < 0 {
			return c, fmt.Errorf("mqtt: %s %s is negative: use a positive duration or 0 for the default %s", d.name, *d.v, d.def)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if c.KeepAlive < time.Second {
		return c, fmt.Errorf("mqtt: keep-alive %s is below 1s: MQTT counts it in whole seconds", c.KeepAlive)
	}
	if c.QueueSize < 0 {
		return c, fmt.Errorf("mqtt: queue size %d is negative: use 0 for the default %d", c.QueueSize, DefaultQueueSize)
	}
	if c.MaxQueuedBytes <= 0 {
		c.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
	if c.QueueSize == 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.QueuedMaxAge < 0 {
		return c, fmt.Errorf("mqtt: MQTT_QUEUED_COMMAND_MAX_AGE %s is negative: use a duration like 2m, or 0", c.QueuedMaxAge)
	}
	if c.Record != nil && c.StateTopic == "" {
		return c, errors.New("mqtt: a Record needs a state topic: its fence is published under it")
	}
	switch {
	case c.ClientID != "":
	case c.Record != nil:
		c.ClientID = c.Record.ClientID("")
	default:
		c.ClientID = DefaultClientID(c.StateTopic)
	}
	c.Clock = clock.Or(c.Clock)
	return c, nil
}

var schemes = map[string]string{
	"tcp": "1883", "mqtt": "1883",
	"ssl": "8883", "mqtts": "8883", "tls": "8883",
	"ws": "", "wss": "",
}

func isTLS(scheme string) bool {
	return scheme == "ssl" || scheme == "mqtts" || scheme == "tls" || scheme == "wss"
}

func parseURL(raw string) (*url.URL, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, errors.New("mqtt: MQTT_URL is empty: set it to the broker, e.g. tcp://127.0.0.1:1883")
	}
	if !strings.Contains(raw, "://") {
		return nil, fmt.Errorf("mqtt: MQTT_URL %q has no scheme: write e.g. tcp://%s (or mqtt://, ssl://, mqtts://, ws://, wss://)", redactedURL("tcp://" + raw)[len("tcp://"):], redactedURL("tcp://" + raw)[len("tcp://"):])
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url's error quotes the URL, which may hold a password.
		return nil, fmt.Errorf("mqtt: MQTT_URL is not a URL (want e.g. tcp://127.0.0.1:1883): %w", errors.Unwrap(err))
	}
	u.Scheme = strings.ToLower(u.Scheme)
	port, ok := schemes[u.Scheme]
	if !ok {
		return nil, fmt.Errorf("mqtt: MQTT_URL scheme %q is not supported: use tcp:// (or mqtt://), ssl:// (or mqtts://), ws:// or wss://", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("mqtt: MQTT_URL %q has no host: write e.g. %s://127.0.0.1", u.Redacted(), u.Scheme)
	}
	if u.Port() == "" && port != "" {
		u.Host = net.JoinHostPort(u.Hostname(), port)
	}
	return u, nil
}

func loadCA(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mqtt: MQTT_CA_FILE cannot be read: %w (give a readable PEM file of the broker's CA)", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("mqtt: MQTT_CA_FILE %s holds no PEM certificate (want -----BEGIN CERTIFICATE-----)", path)
	}
	return pool, nil
}

// tlsConfig builds the client's TLS settings for a TLS scheme, nil otherwise.
func (c Config) tlsConfig(u *url.URL) (*tls.Config, error) {
	if !isTLS(u.Scheme) {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: u.Hostname()}
	if c.CAFile != "" {
		pool, err := loadCA(c.CAFile)
		if err != nil {
			return nil, err
		}
		t.RootCAs = pool
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("mqtt: MQTT_CERT_FILE/MQTT_KEY_FILE: %w", err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}

// DefaultClientID is "cloud2mqtt-" and 8 hex digits of a hash of the host
// name, the machine id (systemd's /etc/machine-id, when there is one) and
// seed: stable across restarts and different for each seed, for the
// connections that are not the bridge's own (-check's, the cloud's
// events). It is no secret: whoever knows the host name, the seed and the
// machine id (or that there is none) derives it. The bridge's own id is
// its Record's.
func DefaultClientID(seed string) string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	in := host + "\n" + seed
	if m := machineID(); m != "" {
		// The machine id is confidential (machine-id(5)): only a hash of
		// it with data of ours leaves the host.
		in = "cloud2mqtt\n" + in + "\n" + m
	}
	sum := sha256.Sum256([]byte(in))
	return "cloud2mqtt-" + hex.EncodeToString(sum[:4])
}

// machineIDFiles are where the machine id is read from, in order.
var machineIDFiles = []string{"/etc/machine-id", "/var/lib/dbus/machine-id"}

// machineID is this host's machine id, or "" when it has none.
func machineID() string {
	for _, f := range machineIDFiles {
		b, err := os.ReadFile(f)
		if id := strings.TrimSpace(string(b)); err == nil && len(id) >= 16 && len(id) <= 64 && !strings.ContainsAny(id, " \n") {
			return id
		}
	}
	return ""
}

// redactedURL is the URL without a password in its user info.
func redactedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

func secret(s string) string {
	if s == "" {
		return ""
	}
	return "***"
}

// String shows the configuration with the password redacted.
func (c Config) String() string {
	return fmt.Sprintf("mqtt.Config{URL:%s CAFile:%s CertFile:%s KeyFile:%s Username:%s Password:%s ClientID:%s StateTopic:%s ConnectTimeout:%s KeepAlive:%s}",
		redactedURL(c.URL), c.CAFile, c.CertFile, c.KeyFile, c.Username, secret(c.Password), c.ClientID, c.StateTopic, c.ConnectTimeout, c.KeepAlive)
}

// GoString keeps %#v from printing the password.
func (c Config) GoString() string { return c.String() }

// MarshalZerologObject logs the configuration with the password redacted.
func (c Config) MarshalZerologObject(e *zerolog.Event) {
	e.Str("url", redactedURL(c.URL)).
		Str("ca_file", c.CAFile).
		Str("cert_file", c.CertFile).
		Str("key_file", c.KeyFile).
		Str("username", c.Username).
		Str("password", secret(c.Password)).
		Str("client_id", c.ClientID).
		Str("state_topic", c.StateTopic).
		Dur("connect_timeout", c.ConnectTimeout).
		Dur("keep_alive", c.KeepAlive)
}
