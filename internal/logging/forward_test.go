package logging

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"
)

type collected struct {
	mu   sync.Mutex
	msgs []map[string]any
}

func (c *collected) publish(p []byte) {
	var m map[string]any
	if err := json.Unmarshal(p, &m); err != nil {
		panic(err)
	}
	c.mu.Lock()
	c.msgs = append(c.msgs, m)
	c.mu.Unlock()
}

func (c *collected) get() []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]map[string]any(nil), c.msgs...)
}

func startForwarder(t *testing.T, secrets ...string) (zerolog.Logger, *collected) {
	f := NewForwarder()
	c := &collected{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx, c.publish) }()
	t.Cleanup(func() { cancel(); <-done })
	return zerolog.New(Redact(f, secrets...)).With().Timestamp().Logger(), c
}

func TestForwarderPassesWarningsAndErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, c := startForwarder(t, "s3cr3t-key")
		log.Debug().Msg("debug")
		log.Info().Msg("info")
		log.Warn().Str("device", "H6008/AA").Msg("device unreachable")
		log.Error().Err(errorString("cloud refused s3cr3t-key")).Msg("the cloud refuses the API key")
		synctest.Wait()
		got := c.get()
		if len(got) != 2 {
			t.Fatalf("forwarded %v, want the warning and the error only", got)
		}
		if got[0]["level"] != "warning" || got[0]["message"] != "device unreachable" || got[0]["device"] != "H6008/AA" {
			t.Errorf("warning: %v", got[0])
		}
		if got[1]["level"] != "error" || got[1]["message"] != "the cloud refuses the API key" {
			t.Errorf("error: %v", got[1])
		}
		if s := got[1]["error"].(string); strings.Contains(s, "s3cr3t") {
			t.Errorf("a secret was forwarded: %q", s)
		}
	})
}

// TestForwarderLimitsBursts: a fault logging in a loop sends at most the
// burst at once, then PerSecond a second, and says how many it dropped.
func TestForwarderLimitsBursts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, c := startForwarder(t)
		for i := range 1000 {
			log.Error().Int("i", i).Msg("fault")
		}
		synctest.Wait()
		if n := len(c.get()); n != Burst {
			t.Fatalf("%d forwarded of a burst of 1000, want %d", n, Burst)
		}
		time.Sleep(time.Second)
		log.Error().Msg("after a second")
		synctest.Wait()
		got := c.get()
		if last := got[len(got)-1]; last["message"] != "after a second" {
			t.Errorf("the line a second later was not forwarded: %v", last)
		}
		dropped := 0.0
		for _, m := range got {
			d, _ := m["dropped"].(float64)
			dropped += d
		}
		if dropped != 1000-Burst {
			t.Errorf("the forwarded lines say %v dropped, want %d", dropped, 1000-Burst)
		}
	})
}

type errorString string

func (e errorString) Error() string { return string(e) }
