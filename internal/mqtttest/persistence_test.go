//go:build mosquitto

package mqtttest

// Needs mosquitto (the embedded broker has no persistence): -tags mosquitto,
// which .ci/run sets.

import (
	"testing"
	"time"
)

// TestPersistenceKeepsSessionsAcrossRestart: with persistence, a message
// queued for a persistent session that is away survives a kill, once a
// later QoS 1 message (the fence) was acknowledged.
func TestPersistenceKeepsSessionsAcrossRestart(t *testing.T) {
	if MosquittoPath() == "" {
		t.Fatal("mosquitto is not installed (Debian: apt-get install mosquitto); the mosquitto tag needs it")
	}
	b := Start(t, WithPersistence())
	away := NewClient(t, b.URL(), ClientOptions{ClientID: "away", Persistent: true})
	away.Subscribe("q/#", 1)
	away.Close()
	pub := NewClient(t, b.URL(), ClientOptions{})
	pub.Publish("q/x", "queued", false, 1)
	pub.Publish("q/retained", "kept", true, 1)
	pub.Publish("fence", "", false, 1)
	b.Restart()
	back := NewClient(t, b.URL(), ClientOptions{ClientID: "away", Persistent: true})
	back.WaitFor("q/x", "queued", 5*time.Second)
	fresh := NewClient(t, b.URL(), ClientOptions{})
	fresh.Subscribe("q/retained", 1)
	fresh.WaitFor("q/retained", "kept", 5*time.Second)
}
