package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/events"
	"cloud2mqtt/internal/mqtt"
)

// -check tries what the daemon will need beyond the settings: the ports it
// will listen on (bound and released at once) and the cloud's event broker.

// checkListeners binds the embedded broker's port and HTTP_ADDR as the daemon
// will and releases them at once. LAN_LISTEN is checkLocal's.
func checkListeners(cfg config.Config, say func(bool, string, string)) {
	if cfg.Demo || cfg.Embedded() {
		if err := tryListen(cfg.MQTT.Listen); err != nil {
			say(false, "broker", fmt.Sprintf("the embedded broker cannot listen on MQTT_LISTEN=%s: %s; %s",
				cfg.MQTT.Listen, bindError(err), listenHint("MQTT_LISTEN", "127.0.0.1:1884", err)))
		} else {
			say(true, "broker", "the embedded broker will listen on "+cfg.MQTT.Listen+" (the port is free)")
		}
	}
	addr := cfg.HTTP.Addr
	if addr == "" {
		return
	}
	if err := tryListen(addr); err != nil {
		say(false, "http", fmt.Sprintf("cannot listen on HTTP_ADDR=%s: %s; %s", addr, bindError(err), listenHint("HTTP_ADDR", "127.0.0.1:8081", err)))
		return
	}
	say(true, "http", fmt.Sprintf("the status page will listen on %s (the port is free)", addr))
}

// tryListen binds addr over TCP and releases it.
func tryListen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return ln.Close()
}

// bindError is the system's reason a listen failed ("address already in
// use"), without the address the message already names.
func bindError(err error) string {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err.Error()
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err.Error()
	}
	return err.Error()
}

// listenHint says how to fix a listen address (the variable name) after a
// listen on it failed; example is a free address to suggest.
func listenHint(name, example string, err error) string {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Sprintf("another program uses that port (another broker or web server? cloud2mqtt already running?): stop it, or set %s to a free address like %s", name, example)
	case errors.Is(err, syscall.EACCES):
		return fmt.Sprintf("a port below 1024 needs privileges: set %s to a port above 1023, like %s", name, example)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return fmt.Sprintf("that address is not one of this machine's: set %s to one of its addresses, like %s", name, example)
	}
	return fmt.Sprintf("set %s to a free address of this machine, like %s", name, example)
}

// loopbackListen reports whether a listen address binds loopback only (as
// the status page judges it: a loopback IP or localhost).
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// eventsTimeout bounds -check's connection to the event broker.
const eventsTimeout = 10 * time.Second

// checkEvents reaches CLOUD_EVENTS_URL as the daemon will: a refused connection
// fails at once, else it logs in with the API key and subscribes.
func checkEvents(ctx context.Context, cfg config.Config, say func(bool, string, string)) {
	raw := cfg.Cloud.EventsURL
	if raw == "" || cfg.Demo {
		return
	}
	key := cfg.Cloud.APIKey.Reveal()
	fail := func(msg string) {
		say(false, "cloud events", hideKey(msg, key)+": check CLOUD_EVENTS_URL, or leave it empty to turn events off")
	}
	addr, err := brokerAddr(raw)
	if err != nil {
		fail(err.Error())
		return
	}
	cctx, cancel := context.WithTimeout(ctx, eventsTimeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(cctx, "tcp", addr)
	if err != nil {
		fail(fmt.Sprintf("nothing answers at %s (%s)", addr, bindError(err)))
		return
	}
	_ = conn.Close()
	c, err := mqtt.Connect(cctx, mqtt.Config{URL: raw, Username: key, Password: key,
		ClientID: mqtt.DefaultClientID("check events " + raw), Logger: zerolog.Nop(), FailFast: true}, nil)
	if err != nil {
		fail(err.Error())
		return
	}
	defer c.Close(context.Background())
	if err := c.Subscribe(events.Topic(key), 1, func(string, []byte, bool) {}); err != nil {
		fail("the account's event topic: " + err.Error())
		return
	}
	say(true, "cloud events", "logged in to "+redactURL(raw)+" with the API key and subscribed to the account's events")
}

// brokerAddr is the host:port an MQTT URL connects to, with the scheme's
// default port when it names none.
func brokerAddr(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("not a URL")
	}
	if u.Port() != "" {
		return u.Host, nil
	}
	port := map[string]string{"tcp": "1883", "mqtt": "1883", "ssl": "8883", "tls": "8883", "mqtts": "8883", "ws": "80", "wss": "443"}[strings.ToLower(u.Scheme)]
	if port == "" {
		return "", fmt.Errorf("the scheme %s has no default port", config.Quote(u.Scheme))
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// hideKey replaces the API key in a message (the event broker's user name,
// password and topic are the key).
func hideKey(msg, key string) string {
	if len(key) < 4 {
		return msg
	}
	return strings.ReplaceAll(msg, key, config.Redacted)
}
