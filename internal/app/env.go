package app

import (
	"context"
	"fmt"

	"cloud2mqtt/internal/bridge"
	"cloud2mqtt/internal/broker"
	"cloud2mqtt/internal/events"
	"cloud2mqtt/internal/mqtt"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/statedir"
	"cloud2mqtt/internal/topic"
)

// environment is what the daemon talks to (cloud, broker with the bridge's
// client id, event source) and whatever Run started for them, such as the
// embedded broker.
type environment struct {
	baseURL, apiKey, mqttURL string
	mqttUser, mqttPassword   string
	mqttRecord               *mqtt.Record
	events                   func(ctx context.Context, deliver func(events.Event))
	closers                  []func()
}

func (e *environment) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
}

// environment starts what the configuration asks for: the embedded broker when
// MQTT_URL=embedded, and the events of CLOUD_EVENTS_URL or Main.Events.
func (m *Main) environment(ctx context.Context) (*environment, error) {
	cfg := m.Config
	env := &environment{baseURL: cfg.Cloud.BaseURL, apiKey: cfg.Cloud.APIKey.Reveal(), mqttURL: cfg.MQTT.URL,
		mqttUser: cfg.MQTT.Username, mqttPassword: cfg.MQTT.Password.Reveal(),
		mqttRecord: mqtt.OpenRecord(statedir.Dir(cfg.State.Dir), m.Log.With().Str("component", "mqtt").Logger())}
	if cfg.Embedded() {
		// The embedded broker reserves the bridge's topics (all but the commands) to
		// the bridge's own login, and lets only it send packets over 64 KiB.
		layout := topic.New(cfg.MQTT.BaseTopic)
		owner := &broker.Owner{ClientID: env.mqttRecord.ClientID(cfg.MQTT.ClientID), Reserved: []string{layout.Reserved()}, Open: layout.Inbound()}
		b, err := broker.Start(ctx, broker.Options{Addr: cfg.MQTT.Listen, Logger: m.Log,
			MaxPacketSize: broker.DefaultMaxPacketSize, Owner: owner})
		if err != nil {
			return nil, fmt.Errorf("app: the embedded broker cannot listen on MQTT_LISTEN=%s: %s; %s",
				cfg.MQTT.Listen, bindError(err), listenHint("MQTT_LISTEN", "127.0.0.1:1884", err))
		}
		env.closers = append(env.closers, func() { _ = b.Close() })
		env.mqttURL = b.URL()
		env.mqttUser, env.mqttPassword = b.OwnerLogin()
		m.Log.Info().Str("url", b.URL()).Msg("embedded MQTT broker listening")
	}
	switch {
	case m.Events != nil:
		env.events = m.Events
	case cfg.Cloud.EventsURL != "":
		env.events = m.cloudEvents(cfg.Cloud.EventsURL, env.apiKey)
	}
	return env, nil
}

// cloudEvents subscribes to the cloud's event broker.
func (m *Main) cloudEvents(url, key string) func(context.Context, func(events.Event)) {
	return func(ctx context.Context, deliver func(events.Event)) {
		err := events.Subscribe(ctx, events.Config{URL: url, APIKey: key, Logger: m.Log}, deliver)
		if err != nil && ctx.Err() == nil {
			m.Log.Error().Err(err).Msg("cloud events unavailable")
		}
	}
}

// publishEvent publishes a device's event on its <id>/event; the poller
// counts it as the device's activity.
func publishEvent(mirror *bridge.Mirror, poll *poller.Poller) func(events.Event) {
	return func(e events.Event) {
		mirror.Event(e.SKU, e.Device, e.Instance, e.Name, e.Value, e.Message)
		poll.Event(e.SKU, e.Device)
	}
}
