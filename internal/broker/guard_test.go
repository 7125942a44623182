package broker

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// A client sending a packet over the limit is disconnected and the packet
// never reaches a subscriber; one under it, and the owner's (the bridge's)
// with any size, go through. A client that only claims the owner's client
// id is no owner.
func TestPacketSizeLimit(t *testing.T) {
	for _, ws := range []bool{false, true} {
		name := "tcp"
		if ws {
			name = "websocket"
		}
		t.Run(name, func(t *testing.T) {
			logs := &lockedBuffer{}
			o := Options{MaxPacketSize: DefaultMaxPacketSize, Owner: testOwner(), Logger: zerolog.New(logs)}
			if ws {
				o.WSAddr = "127.0.0.1:0"
			}
			b := start(t, o)
			url := b.URL()
			if ws {
				url = b.WSURL()
			}
			subc, ch, err := connect(t, url, "subscriber", true, "", "")
			if err != nil {
				t.Fatal(err)
			}
			if tok := subc.Subscribe("c2m/#", 1, nil); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
				t.Fatalf("subscribe: %v", tok.Error())
			}
			attacker, _, err := connect(t, url, "attacker", true, "", "")
			if err != nil {
				t.Fatal(err)
			}
			small := strings.Repeat("a", 60<<10)
			if tok := attacker.Publish("c2m/x/set/brightness", 1, false, small); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
				t.Fatalf("a 60 KiB publish: %v", tok.Error())
			}
			if m := <-ch; len(m.payload) != len(small) {
				t.Fatalf("got %d bytes, want the 60 KiB message", len(m.payload))
			}
			attacker.Publish("c2m/x/set/brightness", 1, false, strings.Repeat("b", 1<<20))
			deadline := time.Now().Add(5 * time.Second)
			for attacker.IsConnectionOpen() && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if attacker.IsConnectionOpen() {
				t.Fatal("a client that sent 1 MiB is still connected")
			}
			user, pass := b.OwnerLogin()
			bridge, _, err := connect(t, url, testOwner().ClientID, true, user, pass)
			if err != nil {
				t.Fatal(err)
			}
			big := strings.Repeat("c", 1<<20)
			if tok := bridge.Publish("c2m/bridge/devices", 1, false, big); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
				t.Fatalf("the bridge's own 1 MiB publish: %v", tok.Error())
			}
			if m := <-ch; len(m.payload) != len(big) {
				t.Fatalf("got %d bytes (%.20q), want the bridge's 1 MiB message; the attacker's must not arrive", len(m.payload), m.payload)
			}
			if !strings.Contains(logs.String(), `"remote":"127.0.0.1:`) || !strings.Contains(logs.String(), "size limit") {
				t.Errorf("no warning naming where the client came from: %s", logs.String())
			}
		})
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Without MaxPacketSize there is no limit.
func TestNoPacketSizeLimitByDefault(t *testing.T) {
	b := start(t, Options{Logger: zerolog.Nop()})
	sub, ch, err := connect(t, b.URL(), "subscriber", true, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if tok := sub.Subscribe("big", 1, nil); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}
	c, _, err := connect(t, b.URL(), "anyone", true, "", "")
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("d", 1<<20)
	if tok := c.Publish("big", 1, false, big); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("publish: %v", tok.Error())
	}
	if m := <-ch; len(m.payload) != len(big) {
		t.Fatalf("got %d bytes", len(m.payload))
	}
}
