//go:build mosquitto

package app_test

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cloud2mqtt/internal/mqtttest"
)

// Needs mosquitto, mosquitto_sub and mosquitto_pub: -tags mosquitto.

// TestHomeAssistantV5BesideMosquitto runs mqttv5_test.go's checks against
// mosquitto, with mosquitto's MQTT 5 clients and mqtttest's, and with mosquitto's
// clients through the embedded broker, since libmosquitto's Receive Maximum of 20
// needs the fix in internal/broker/v5.go.
func TestHomeAssistantV5BesideMosquitto(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"mosquitto_sub", "mosquitto_pub"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (Debian: apt-get install mosquitto-clients); the mosquitto tag needs it", tool)
		}
	}
	for _, c := range []struct {
		name string
		kind mqtttest.Kind
		dial v5Dialer
	}{
		{"mosquitto/mosquitto_sub", mqtttest.Mosquitto, programHome},
		{"mosquitto/mqtttest", mqtttest.Mosquitto, goHome},
		{"embedded/mosquitto_sub", mqtttest.Embedded, programHome},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			homeAssistantV5(t, c.kind, c.dial)
		})
	}
}

// programHome is Home Assistant played by mosquitto_sub -V mqttv5 (Clean
// Start, no Session Expiry Interval, a Receive Maximum of 20) subscribed
// to haFilters at qos, printing what it receives, and mosquitto_pub -V
// mqttv5 for what it publishes.
func programHome(t *testing.T, url, name string, qos byte) v5Home {
	t.Helper()
	host, port, err := net.SplitHostPort(strings.TrimPrefix(url, "tcp://"))
	if err != nil {
		t.Fatalf("broker URL %s: %v", url, err)
	}
	p := &programV5{t: t, host: host, port: port, name: name, signal: make(chan struct{}, 1), done: make(chan struct{})}
	args := []string{"-h", host, "-p", port, "-V", "mqttv5", "-i", name, "-q", strconv.Itoa(int(qos)),
		"-F", "%r|%q|%E|%t|%x", "-t", p.syncTopic()}
	for _, f := range haFilters {
		args = append(args, "-t", f)
	}
	cmd := exec.Command("mosquitto_sub", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test binary
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &mqtttest.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("mosquitto_sub: %v", err)
	}
	go p.read(bufio.NewScanner(out))
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
		_ = cmd.Wait()
		if s := stderr.String(); s != "" {
			t.Logf("%s (mosquitto_sub) said: %s", name, s)
		}
	})
	return p
}

type programV5 struct {
	t                *testing.T
	host, port, name string
	signal           chan struct{}
	done             chan struct{}
	pubs             int

	mu     sync.Mutex
	msgs   []mqtttest.V5Message
	synced []string // payloads seen on syncTopic
}

func (p *programV5) syncTopic() string { return "harness/v5sync/" + p.name }

// read parses mosquitto_sub's lines: retain|qos|expiry|topic|hex payload.
func (p *programV5) read(sc *bufio.Scanner) {
	defer close(p.done)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "|", 5)
		if len(f) != 5 {
			p.t.Errorf("%s: mosquitto_sub printed %q", p.name, sc.Text())
			continue
		}
		payload, err := hex.DecodeString(f[4])
		qos, err2 := strconv.Atoi(f[1])
		expiry, err3 := strconv.ParseUint("0"+f[2], 10, 32)
		if err != nil || err2 != nil || err3 != nil {
			p.t.Errorf("%s: mosquitto_sub printed %q", p.name, sc.Text())
			continue
		}
		p.mu.Lock()
		if f[3] == p.syncTopic() {
			p.synced = append(p.synced, string(payload))
		} else {
			p.msgs = append(p.msgs, mqtttest.V5Message{Topic: f[3], Payload: string(payload), QoS: byte(qos), Retain: f[0] == "1", Expiry: uint32(expiry)})
		}
		p.mu.Unlock()
		select {
		case p.signal <- struct{}{}:
		default:
		}
	}
}

func (p *programV5) received() []mqtttest.V5Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]mqtttest.V5Message(nil), p.msgs...)
}

func (p *programV5) arrived() <-chan struct{} { return p.signal }

// publish runs mosquitto_pub, which at QoS 1 returns once the broker
// acknowledged the message.
func (p *programV5) publish(t *testing.T, m mqtttest.V5Message) {
	t.Helper()
	p.pubs++
	args := []string{"-h", p.host, "-p", p.port, "-V", "mqttv5", "-i", fmt.Sprintf("%s-pub-%d", p.name, p.pubs),
		"-q", strconv.Itoa(int(m.QoS)), "-t", m.Topic, "-m", m.Payload}
	if m.Retain {
		args = append(args, "-r")
	}
	if out, err := exec.Command("mosquitto_pub", args...).CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_pub %s: %v: %s", m.Topic, err, out)
	}
}

// sync publishes to a topic only this mosquitto_sub subscribes to until
// one of those messages comes back: then mosquitto_sub has subscribed and
// the broker has handled its subscriptions (the first tries may come
// before).
func (p *programV5) sync(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for n := 1; ; n++ {
		id := strconv.Itoa(n)
		p.publish(t, mqtttest.V5Message{Topic: p.syncTopic(), Payload: id, QoS: 1})
		next := time.After(500 * time.Millisecond)
		for {
			p.mu.Lock()
			back := false
			for _, s := range p.synced {
				back = back || s == id
			}
			p.mu.Unlock()
			if back {
				return
			}
			select {
			case <-p.signal:
				continue
			case <-p.done:
				t.Fatalf("%s: mosquitto_sub ended", p.name)
			case <-next:
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: mosquitto_sub never received its own messages on %s", p.name, p.syncTopic())
		}
	}
}
