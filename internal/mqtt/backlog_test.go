package mqtt

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.mqtt.golang/packets"
	"github.com/rs/zerolog"

	"cloud2mqtt/internal/clock/clocktest"
	"cloud2mqtt/internal/mqtttest"
	"cloud2mqtt/internal/statedir"
)

// backlogConfig is testConfig with a Record in dir ("" for none: the
// test's fixed id, as MQTT_CLIENT_ID) on clk, QueuedMaxAge 2 min.
func backlogConfig(t *testing.T, url string, dir statedir.Dir, clk *clocktest.Clock) (Config, *mqtttest.SyncBuffer) {
	cfg, logs := testConfig(t, url)
	if dir != "" {
		cfg.ClientID = "" // the record's
	}
	cfg.Record, cfg.QueuedMaxAge, cfg.Clock = OpenRecord(dir, zerolog.Nop()), 2*time.Minute, clk
	return cfg, logs
}

// backlogWarnings are the log's warnings about a backlog dropped.
func backlogWarnings(t *testing.T, logs *mqtttest.SyncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["level"] == "warn" && strings.Contains(fmt.Sprint(m["message"]), "MQTT_QUEUED_COMMAND_MAX_AGE") {
			out = append(out, m)
		}
	}
	return out
}

// subscriber subscribes the bridge's way: in onConnect, which runs before
// "online"; to the commands, and to its own state topic (whose "offline",
// published at Close, the broker keeps for it: no command).
func subscriber(t *testing.T, cmds sink) func(*Client) {
	return func(c *Client) {
		if err := c.Subscribe("c2m/+/set", 1, cmds.handler); err != nil {
			t.Error(err)
		}
		if err := c.Subscribe(stateTopic, 1, func(string, []byte, bool) {}); err != nil {
			t.Error(err)
		}
	}
}

// TestBacklogOfALongAbsenceIsDropped: commands published while the bridge
// is stopped are queued by the broker and delivered when it starts. Away
// longer than QueuedMaxAge (or for an unknown time: no state directory),
// the bridge drops and acknowledges them all with one warning naming how
// many, their topics and the setting; away a shorter time, it runs them.
// 30 commands: more than mosquitto sends before the SUBACK (20).
func TestBacklogOfALongAbsenceIsDropped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		kept    bool
		away    time.Duration
		dropped string // the warning's offline field, "" when none is dropped
	}{
		{"away 3 minutes", true, 3 * time.Minute, "3m0s"},
		{"away 1 minute", true, time.Minute, ""},
		{"no state directory", false, 0, "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
				if kind == mqtttest.Embedded && tc.dropped != "" {
					// mochi resends a session's queue out of order, so the
					// fence cannot tell the backlog from what follows; the
					// embedded broker keeps no session across restarts anyway.
					return
				}
				b := mqtttest.Start(t, mqtttest.WithKind(kind))
				clk := clocktest.New()
				var dir statedir.Dir
				if tc.kept {
					dir = statedir.Dir(t.TempDir())
				}
				cfg, logs := backlogConfig(t, b.URL(), dir, clk)
				cmds := make(sink, 64)
				closeClient(t, connect(t, cfg, subscriber(t, cmds)))

				pub := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{})
				var sent [][2]string
				for i := range 30 {
					m := [2]string{fmt.Sprintf("c2m/dev%d/set", i%3), fmt.Sprint(i)}
					pub.Publish(m[0], m[1], false, 1)
					sent = append(sent, m)
				}
				clk.Advance(tc.away)
				cfg.Record = OpenRecord(dir, zerolog.Nop()) // as a restart reads it
				c := connect(t, cfg, subscriber(t, cmds))
				clk.IdleWithin(t, 10*time.Second, "the backlog dealt with")
				warnings := backlogWarnings(t, logs)

				if tc.dropped == "" {
					var got [][2]string
					for range sent {
						got = append(got, cmds.next(t))
					}
					if kind == mqtttest.Embedded { // mochi reorders a session's queue
						slices.SortFunc(got, func(a, b [2]string) int { return strings.Compare(a[0]+a[1], b[0]+b[1]) })
						slices.SortFunc(sent, func(a, b [2]string) int { return strings.Compare(a[0]+a[1], b[0]+b[1]) })
					}
					if !slices.Equal(got, sent) {
						t.Errorf("handled %v, want the 30 commands sent %s before", got, tc.away)
					}
					if len(warnings) != 0 {
						t.Errorf("warnings %v, want none", warnings)
					}
					return
				}
				pub.Publish("c2m/dev0/set", "live", false, 1)
				if got := cmds.next(t); got != [2]string{"c2m/dev0/set", "live"} {
					t.Errorf("handled %v first, want the command sent once the bridge was back (none of the backlog)", got)
				}
				if len(warnings) != 1 {
					t.Fatalf("%d warnings, want one: %v", len(warnings), warnings)
				}
				w := warnings[0]
				topics, _ := w["topics"].([]any)
				if w["dropped"] != float64(30) || len(topics) != 3 || !strings.HasPrefix(fmt.Sprint(w["offline"]), tc.dropped) || w["max_age"] != "2m0s" {
					t.Errorf("warning %v, want 30 dropped, the 3 topics, offline %s, max_age 2m0s", w, tc.dropped)
				}
				if !tc.kept {
					return
				}
				// Acknowledged: the broker forgets them. Back within the
				// max age, the first command handled is one sent after.
				closeClient(t, c)
				pub.Publish("c2m/dev1/set", "after", false, 1)
				connect(t, cfg, subscriber(t, cmds))
				if got := cmds.next(t); got != [2]string{"c2m/dev1/set", "after"} {
					t.Errorf("handled %v, want the command sent after (the dropped ones were acknowledged)", got)
				}
			})
		})
	}
}

// TestBacklogOfAnOutageWhileRunning: the same judgement when the bridge
// keeps running but loses the broker (its network): the backlog of an
// outage longer than QueuedMaxAge on the bridge's clock is dropped, that
// of a shorter one is handled.
func TestBacklogOfAnOutageWhileRunning(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
		b := mqtttest.Start(t, mqtttest.WithKind(kind))
		p := mqtttest.NewProxy(t, b.Addr())
		clk := clocktest.New()
		cfg, logs := backlogConfig(t, p.URL(), statedir.Dir(t.TempDir()), clk)
		cmds := make(sink, 64)
		c := connect(t, cfg, subscriber(t, cmds))
		watch := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{})
		watch.Subscribe(stateTopic, 1)
		watch.Publish(stateTopic+"/probe", "start", false, 1) // past the retained "online"
		pub := mqtttest.NewClient(t, b.URL(), mqtttest.ClientOptions{})

		for round, away := range []time.Duration{3 * time.Minute, 30 * time.Second} {
			failed := strings.Count(logs.String(), "cannot connect to MQTT broker")
			p.SetDown(true)
			p.Sever()
			watch.WaitFor(stateTopic, Offline, 10*time.Second) // the will: the broker knows
			// An outage: an attempt refused (else a reconnection accepted
			// at once looks like a takeover).
			eventually(t, "a refused reconnection", func() bool { return strings.Count(logs.String(), "cannot connect to MQTT broker") > failed })
			for i := range 5 {
				pub.Publish(fmt.Sprintf("c2m/dev%d/set", i), fmt.Sprint(round), false, 1)
			}
			clk.Advance(away)
			p.SetDown(false)
			watch.WaitFor(stateTopic, Online, 10*time.Second) // said once the backlog is behind
			warnings := backlogWarnings(t, logs)
			if round == 0 {
				pub.Publish("c2m/dev0/set", "live", false, 1)
				if got := cmds.next(t); got != [2]string{"c2m/dev0/set", "live"} {
					t.Errorf("away %s: handled %v first, want the command sent once back", away, got)
				}
				if len(warnings) != 1 || warnings[0]["dropped"] != float64(5) {
					t.Errorf("away %s: warnings %v, want one, 5 dropped", away, warnings)
				}
				continue
			}
			for handled := 0; handled < 5; {
				// "live" may come again: handled just before the cut, its
				// acknowledgement lost with the connection.
				switch got := cmds.next(t); got[1] {
				case fmt.Sprint(round):
					handled++
				case "live":
				default:
					t.Fatalf("away %s: handled %v, want the commands sent while away", away, got)
				}
			}
			if len(warnings) != 1 {
				t.Errorf("away %s: warnings %v, want only the first outage's", away, warnings)
			}
		}
		if n := c.Stats().Conflicts; n != 0 {
			t.Errorf("%d takeovers said for a cut network", n)
		}
	})
}

// readSeen is the record's instant in dir.
func readSeen(t *testing.T, dir statedir.Dir) time.Time {
	t.Helper()
	var d recordData
	if err := dir.Read(recordFile, recordFormat, recordVersion, &d); err != nil {
		t.Fatal(err)
	}
	return d.Seen
}

// TestRecordFollowsTheConnection: the record's instant is written once
// connected, every seenEvery while connected (a crash then costs at most
// that much), and at Close.
func TestRecordFollowsTheConnection(t *testing.T) {
	t.Parallel()
	b := mqtttest.Start(t)
	clk := clocktest.New()
	dir := statedir.Dir(t.TempDir())
	cfg, _ := backlogConfig(t, b.URL(), dir, clk)
	c := connect(t, cfg, nil)
	clk.IdleWithin(t, 10*time.Second, "connected")
	first := readSeen(t, dir)
	if first.IsZero() {
		t.Fatal("no instant written once connected")
	}
	clk.Advance(seenEvery + seenGrid)
	clk.IdleWithin(t, 10*time.Second, "a while connected")
	later := readSeen(t, dir)
	if d := later.Sub(first); d < seenEvery {
		t.Errorf("the instant moved %s after %s connected, want at least %s", d, seenEvery+seenGrid, seenEvery)
	}
	closeClient(t, c)
	if last := readSeen(t, dir); last.Before(later) || last.Before(clk.Now().Add(-time.Minute)) {
		t.Errorf("the instant at Close is %s, want the close's (now %s)", last, clk.Now())
	}
}

// fenceBroker is the broker side of one connection for a test: it answers
// SUBSCRIBE and PUBLISH (QoS 1) but never delivers anything itself, as a
// broker whose ACL drops the fence does; the test delivers what it wants.
type fenceBroker struct {
	t      *testing.T
	conn   net.Conn
	refuse bool       // the subscription to the fence's topic
	mu     sync.Mutex // writes
	fences chan struct{}
	acked  chan uint16
	topics chan string // of the client's publishes, when not nil
}

func (f *fenceBroker) serve() {
	for {
		p, err := packets.ReadPacket(f.conn)
		if err != nil {
			return
		}
		var answer packets.ControlPacket
		fence := false
		switch p := p.(type) {
		case *packets.SubscribePacket:
			a := packets.NewControlPacket(packets.Suback).(*packets.SubackPacket)
			a.MessageID, a.ReturnCodes = p.MessageID, p.Qoss
			if f.refuse && slices.Contains(p.Topics, stateTopic+"/fence") {
				a.ReturnCodes = []byte{0x80}
			}
			answer = a
		case *packets.PublishPacket:
			a := packets.NewControlPacket(packets.Puback).(*packets.PubackPacket)
			a.MessageID = p.MessageID
			answer = a
			fence = p.TopicName == stateTopic+"/fence"
			if f.topics != nil {
				f.topics <- p.TopicName
			}
		case *packets.PubackPacket:
			f.acked <- p.MessageID
		case *packets.PingreqPacket:
			answer = packets.NewControlPacket(packets.Pingresp)
		}
		if answer != nil {
			f.mu.Lock()
			_ = answer.Write(f.conn)
			f.mu.Unlock()
		}
		if fence {
			f.fences <- struct{}{}
		}
	}
}

func (f *fenceBroker) deliver(id uint16, topic, payload string) {
	p := packets.NewControlPacket(packets.Publish).(*packets.PublishPacket)
	p.TopicName, p.Qos, p.MessageID, p.Payload = topic, 1, id, []byte(payload)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := p.Write(f.conn); err != nil {
		f.t.Error(err)
	}
}

// TestBacklogJudgementEndsWhenTheFenceNeverComesBack: a broker that never
// delivers the fence (its ACL drops it) does not make the bridge drop every
// command for ever: it publishes the fence fenceTries times, fenceWait
// apart on its clock, then says so and handles what comes; one that
// refuses the subscription to it, at once. What came before was dropped
// and acknowledged.
func TestBacklogJudgementEndsWhenTheFenceNeverComesBack(t *testing.T) {
	t.Parallel()
	for _, refuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("refused=%v", refuse), func(t *testing.T) {
			t.Parallel()
			fenceNeverBack(t, refuse)
		})
	}
}

func fenceNeverBack(t *testing.T, refuse bool) {
	b := newAckHoldingBroker(t)
	b.present.Store(true) // it kept a session: there is a backlog to judge
	clk := clocktest.New()
	cfg, logs := backlogConfig(t, b.url(), "", clk)
	cmds := make(sink, 4)
	type connected struct {
		c   *Client
		err error
	}
	done := make(chan connected, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := Connect(ctx, cfg, subscriber(t, cmds))
		done <- connected{c, err}
	}()
	f := &fenceBroker{t: t, conn: <-b.conn, refuse: refuse, fences: make(chan struct{}, fenceTries+1), acked: make(chan uint16, 4)}
	go f.serve()
	f.deliver(1, "c2m/dev/set", "old") // queued while away, for a time unknown
	if id := <-f.acked; id != 1 {
		t.Fatalf("acknowledged %d, want the old command's 1", id)
	}
	for range fenceTries {
		if refuse {
			break
		}
		<-f.fences
		clk.Advance(fenceWait)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { closeClient(t, r.c) })
	f.deliver(2, "c2m/dev/set", "new")
	got := cmds.next(t)
	// paho completes a refused fence's SUBACK ahead of publishes still in
	// its router, so the old command may be handled then (a known gap); a
	// fence that never comes back ends the judgement on the clock.
	oldRan := refuse && got == [2]string{"c2m/dev/set", "old"}
	if oldRan {
		got = cmds.next(t)
	}
	if got != [2]string{"c2m/dev/set", "new"} {
		t.Errorf("handled %v, want the command sent after the bridge gave up (not the old one)", got)
	}
	w := backlogWarnings(t, logs)
	problem := "did not come back"
	if refuse {
		problem = "refused the subscription"
	}
	wantDropped := float64(1)
	if oldRan {
		wantDropped = 0
	}
	if len(w) != 1 || w[0]["dropped"] != wantDropped || !strings.Contains(fmt.Sprint(w[0]["problem"]), problem) {
		t.Errorf("warnings %v, want one: %v dropped, %s", w, wantDropped, problem)
	}
}

// TestNoFenceWhenTheBrokerKeptNoSession: a broker that says it kept no
// session for the id (a new id, an expired session) has no backlog, so the
// bridge publishes no fence even when its time away is unknown: its start
// costs nothing and shows nothing to the broker's other clients. On a
// frozen clock a fence would hold Connect for ever.
func TestNoFenceWhenTheBrokerKeptNoSession(t *testing.T) {
	t.Parallel()
	b := newAckHoldingBroker(t)
	clk := clocktest.NewFrozen(time.Now())
	cfg, logs := backlogConfig(t, b.url(), "", clk)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := Connect(ctx, cfg, nil)
		if err == nil {
			t.Cleanup(func() { closeClient(t, c) })
		}
		done <- err
	}()
	f := &fenceBroker{t: t, conn: <-b.conn, fences: make(chan struct{}, 1), acked: make(chan uint16, 1), topics: make(chan string, 16)}
	go f.serve()
	for tp := range f.topics {
		if tp == stateTopic+"/fence" {
			t.Fatalf("a fence published although the broker kept no session")
		}
		if tp == stateTopic {
			break // "online": the session is set up
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if w := backlogWarnings(t, logs); len(w) != 0 {
		t.Errorf("warnings %v, want none", w)
	}
}
