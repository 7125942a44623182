package main

import (
	"bufio"
	"context"
	"io"
	"regexp"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/events"
)

// TestEventsBroker: with -events-addr the simulator publishes raised
// events on GA/<key> of its own broker, which the bridge's events package
// reads like the live service's.
func TestEventsBroker(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-key", "evkey", "-events-addr", "127.0.0.1:0", "-event-every", "50ms"}, pw)
		pw.Close()
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	sc := bufio.NewScanner(pr)
	re := regexp.MustCompile(`CLOUD_EVENTS_URL=(tcp://127\.0\.0\.1:\d+)`)
	url := ""
	for url == "" && sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		t.Fatal("no events URL printed")
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()

	got := make(chan events.Event, 16)
	sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer scancel()
	subDone := make(chan error, 1)
	go func() {
		subDone <- events.Subscribe(sctx, events.Config{URL: url, APIKey: "evkey", Logger: zerolog.Nop()}, func(e events.Event) {
			select {
			case got <- e:
			default:
			}
		})
	}()
	select {
	case e := <-got:
		if e.Device == "" || e.Instance == "" || e.Name == "" {
			t.Errorf("event %+v lacks device, instance or name", e)
		}
	case <-sctx.Done():
		t.Fatal("no event within 20 s")
	}
	scancel()
	if err := <-subDone; err != nil {
		t.Errorf("subscribe: %v", err)
	}
}
