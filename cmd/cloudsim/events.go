package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/broker"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/events"
	"cloud2mqtt/internal/mqtt"
)

// serveEvents plays the service's event broker: an embedded broker that
// takes the API key as user name and password, and every raised event
// published on GA/<key>. It returns a function that stops it all.
func serveEvents(ctx context.Context, sim *cloudsim.Sim, addr, key string, every time.Duration, stdout io.Writer) (func(), error) {
	if every <= 0 {
		return nil, fmt.Errorf("cloudsim: -event-every must be positive")
	}
	b, err := broker.Start(ctx, broker.Options{Addr: addr, Users: map[string]string{key: key}, Logger: zerolog.Nop()})
	if err != nil {
		return nil, fmt.Errorf("cloudsim: start the events broker: %w; choose another -events-addr", err)
	}
	pub, err := mqtt.Connect(ctx, mqtt.Config{URL: b.URL(), Username: key, Password: key,
		ClientID: "cloudsim-events", Logger: zerolog.Nop()}, nil)
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("cloudsim: connect to the events broker: %w", err)
	}
	remove := sim.OnEvent(func(e cloudsim.Event) {
		_ = pub.Publish(events.Topic(key), e.Payload, false, 1)
	})
	fmt.Fprintf(stdout, "cloudsim: events at CLOUD_EVENTS_URL=%s, one every %s\n", b.URL(), config.FormatDuration(every))

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sim.RaiseEventsEvery(ctx, every, nil)
	}()
	return func() {
		cancel()
		wg.Wait()
		remove()
		_ = pub.Close(context.Background())
		_ = b.Close()
	}, nil
}
