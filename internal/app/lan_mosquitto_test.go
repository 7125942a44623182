//go:build mosquitto

package app_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/lansim"
	"cloud2mqtt/internal/mqtttest"
)

// TestLocalControlFigures measures local control end to end through mosquitto:
// command → datagram at the simulated light → confirmed state on MQTT, and a
// change at the light → MQTT. It logs the figures and asserts only that every
// command arrived as a datagram and none went to the cloud.
//
//	go test -tags mosquitto -run TestLocalControlFigures -count=1 -v ./internal/app
func TestLocalControlFigures(t *testing.T) {
	if mqtttest.MosquittoPath() == "" {
		t.Fatal("mosquitto is not installed (Debian: apt-get install mosquitto); the mosquitto tag needs it")
	}
	h := startLANHarness(t, nil)
	if h.broker.Kind() != mqtttest.Mosquitto {
		t.Fatalf("broker %v, want mosquitto", h.broker.Kind())
	}
	h.waitConnection(lanQuietLight, "local")
	id := h.ids[lanQuietLight]
	stateTopic := h.stateTopic(lanQuietLight)

	var mu sync.Mutex
	datagram := map[int]time.Time{} // brightness → when the light took it in
	state := map[int]time.Time{}    // brightness → when MQTT showed it
	h.lan.OnReceive(func(dev string, r lansim.Received) {
		if dev == lanQuietLight && r.Request.Cmd == lan.CmdBrightness {
			mu.Lock()
			if _, ok := datagram[r.Request.Command.Value]; !ok {
				datagram[r.Request.Command.Value] = r.At
			}
			mu.Unlock()
		}
	})
	got := make(chan int, 16)
	opts := paho.NewClientOptions().AddBroker(h.broker.URL()).SetClientID("figures-" + t.Name()).SetOrderMatters(false)
	c := paho.NewClient(opts)
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	defer c.Disconnect(100)
	c.Subscribe(stateTopic, 0, func(_ paho.Client, m paho.Message) {
		at := time.Now()
		var s struct {
			Brightness int `json:"brightness"`
		}
		if json.Unmarshal(m.Payload(), &s) == nil {
			mu.Lock()
			if _, ok := state[s.Brightness]; !ok {
				state[s.Brightness] = at
			}
			mu.Unlock()
			select {
			case got <- s.Brightness:
			default:
			}
		}
	}).Wait()

	h.sim.ResetLog()
	const n = 98 // brightness 2…99, each a new value
	sent := map[int]time.Time{}
	for v := 2; v < 2+n; v++ {
		// Commands a user sends are spaced; 110 ms keeps them within
		// the light's pace (a burst of 4 datagrams, then one per 50 ms:
		// each command is its datagram and a status request).
		time.Sleep(110 * time.Millisecond)
		sent[v] = time.Now()
		c.Publish("cloud2mqtt/"+id+"/set/brightness", 1, false, fmt.Sprint(v))
		deadline := time.After(5 * time.Second)
	wait:
		for {
			select {
			case b := <-got:
				if b == v {
					break wait
				}
			case <-deadline:
				t.Fatalf("brightness %d not confirmed on MQTT within 5 s", v)
			}
		}
	}
	var toDatagram, toState []time.Duration
	mu.Lock()
	for v, t0 := range sent {
		if at, ok := datagram[v]; ok {
			toDatagram = append(toDatagram, at.Sub(t0))
		}
		if at, ok := state[v]; ok {
			toState = append(toState, at.Sub(t0))
		}
	}
	mu.Unlock()
	if len(toDatagram) != n {
		t.Errorf("%d of %d commands arrived as datagrams", len(toDatagram), n)
	}
	if k, _ := cloudRequests(h.sim, cloud.EndpointControl, lanQuietLight); k != 0 {
		t.Errorf("%d cloud control requests for the local light", k)
	}

	// A change at the light → MQTT, with LAN_POLL_INTERVAL=1s.
	var toMQTT []time.Duration
	for i := range 10 {
		v := 10 + i
		// Spaced unevenly, so the changes fall at different points
		// of the poll's period.
		time.Sleep(time.Duration(300+97*i) * time.Millisecond)
		t0 := time.Now()
		if err := h.lan.Switch(lanQuietLight, func(s *lan.Status) { s.Brightness, s.HasBrightness = v, true }); err != nil {
			t.Fatal(err)
		}
		h.watch.waitJSON(5*time.Second, stateTopic, func(m map[string]any) bool { return m["brightness"] == float64(v) })
		toMQTT = append(toMQTT, time.Since(t0))
	}
	t.Logf("GOMAXPROCS %d, NumCPU %d, broker %v; %d commands spaced 110 ms", runtime.GOMAXPROCS(0), runtime.NumCPU(), h.broker.Kind(), n)
	t.Logf("MQTT command → datagram at the light: %s", pcts(toDatagram))
	t.Logf("MQTT command → confirmed state on MQTT: %s", pcts(toState))
	t.Logf("change at the light → MQTT (LAN_POLL_INTERVAL=1s): %s", pcts(toMQTT))
}

// pcts is p50, p99 and max of ds.
func pcts(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	slices.Sort(ds)
	at := func(p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
	r := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
	return fmt.Sprintf("p50 %s, p90 %s, p99 %s, max %s (n=%d)", r(at(0.50)), r(at(0.90)), r(at(0.99)), r(ds[len(ds)-1]), len(ds))
}
