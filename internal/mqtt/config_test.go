package mqtt

import (
	"bytes"
	"cloud2mqtt/internal/topic"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  Config
		want string // substring of the error; "" means valid
	}{
		{"tcp", Config{URL: "tcp://127.0.0.1:1883"}, ""},
		{"mqtt", Config{URL: "mqtt://broker"}, ""},
		{"ssl", Config{URL: "ssl://broker:8883"}, ""},
		{"mqtts", Config{URL: "mqtts://broker"}, ""},
		{"ws", Config{URL: "ws://broker:9001/mqtt"}, ""},
		{"wss", Config{URL: "wss://broker/mqtt"}, ""},
		{"empty", Config{}, "MQTT_URL is empty"},
		{"no scheme", Config{URL: "127.0.0.1:1883"}, "MQTT_URL \"127.0.0.1:1883\" has no scheme: write e.g. tcp://127.0.0.1:1883"},
		{"bad scheme", Config{URL: "http://broker"}, `MQTT_URL scheme "http" is not supported: use tcp://`},
		{"no host", Config{URL: "tcp://:1883"}, "has no host"},
		{"cert without key", Config{URL: "ssl://b", CertFile: "c.pem"}, "MQTT_CERT_FILE and MQTT_KEY_FILE must be set together"},
		{"key without cert", Config{URL: "ssl://b", KeyFile: "k.pem"}, "MQTT_CERT_FILE and MQTT_KEY_FILE must be set together"},
		{"ca on tcp", Config{URL: "tcp://b", CAFile: notPEM}, "not encrypted: use ssl://"},
		{"ca missing", Config{URL: "ssl://b", CAFile: filepath.Join(dir, "nope.pem")}, "MQTT_CA_FILE cannot be read"},
		{"ca not pem", Config{URL: "ssl://b", CAFile: notPEM}, "holds no PEM certificate"},
		{"cert unreadable", Config{URL: "ssl://b", CertFile: notPEM, KeyFile: notPEM}, "MQTT_CERT_FILE " + notPEM},
		{"password alone", Config{URL: "tcp://b", Password: "x"}, "MQTT_PASSWORD is set but MQTT_USERNAME is empty"},
		{"wildcard state", Config{URL: "tcp://b", StateTopic: "a/+/state"}, "must not contain the wildcards"},
		{"client id", Config{URL: "tcp://b", ClientID: "a/b"}, "MQTT_CLIENT_ID"},
		{"negative", Config{URL: "tcp://b", KeepAlive: -1}, "keep-alive -1ns is negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("Validate() = %v, want an error containing %q", err, c.want)
			case err != nil && !strings.HasPrefix(err.Error(), "mqtt: "):
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	n, err := Config{URL: "ssl://broker", StateTopic: "x/bridge/state"}.normalized()
	if err != nil {
		t.Fatal(err)
	}
	if n.URL != "ssl://broker:8883" {
		t.Errorf("URL = %s, want the default TLS port added", n.URL)
	}
	if n.ClientID != DefaultClientID("x/bridge/state") || !strings.HasPrefix(n.ClientID, "cloud2mqtt-") {
		t.Errorf("ClientID = %q, want DefaultClientID of the state topic", n.ClientID)
	}
	if DefaultClientID("x/bridge/state") == DefaultClientID("y/bridge/state") {
		t.Errorf("two base topics give one client id: they would steal each other's session")
	}
	if n.KeepAlive != DefaultKeepAlive || n.QueueSize != DefaultQueueSize {
		t.Errorf("defaults not applied: %+v", n)
	}
}

func TestSecretsRedacted(t *testing.T) {
	t.Parallel()
	cfg := Config{URL: "tcp://user:urlpass@broker:1883", Username: "bridge", Password: "hunter2"}
	var buf bytes.Buffer
	log := zerolog.New(&buf)
	log.Info().Object("mqtt", cfg).Msg("config")
	for _, out := range []string{cfg.String(), fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), buf.String()} {
		if strings.Contains(out, "hunter2") || strings.Contains(out, "urlpass") {
			t.Errorf("password in %s", out)
		}
		if !strings.Contains(out, "bridge") {
			t.Errorf("username missing from %s", out)
		}
	}
	bad := Config{URL: "http://user:urlpass@broker", Password: "hunter2"}
	if err := bad.Validate(); err == nil || strings.Contains(err.Error(), "urlpass") {
		t.Errorf("Validate error %v: want an error without the URL's password", err)
	}
	bad = Config{URL: "user:urlpass@broker"}
	if err := bad.Validate(); err == nil || strings.Contains(err.Error(), "urlpass") {
		t.Errorf("Validate error %v: want an error without the URL's password", err)
	}
}

func TestMatch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		filter, topic string
		want          bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/c", false},
		{"a/+", "a/b", true},
		{"a/+", "a/b/c", false},
		{"a/+/c", "a/b/c", true},
		{"a/#", "a/b/c", true},
		{"a/#", "a", true},
		{"a/#", "ab", false},
		{"#", "a/b", true},
		{"+/+", "a/b", true},
		{"+", "a/b", false},
		{"#", "$SYS/x", false},
		{"+/x", "$SYS/x", false},
		{"$SYS/#", "$SYS/x", true},
		{"a/+", "a/", true},
		{"a//b", "a//b", true},
	} {
		if got := topic.Matches(c.filter, c.topic); got != c.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", c.filter, c.topic, got, c.want)
		}
	}
	for _, f := range []string{"", "a/#/b", "a/b#", "a+/b"} {
		if checkFilter(f) == nil {
			t.Errorf("checkFilter(%q) accepted a bad filter", f)
		}
	}
	for _, f := range []string{"a", "a/+/b", "#", "a/#", "+"} {
		if err := checkFilter(f); err != nil {
			t.Errorf("checkFilter(%q) = %v", f, err)
		}
	}
}

func FuzzMatch(f *testing.F) {
	f.Add("a/+/c", "a/b/c")
	f.Add("a/#", "a")
	f.Add("#", "$SYS/x")
	f.Fuzz(func(t *testing.T, filter, name string) {
		if checkFilter(filter) != nil || checkTopic(name) != nil {
			return
		}
		m := topic.Matches(filter, name)
		if filter == name && !strings.HasPrefix(name, "$") && !m {
			t.Errorf("a filter without wildcards must match its own topic: %q", name)
		}
		if filter == "#" && !strings.HasPrefix(name, "$") && !m {
			t.Errorf("# must match %q", name)
		}
	})
}
