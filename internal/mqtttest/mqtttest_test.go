package mqtttest

import (
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// roundTrip proves a broker accepts a client at url and routes a retained
// message to a later subscriber.
func roundTrip(t *testing.T, url string, o ClientOptions) {
	t.Helper()
	pub := NewClient(t, url, o)
	pub.Publish("t/x", "hello", true, 1)
	sub := NewClient(t, url, o)
	sub.Subscribe("t/#", 1)
	m := sub.WaitFor("t/x", "hello", 5*time.Second)
	if !m.Retained {
		t.Errorf("message to a new subscriber: retained = false, want true")
	}
}

func TestStart(t *testing.T) {
	for _, kind := range Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			t.Run("plain", func(t *testing.T) {
				b := Start(t, WithKind(kind))
				if b.Kind() != kind {
					t.Fatalf("Kind() = %s, want %s", b.Kind(), kind)
				}
				roundTrip(t, b.URL(), ClientOptions{})
			})
			t.Run("password", func(t *testing.T) {
				b := Start(t, WithKind(kind), WithPassword("bridge", "s3cret"))
				roundTrip(t, b.URL(), ClientOptions{Username: "bridge", Password: "s3cret"})
				if _, err := DialClient(t, b.URL(), ClientOptions{Username: "bridge", Password: "wrong"}); err == nil {
					t.Errorf("wrong password accepted")
				}
				if _, err := DialClient(t, b.URL(), ClientOptions{}); err == nil {
					t.Errorf("anonymous client accepted")
				}
			})
			t.Run("tls", func(t *testing.T) {
				b := Start(t, WithKind(kind), WithTLS())
				if b.CAFile() == "" || b.URL()[:6] != "ssl://" {
					t.Fatalf("CAFile %q URL %q: want a CA file and ssl://", b.CAFile(), b.URL())
				}
				roundTrip(t, b.URL(), ClientOptions{CAFile: b.CAFile()})
				if _, err := DialClient(t, b.URL(), ClientOptions{NoRetry: true}); err == nil {
					t.Errorf("client without the test CA accepted the server certificate")
				}
			})
			t.Run("websocket", func(t *testing.T) {
				b := Start(t, WithKind(kind), WithWebsocket())
				roundTrip(t, b.WSURL(), ClientOptions{})
			})
		})
	}
}

func TestRestartKeepsPortDropsState(t *testing.T) {
	for _, kind := range Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			b := Start(t, WithKind(kind))
			addr := b.Addr()
			c := NewClient(t, b.URL(), ClientOptions{})
			c.Publish("r/x", "before", true, 1)
			b.Restart()
			if b.Addr() != addr {
				t.Fatalf("Addr after restart %s, want %s", b.Addr(), addr)
			}
			sub := NewClient(t, b.URL(), ClientOptions{})
			sub.Subscribe("r/#", 1)
			sub.Publish("r/y", "marker", false, 1)
			// The retained "before" was lost with the broker's state: the
			// only message is the live marker.
			if seen := sub.Until("r/y", "marker", 5*time.Second); len(seen) != 1 {
				t.Errorf("after restart the subscriber saw %+v, want only the marker", seen)
			}
		})
	}
}

func TestKillLeavesDown(t *testing.T) {
	b := Start(t)
	b.Kill()
	if c, err := net.DialTimeout("tcp", b.Addr(), time.Second); err == nil {
		_ = c.Close()
		t.Fatalf("broker still accepts connections after Kill")
	}
	b.Restart()
	NewClient(t, b.URL(), ClientOptions{})
}

func TestProxySeverPublishesWill(t *testing.T) {
	for _, kind := range Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			b := Start(t, WithKind(kind))
			p := NewProxy(t, b.Addr())
			watcher := NewClient(t, b.URL(), ClientOptions{})
			watcher.Subscribe("w/state", 1)
			NewClient(t, p.URL(), ClientOptions{Will: &Message{Topic: "w/state", Payload: "gone", Retained: true, QoS: 1}})
			p.Sever()
			watcher.WaitFor("w/state", "gone", 10*time.Second)

			p.SetDown(true)
			if _, err := DialClient(t, p.URL(), ClientOptions{NoRetry: true}); err == nil {
				t.Errorf("client connected through a proxy that is down")
			}
			p.SetDown(false)
			NewClient(t, p.URL(), ClientOptions{})
		})
	}
}

// TestProxyHoldWaitsForTheBroker: a client connecting through a held proxy
// while its broker is down is not refused: it connects once the proxy is
// released and the broker is back.
func TestProxyHoldWaitsForTheBroker(t *testing.T) {
	b := Start(t)
	p := NewProxy(t, b.Addr())
	p.Hold(true)
	b.Kill()
	done := make(chan error, 1)
	go func() {
		_, err := DialClient(t, p.URL(), ClientOptions{})
		done <- err
	}()
	b.Restart()
	select {
	case err := <-done:
		t.Fatalf("connect through a held proxy finished before the release: %v", err)
	default:
	}
	p.Hold(false)
	if err := <-done; err != nil {
		t.Fatalf("connect through a released proxy: %v", err)
	}
}
