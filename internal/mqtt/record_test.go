package mqtt

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/rs/zerolog"

	"cloud2mqtt/internal/mqtttest"
	"cloud2mqtt/internal/statedir"
)

// TestEachStateDirectoryHasItsOwnClientID: the client id is random,
// made once and kept in the state directory, so that nothing another
// client may know (host, base topic) derives it; another state directory
// (a second bridge) has another; MQTT_CLIENT_ID still wins; without a
// state directory each run has its own; a damaged record gives a new id,
// said in a warning, and keeps it.
func TestEachStateDirectoryHasItsOwnClientID(t *testing.T) {
	t.Parallel()
	a, b := statedir.Dir(t.TempDir()), statedir.Dir(t.TempDir())
	nop := zerolog.Nop()
	idA, idB := OpenRecord(a, nop).ClientID(""), OpenRecord(b, nop).ClientID("")
	shape := regexp.MustCompile(`^cloud2mqtt-[0-9a-f]{12}$`)
	for _, id := range []string{idA, idB} {
		if !shape.MatchString(id) {
			t.Errorf("client id %q, want cloud2mqtt- and 12 hex digits (23 characters, which every broker must accept)", id)
		}
		if id == DefaultClientID(stateTopic) {
			t.Errorf("client id %q is the one derived from the host and the state topic", id)
		}
	}
	if idA == idB {
		t.Errorf("two state directories on one host, one client id %s", idA)
	}
	if again := OpenRecord(a, nop).ClientID(""); again != idA {
		t.Errorf("the id changed across a restart: %s, then %s", idA, again)
	}
	if got := OpenRecord(a, nop).ClientID("mine"); got != "mine" {
		t.Errorf("with MQTT_CLIENT_ID=mine the id is %q", got)
	}
	r1, r2 := OpenRecord("", nop), OpenRecord("", nop)
	if r1.ClientID("") == r2.ClientID("") || !r1.ephemeral(r1.ClientID("")) || OpenRecord(a, nop).ephemeral(idA) {
		t.Errorf("without a state directory: ids %s and %s, want one per run, ended at Close", r1.ClientID(""), r2.ClientID(""))
	}

	if err := os.WriteFile(filepath.Join(string(a), recordFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &mqtttest.SyncBuffer{}
	fresh := OpenRecord(a, zerolog.New(logs)).ClientID("")
	if fresh == idA || !shape.MatchString(fresh) || !strings.Contains(logs.String(), `"level":"warn"`) {
		t.Errorf("a damaged record: id %s (was %s), log %s; want a new id and a warning", fresh, idA, logs)
	}
	if again := OpenRecord(a, nop).ClientID(""); again != fresh {
		t.Errorf("the new id %s was not kept: %s", fresh, again)
	}
}

// TestBridgesWithTheirOwnStateDirectoriesNeverMeet: two bridges on one
// host with the same base topic, each with its own state directory, are
// connected to one broker at once and neither takes the other's id. With
// the id of before (a hash of the host and the base topic) they had one id
// and knocked each other off.
func TestBridgesWithTheirOwnStateDirectoriesNeverMeet(t *testing.T) {
	t.Parallel()
	b := mqtttest.Start(t)
	var clients []*Client
	for range 2 {
		cfg, _ := testConfig(t, b.URL())
		cfg.ClientID = ""
		cfg.Record = OpenRecord(statedir.Dir(t.TempDir()), zerolog.Nop())
		cfg.QueuedMaxAge = 2 * time.Minute
		clients = append(clients, connect(t, cfg, nil))
	}
	if clients[0].ClientID() == clients[1].ClientID() {
		t.Fatalf("ids %s and %s", clients[0].ClientID(), clients[1].ClientID())
	}
	// Round trips on both: each connection stays up through them.
	for i, c := range clients {
		got := make(sink, 8)
		topic := "c2m/both/" + string(rune('a'+i))
		if err := c.Subscribe(topic, 1, got.handler); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			if err := c.Publish(topic, []byte("x"), false, 1); err != nil {
				t.Fatal(err)
			}
			got.next(t)
		}
	}
	for i, c := range clients {
		if s := c.Stats(); s.Reconnects != 0 || s.Conflicts != 0 || !s.Connected {
			t.Errorf("bridge %d: %+v, want connected once, never taken over", i, s)
		}
	}
}

// TestRunOnlyIDEndsItsSession: without a state directory the client id is
// this run's only, so Close asks the broker to forget its session (a
// connection with clean session on): left there, the session would keep
// collecting what is published to the bridge's topics, for ever by
// mosquitto's default. An id kept in a state directory keeps its session.
func TestRunOnlyIDEndsItsSession(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, kind mqtttest.Kind) {
		b := mqtttest.Start(t, mqtttest.WithKind(kind))
		for _, kept := range []bool{false, true} {
			var dir statedir.Dir
			if kept {
				dir = statedir.Dir(t.TempDir())
			}
			cfg, _ := testConfig(t, b.URL())
			cfg.ClientID = ""
			cfg.Record, cfg.QueuedMaxAge = OpenRecord(dir, zerolog.Nop()), 2*time.Minute
			c := connect(t, cfg, func(c *Client) {
				if err := c.Subscribe("c2m/+/set", 1, func(string, []byte, bool) {}); err != nil {
					t.Error(err)
				}
			})
			closeClient(t, c)
			pc := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID(c.ClientID()).
				SetCleanSession(false).SetProtocolVersion(4))
			tok := pc.Connect()
			if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
				t.Fatalf("connect with the bridge's id: %v", tok.Error())
			}
			if present := tok.(*paho.ConnectToken).SessionPresent(); present != kept {
				t.Errorf("state directory %v: the broker has the session after Close: %v, want %v", kept, present, kept)
			}
			pc.Disconnect(50)
		}
	})
}
