// Package events receives device events from the cloud. The spec leaves the
// subscription out; the live service pushes events from its own MQTT broker
// (TLS, port 8883; user name and password are both the API key; topic
// GA/<API key>) with payloads like
//
//	{"sku":"H7141","device":"AA:BB:…","deviceName":"Humidifier","capabilities":[
//	  {"type":"devices.capabilities.event","instance":"lackWaterEvent",
//	   "state":[{"name":"lack","value":1,"message":"Lack of Water"}]}]}
//
// It knows nothing of the bridge's own broker or topics.
package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/mqtt"
)

// Event is one reported event state of one device.
type Event struct {
	SKU, Device, DeviceName string
	Instance                string // e.g. lackWaterEvent
	Name                    string // the eventState option's name, e.g. lack
	Value                   any    // its value, normalised
	Message                 string // its message, e.g. Lack of Water
}

// Parse decodes one pushed payload into its events. What it cannot read yields
// no event rather than an error, so that a malformed push cannot stop the stream.
func Parse(payload []byte) []Event {
	var msg struct {
		SKU          string `json:"sku"`
		Device       string `json:"device"`
		DeviceName   string `json:"deviceName"`
		Capabilities []struct {
			Type     string          `json:"type"`
			Instance string          `json:"instance"`
			State    json.RawMessage `json:"state"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(payload, &msg); err != nil || msg.Device == "" {
		return nil
	}
	var out []Event
	for _, c := range msg.Capabilities {
		if t := capability.NormalizeType(c.Type); t != capability.TypeEvent && t != "" {
			continue
		}
		// The state is a list of options; accept a single object as well.
		var states []struct {
			Name    string          `json:"name"`
			Value   json.RawMessage `json:"value"`
			Message string          `json:"message"`
		}
		if err := json.Unmarshal(c.State, &states); err != nil {
			var one struct {
				Name    string          `json:"name"`
				Value   json.RawMessage `json:"value"`
				Message string          `json:"message"`
			}
			if json.Unmarshal(c.State, &one) != nil {
				continue
			}
			states = append(states, one)
		}
		for _, s := range states {
			var v any
			if len(s.Value) > 0 {
				v, _ = capability.Normalize(s.Value)
			}
			name := s.Name
			if name == "" {
				name = fmt.Sprint(v)
			}
			out = append(out, Event{SKU: msg.SKU, Device: msg.Device, DeviceName: msg.DeviceName,
				Instance: c.Instance, Name: name, Value: v, Message: s.Message})
		}
	}
	return out
}

// Config is how to reach the cloud's event broker.
type Config struct {
	URL    string // CLOUD_EVENTS_URL, e.g. mqtts://host:8883
	APIKey string // user name, password and topic suffix; never logged
	// Logger is the daemon's; Subscribe's lines say component=events, the MQTT
	// client's component=mqtt with setting=CLOUD_EVENTS_URL.
	Logger zerolog.Logger
}

// Topic is the topic the service publishes an account's events on.
func Topic(apiKey string) string { return "GA/" + apiKey }

// Subscribe connects to the event broker and calls handle for every event
// until ctx ends. Reconnection is the MQTT client's; handle must not block.
func Subscribe(ctx context.Context, cfg Config, handle func(Event)) error {
	if strings.TrimSpace(cfg.APIKey) == "" {
		return fmt.Errorf("events: CLOUD_EVENTS_URL is set but there is no API key to log in with: set CLOUD_API_KEY")
	}
	log := cfg.Logger.With().Str("component", "events").Logger()
	c, err := mqtt.Connect(ctx, mqtt.Config{
		URL: cfg.URL, Username: cfg.APIKey, Password: cfg.APIKey,
		ClientID: mqtt.DefaultClientID("events " + cfg.URL), Logger: cfg.Logger.With().Str("setting", "CLOUD_EVENTS_URL").Logger(),
	}, nil)
	if err != nil {
		return redact(fmt.Errorf("events: connect to CLOUD_EVENTS_URL: %w", err), cfg.APIKey)
	}
	defer c.Close(context.Background())
	err = c.Subscribe(Topic(cfg.APIKey), 1, func(_ string, payload []byte, _ bool) {
		evs := Parse(payload)
		if len(evs) == 0 {
			log.Warn().Int("bytes", len(payload)).Msg("event payload not understood; ignored")
		}
		for _, e := range evs {
			handle(e)
		}
	})
	if err != nil {
		// The topic holds the API key; the error quotes the topic.
		return redact(fmt.Errorf("events: subscribe to the account's event topic: %w", err), cfg.APIKey)
	}
	log.Info().Msg("subscribed to cloud events")
	<-ctx.Done()
	return nil
}

// redact removes the API key from an error's message (the user name, the
// password and the topic of the event broker are all the key).
func redact(err error, key string) error {
	if err == nil || key == "" || !strings.Contains(err.Error(), key) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), key, "***"))
}
