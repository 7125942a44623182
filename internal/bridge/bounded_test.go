package bridge

import (
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/topic"
)

// Bounded input: whoever can publish to the broker can send the
// bridge anything; what it answers and logs stays small.

// TestPayloadOverTheLimitIsRefusedUnread: a command over 64 KiB is answered
// with 413, the start of it and its size; nothing reaches the cloud. A
// request is answered on its response topic.
func TestPayloadOverTheLimitIsRefusedUnread(t *testing.T) {
	b, pub, cmd, _ := newTestBridge(t, false)
	pub.take()
	huge := []byte(`{"brightness":` + strings.Repeat("1", 10<<20) + `}`)
	for _, tp := range []string{"/set", "/set/brightness", "/light/set", "/segment/0/set"} {
		b.Handle("c2m/"+lampID+tp, huge, false)
	}
	b.Handle("c2m/nosuch/set", huge, false)
	b.Handle("c2m/bridge/request/health", huge, false)
	msgs := pub.take()
	if len(cmd.reqs) != 0 {
		t.Errorf("%d commands sent", len(cmd.reqs))
	}
	answers := append(errorsOn(t, msgs, lampID), unknownErrors(t, msgs, "nosuch")...)
	if len(answers) != 5 {
		t.Fatalf("%d answers on <id>/error, want 5: %+v", len(answers), msgs)
	}
	for _, e := range answers {
		v, _ := e.Value.(string)
		if e.Code != 413 || !strings.Contains(e.Error, "10485775 bytes, over the 64 KiB") ||
			!strings.HasPrefix(v, `{"brightness":111`) || !strings.HasSuffix(v, "… (10485775 bytes, cut)") || len(v) > 300 {
			t.Errorf("answer %+v", e)
		}
	}
	for _, m := range msgs {
		if len(m.payload) > 1024 {
			t.Errorf("%s: %d bytes", m.topic, len(m.payload))
		}
	}
	if r := on(msgs, "c2m/bridge/response/health"); len(r) != 1 || !strings.Contains(r[0].payload, `"status":"error"`) || !strings.Contains(r[0].payload, "64 KiB") {
		t.Errorf("health request over the limit: %+v", r)
	}
}

// TestRejectedValuesAreClipped: a rejected value under the limit is
// echoed on <id>/error and logged in at most a few hundred bytes, and
// deep nesting is not echoed whole.
func TestRejectedValuesAreClipped(t *testing.T) {
	var logs strings.Builder
	pub, cmd := &fakePub{}, &fakeCmd{}
	l := topic.New("c2m")
	b := newTestBridgeWith(t, Options{Layout: l, Discovery: discovery.Config{Layout: l}, Log: zerolog.New(&logs)}, pub, cmd, &fakeReader{})
	b.Devices([]capability.Device{lamp}, nil, nil)
	pub.take()
	long := strings.Repeat("x", 60<<10)
	deep := strings.Repeat("[", 30000) + strings.Repeat("]", 30000)
	b.Handle("c2m/"+lampID+"/set/lightScene", []byte(long), false)
	b.Handle("c2m/"+lampID+"/set", []byte(`{"colorRgb":"`+long+`"}`), false)
	b.Handle("c2m/"+lampID+"/set/colorRgb", []byte(deep), false)
	b.Handle("c2m/"+lampID+"/set/"+strings.Repeat("i", 5000), []byte("1"), false)
	msgs := pub.take()
	answers := errorsOn(t, msgs, lampID)
	if len(answers) != 4 {
		t.Fatalf("%d answers, want 4: %+v", len(answers), msgs)
	}
	for _, m := range msgs {
		if len(m.payload) > 2048 {
			t.Errorf("%s: %d bytes: %.200s", m.topic, len(m.payload), m.payload)
		}
	}
	for line := range strings.Lines(logs.String()) {
		if len(line) > 2048 {
			t.Errorf("a log line of %d bytes: %.200s", len(line), line)
		}
	}
	if len(cmd.reqs) != 0 {
		t.Errorf("%d commands sent", len(cmd.reqs))
	}
}

// TestUnknownIDAndExtraLevelsAreAnswered: a command for an unknown id is answered
// on bridge/error without its payload and with the id shortened, so no topic is
// made of it; a topic with extra levels is answered with the topic to use.
func TestUnknownIDAndExtraLevelsAreAnswered(t *testing.T) {
	b, pub, cmd, _ := newTestBridge(t, false)
	pub.take()
	long := strings.Repeat("z", 60000)
	b.Handle("c2m/nosuch/set/brightness", []byte("secret-looking-payload"), false)
	b.Handle("c2m/"+lampID+"/set/brightness/x", []byte("40"), false)
	b.Handle("c2m/"+lampID+"/segment/x/set", []byte(`{"state":"ON"}`), false)
	b.Handle("c2m/"+long+"/set", []byte("1"), false)
	msgs := pub.take()
	unknown := unknownErrors(t, msgs, "nosuch")
	if len(unknown) != 1 || unknown[0].Code != 404 || unknown[0].Value != nil || strings.Contains(msgs[0].payload, "secret") {
		t.Errorf("unknown id: %+v", msgs)
	}
	lampErrs := errorsOn(t, msgs, lampID)
	if len(lampErrs) != 2 || lampErrs[0].Code != 400 || !strings.Contains(lampErrs[0].Error, "send the value to c2m/"+lampID+"/set/brightness") ||
		!strings.Contains(lampErrs[1].Error, "must be a number") {
		t.Errorf("extra levels: %+v", lampErrs)
	}
	shortened := unknownErrors(t, msgs, strings.Repeat("z", maxEchoedID)+"… (60000 bytes, cut)")
	if len(shortened) != 1 || shortened[0].Code != 404 {
		t.Errorf("the 60,000-byte id: %+v, want one answer naming it shortened", msgs)
	}
	if len(msgs) != 4 {
		t.Errorf("%d messages, want 4: %+v", len(msgs), msgs)
	}
	for _, m := range msgs {
		if m.topic != "c2m/bridge/error" && m.topic != "c2m/"+lampID+"/error" || len(m.payload) > 2048 {
			t.Errorf("published on %.80s (%d bytes): only the lamp's topics and bridge/error may be", m.topic, len(m.payload))
		}
	}
	if len(cmd.reqs) != 0 {
		t.Errorf("%d commands sent", len(cmd.reqs))
	}
}

// TestRejectionsAreAnsweredAtABoundedRate: a flood of bad commands for one
// device gets a burst of answers and then one summary "N commands
// rejected" per token of the device's budget; good commands go through
// all along, and another device's answers have their own budget.
func TestRejectionsAreAnsweredAtABoundedRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, pub, cmd, _ := newTestBridge(t, false)
		pub.take()
		for i := range 1000 {
			b.Handle("c2m/"+lampID+"/set/brightness", []byte("1000"), false)
			if i == 500 {
				b.Handle("c2m/"+lampID+"/set/brightness", []byte("40"), false)
			}
		}
		b.Handle("c2m/other/set", []byte("1"), false)
		first := pub.take()
		if len(unknownErrors(t, first, "other")) != 1 {
			t.Errorf("the unknown id was not answered at once: its budget is its own")
		}
		answers := errorsOn(t, first, lampID)
		if len(answers) != DefaultRejectBurst {
			t.Fatalf("%d answers at once, want the burst of %d", len(answers), DefaultRejectBurst)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		msgs := pub.take()
		summary := errorsOn(t, msgs, lampID)
		if len(summary) != 1 || summary[0].Rejected != 1000-DefaultRejectBurst || summary[0].Code != 400 ||
			!strings.HasPrefix(summary[0].Error, strconv.Itoa(1000-DefaultRejectBurst)+" commands rejected in a burst") {
			t.Fatalf("after a second: %+v", summary)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := len(pub.take()); n != 0 {
			t.Errorf("%d more messages after the summary", n)
		}
		if len(cmd.reqs) != 1 || !capability.Equal(cmd.reqs[0].Value, int64(40)) {
			t.Errorf("requests %+v; want the good command", cmd.reqs)
		}
	})
}

// TestHeldCommandsAreBounded: before the first device list at most
// heldMax commands wait; the next ones are answered with 503 at once.
func TestHeldCommandsAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, pub, cmd := unlisted(t)
		for i := range heldMax + 5 {
			b.Handle("c2m/"+lampID+"/set/brightness", []byte(strconv.Itoa(1+i%100)), false)
		}
		synctest.Wait()
		refused := unknownErrors(t, pub.take(), lampID) // not listed yet: no device the bridge knows
		if len(refused) != 5 || refused[0].Code != 503 || !strings.Contains(refused[0].Error, "1000 commands already wait") {
			t.Fatalf("answers before the list: %+v", refused)
		}
		b.Devices([]capability.Device{lamp}, nil, nil)
		synctest.Wait()
		if len(cmd.reqs) != heldMax {
			t.Errorf("%d commands applied after the list, want the %d held", len(cmd.reqs), heldMax)
		}
	})
}
