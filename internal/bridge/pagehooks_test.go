package bridge

import (
	"errors"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/topic"
)

// failingReader refuses every read on request, as a 429 would.
type failingReader struct{ fakeReader }

func (r *failingReader) ReadNow(_, _ string, done func(error)) error {
	done(errors.New("cloud: state: 429 too many requests"))
	return nil
}

// TestEmptyCommandClearsNothing: the empty message by which a user clears
// a retained command (mosquitto_pub -r -n -t <topic>, as the bridge's
// warning tells them) arrives live on the command topic; it is neither a
// command nor an error.
func TestEmptyCommandClearsNothing(t *testing.T) {
	b, pub, cmd, _ := newTestBridge(t, false)
	var answered []string
	b.opt.OnError = func(_ capability.Key, instance string, _ bool, msg string) {
		answered = append(answered, instance+": "+msg)
	}
	pub.take()
	for _, tp := range []string{"/set", "/set/brightness", "/light/set", "/segment/0/set"} {
		b.Handle("c2m/"+lampID+tp, nil, false)
	}
	if got := pub.take(); len(got) != 0 || len(cmd.reqs) != 0 || len(answered) != 0 {
		t.Errorf("an empty command: published %+v, queued %v, errors %q; want nothing", got, cmd.reqs, answered)
	}
	b.Handle("c2m/"+lampID+"/set/brightness", []byte(" "), false)
	if len(on(pub.take(), "c2m/"+lampID+"/error")) != 1 {
		t.Error("a blank (not empty) value is not refused")
	}
}

// TestErrorHookSaysWhatFailed: the page hears each answer on <id>/error
// with the instance it names and whether it answers a read on request,
// so that a success of the same kind clears it.
func TestErrorHookSaysWhatFailed(t *testing.T) {
	pub, cmd := &fakePub{}, &fakeCmd{}
	l := topic.New("c2m")
	type heard struct {
		instance string
		read     bool
	}
	var mu sync.Mutex
	var got []heard
	opt := Options{Layout: l, Discovery: discovery.Config{Layout: l, Version: "test"}, Log: zerolog.Nop(),
		OnError: func(_ capability.Key, instance string, read bool, _ string) {
			mu.Lock()
			got = append(got, heard{instance, read})
			mu.Unlock()
		}}
	b := newTestBridgeWith(t, opt, pub, cmd, &failingReader{})
	b.Devices([]capability.Device{lamp}, nil, nil)
	b.Handle("c2m/"+lampID+"/set/brightness", []byte("250"), false)
	b.Handle("c2m/"+lampID+"/get", nil, false)
	b.Handle("c2m/"+lampID+"/set", []byte("[1]"), false)
	want := []heard{{"brightness", false}, {"", true}, {"", false}}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("heard %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("answer %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
