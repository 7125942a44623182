package bridge

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/topic"
)

// Where the broker lets a spoof through: another client retains bridge/state or
// a device's availability "offline", and the bridge publishes the truth again at once.

const (
	lampAvail   = "c2m/" + lampID + "/availability"
	bridgeState = "c2m/bridge/state"
)

func TestOverwrittenStateAndAvailabilityArePublishedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, pub, _, _ := newTestBridge(t, false)
		b.State(lamp, true, nil)
		if a := on(pub.take(), lampAvail); len(a) != 1 || a[0].payload != "online" {
			t.Fatalf("availability %+v", a)
		}
		if !slices.Contains(b.Subscriptions(), "c2m/+/availability") || !slices.Contains(b.Subscriptions(), bridgeState) {
			t.Fatalf("subscriptions %v: the bridge does not watch its own retained topics", b.Subscriptions())
		}
		for _, c := range []struct{ topic, spoof, truth string }{
			{lampAvail, "offline", "online"},
			{lampAvail, "", "online"}, // deleted
			{bridgeState, "offline", "online"},
		} {
			time.Sleep(CorrectEvery) // each at once: no round is due
			b.Handle(c.topic, []byte(c.spoof), false)
			if got := pub.take(); len(got) != 1 || got[0] != (published{c.topic, c.truth, true}) {
				t.Errorf("%s overwritten with %q: published %+v, want %q retained at once", c.topic, c.spoof, got, c.truth)
			}
		}
		// Its own echoes, a retained delivery (on subscribing: every connect
		// republishes), topics it has nothing to say on: nothing.
		time.Sleep(CorrectEvery)
		b.Handle(lampAvail, []byte("online"), false)
		b.Handle(bridgeState, []byte("online"), false)
		b.Handle(lampAvail, []byte("offline"), true)
		b.Handle("c2m/nosuch/availability", []byte("offline"), false)
		b.Handle("c2m/"+lampID+"/state", []byte(`{}`), false)
		time.Sleep(10 * CorrectEvery)
		synctest.Wait()
		if got := pub.take(); len(got) != 0 {
			t.Errorf("published %+v for echoes, a retained delivery and foreign topics", got)
		}
	})
}

// TestNothingToKeepBeforeTheFirstConnectOrRead: not connected, or a device
// whose availability is not known yet, has no truth to publish.
func TestNothingToKeepBeforeTheFirstConnectOrRead(t *testing.T) {
	pub := &fakePub{}
	l := topic.New("c2m")
	m := NewMirror(Options{Layout: l, Discovery: discovery.Config{Layout: l}, Log: zerolog.Nop()})
	m.observed(bridgeState, []byte("offline"))
	b := newTestBridgeWith(t, Options{Layout: l, Discovery: discovery.Config{Layout: l}, Log: zerolog.Nop()}, pub, &fakeCmd{}, &fakeReader{})
	b.Devices([]capability.Device{lamp}, nil, nil)
	pub.take()
	b.Handle(lampAvail, []byte("offline"), false)
	if got := pub.take(); len(got) != 0 {
		t.Errorf("published %+v", got)
	}
}

// TestOwnOfflineAtCloseIsNoOverwrite: the echo of the bridge's own
// "offline" while its connection closes (publishes refused) is neither
// corrected nor reported as another client's overwrite.
func TestOwnOfflineAtCloseIsNoOverwrite(t *testing.T) {
	var logs bytes.Buffer
	pub := &failingPub{fail: true}
	l := topic.New("c2m")
	b := newTestBridgeWith(t, Options{Layout: l, Discovery: discovery.Config{Layout: l}, Log: zerolog.New(&logs)}, pub, &fakeCmd{}, &fakeReader{})
	b.Handle(bridgeState, []byte("offline"), false)
	if strings.Contains(logs.String(), "overwrote") {
		t.Errorf("the bridge's own offline at close was logged as an overwrite: %s", logs.String())
	}
	// Once publishes go out again, an overwrite is corrected and said.
	pub.mu.Lock()
	pub.fail = false
	pub.mu.Unlock()
	b.m.mu.Lock()
	b.m.keep.next = time.Time{} // no round pending
	b.m.mu.Unlock()
	b.Handle(bridgeState, []byte("offline"), false)
	if got := pub.take(); len(got) != 1 || got[0] != (published{bridgeState, "online", true}) || !strings.Contains(logs.String(), "overwrote") {
		t.Errorf("an overwrite while connected: published %+v, log %s", got, logs.String())
	}
}

// TestAFloodOfOverwritesIsBounded: thousands of spoofs a second on 150
// topics make at most one correction per topic per CorrectEvery and at
// most maxCorrections a round, never more messages than spoofs; when the
// flood stops, every topic ends true within a round or two.
func TestAFloodOfOverwritesIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pub := &fakePub{}
		l := topic.New("c2m")
		b := newTestBridgeWith(t, Options{Layout: l, Discovery: discovery.Config{Layout: l}, Log: zerolog.Nop()}, pub, &fakeCmd{}, &fakeReader{})
		var devs []capability.Device
		for i := range 149 {
			d := lamp
			d.Device = fmt.Sprintf("AA:BB:CC:DD:EE:FF:%02X:%02X", i/256, i%256)
			devs = append(devs, d)
		}
		b.Devices(devs, nil, nil)
		topics := []string{bridgeState}
		for _, d := range devs {
			b.State(d, true, nil)
			topics = append(topics, l.Availability(topic.DeviceID(d.SKU, d.Device)))
		}
		pub.take()

		const spoofs, every = 30000, time.Millisecond // 30 s of 1,000 spoofs a second
		start := time.Now()
		for i := range spoofs {
			b.Handle(topics[i%len(topics)], []byte("offline"), false)
			time.Sleep(every)
		}
		flood := time.Since(start)
		time.Sleep(3 * CorrectEvery)
		synctest.Wait()
		msgs := pub.take()
		rounds := int(flood/CorrectEvery) + 3
		if len(msgs) > rounds*maxCorrections || len(msgs) > spoofs {
			t.Errorf("%d corrections for %d spoofs over %s: more than %d a round", len(msgs), spoofs, flood, maxCorrections)
		}
		per := map[string]int{}
		last := map[string]string{}
		for _, m := range msgs {
			per[m.topic]++
			last[m.topic] = m.payload
		}
		for _, tp := range topics {
			if per[tp] > rounds {
				t.Errorf("%s corrected %d times in %d rounds", tp, per[tp], rounds)
			}
			if last[tp] != "online" {
				t.Errorf("%s: the last correction %q, want online", tp, last[tp])
			}
		}
		// And the corrections' echoes change nothing.
		for _, m := range msgs {
			b.Handle(m.topic, []byte(m.payload), false)
		}
		time.Sleep(3 * CorrectEvery)
		synctest.Wait()
		if n := len(pub.take()); n != 0 {
			t.Errorf("%d messages for the echoes of the corrections", n)
		}
	})
}

// TestAStaleEchoCostsOneMessage: the echo of an availability the bridge
// published before a newer one is at most one needless republish of the
// truth, and the echoes after it nothing: no loop.
func TestAStaleEchoCostsOneMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, pub, _, _ := newTestBridge(t, false)
		b.State(lamp, true, nil)
		b.State(lamp, false, nil)
		b.State(lamp, true, nil)
		sent := on(pub.take(), lampAvail)
		if len(sent) != 3 {
			t.Fatalf("availability %+v", sent)
		}
		for range 5 {
			for _, m := range sent {
				b.Handle(m.topic, []byte(m.payload), false)
			}
			more := on(pub.take(), lampAvail)
			if len(more) > 1 || len(more) == 1 && more[0].payload != "online" {
				t.Fatalf("echoes: published %+v", more)
			}
			sent = more
			time.Sleep(2 * CorrectEvery)
			synctest.Wait()
		}
		if len(sent) != 0 {
			t.Errorf("still publishing after five rounds of echoes: %+v", sent)
		}
	})
}
