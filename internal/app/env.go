package app

import (
	"context"
	"fmt"

	"cloud2mqtt/internal/bridge"
	"cloud2mqtt/internal/broker"
	"cloud2mqtt/internal/events"
	"cloud2mqtt/internal/mqtt"
	"cloud2mqtt/internal/topic"
)

// environment is what the daemon talks to: the cloud's address and key, the
// broker's URL, and the event source, with whatever Run started for them
// (the embedded broker).
type environment struct {
	baseURL, apiKey, mqttURL string
	events                   func(ctx context.Context, mirror *bridge.Mirror)
	closers                  []func()
}

func (e *environment) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
}

// environment starts what the configuration asks for: with
// MQTT_URL=embedded the embedded broker; the events of CLOUD_EVENTS_URL,
// or Main.Events'.
func (m *Main) environment(ctx context.Context) (*environment, error) {
	cfg := m.Config
	env := &environment{baseURL: cfg.Cloud.BaseURL, apiKey: cfg.Cloud.APIKey.Reveal(), mqttURL: cfg.MQTT.URL}
	if cfg.Embedded() {
		// The embedded broker refuses packets over 64 KiB from anyone but
		// the bridge's own client (whose device list outgrows that).
		id := cfg.MQTT.ClientID
		if id == "" {
			id = mqtt.DefaultClientID(topic.New(cfg.MQTT.BaseTopic).BridgeState())
		}
		b, err := broker.Start(ctx, broker.Options{Addr: cfg.MQTT.Listen, Logger: m.Log,
			MaxPacketSize: broker.DefaultMaxPacketSize, Unlimited: []string{id}})
		if err != nil {
			return nil, fmt.Errorf("app: the embedded broker cannot listen on MQTT_LISTEN=%s: %s; %s",
				cfg.MQTT.Listen, bindError(err), listenHint("MQTT_LISTEN", "127.0.0.1:1884", err))
		}
		env.closers = append(env.closers, func() { _ = b.Close() })
		env.mqttURL = b.URL()
		m.Log.Info().Str("url", b.URL()).Msg("embedded MQTT broker listening")
	}
	switch {
	case m.Events != nil:
		env.events = func(ctx context.Context, mirror *bridge.Mirror) { m.Events(ctx, publishEvent(mirror)) }
	case cfg.Cloud.EventsURL != "":
		env.events = m.cloudEvents(cfg.Cloud.EventsURL, env.apiKey)
	}
	return env, nil
}

// cloudEvents subscribes to the cloud's event broker.
func (m *Main) cloudEvents(url, key string) func(context.Context, *bridge.Mirror) {
	return func(ctx context.Context, mirror *bridge.Mirror) {
		err := events.Subscribe(ctx, events.Config{URL: url, APIKey: key, Logger: m.Log}, publishEvent(mirror))
		if err != nil && ctx.Err() == nil {
			m.Log.Error().Err(err).Msg("cloud events unavailable")
		}
	}
}

// publishEvent publishes a device's event on its <id>/event.
func publishEvent(mirror *bridge.Mirror) func(events.Event) {
	return func(e events.Event) { mirror.Event(e.SKU, e.Device, e.Instance, e.Name, e.Value, e.Message) }
}
