// Package discovery maps the cloud's capability definitions onto Home
// Assistant's MQTT discovery: one retained config message per entity, the
// Home Assistant specific state projection of lights (JSON schema), and the
// decoding of Home Assistant's light commands into (instance, value) pairs.
//
// It is pure mapping: it knows the topic layout (internal/topic) and the
// capability model (internal/capability) but no broker, no goroutines and
// no state of its own. The bridge's Mirror calls Configs (BridgeConfigs for
// the bridge's own device) whenever a definition changes and publishes the
// configs that changed, with an empty retained payload for each that went
// away; it projects LightState after every state change and hands
// DecodeLight/DecodeSegment the payloads Home Assistant sends.
//
// Entities read the device's retained state object (<base>/<id>/state, keyed
// by instance, values in cloud form) with value templates, and command
// through <base>/<id>/set/<instance> with plain values, reshaped by command
// templates where Home Assistant's payload is not the cloud's (climate modes,
// fan percentages, work modes), or through <base>/<id>/set with a partial
// struct (music auto colour and colour). Only lights use their own state and
// command topics (<base>/<id>/light, <base>/<id>/light/set), because Home
// Assistant's JSON light schema wants one object with all of a light's state.
//
// The bridge is operated from Home Assistant too: its own device and every
// device carry controls that read <base>/bridge/info (BridgeInfo) or
// <base>/bridge/stats (BridgeStats) and send requests on
// <base>/bridge/request/<action>.
package discovery

import (
	"bytes"
	"encoding/json"
	"strings"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/topic"
)

// DefaultPrefix is Home Assistant's default discovery prefix.
const DefaultPrefix = "homeassistant"

// DefaultManufacturer names the maker of the devices in Home Assistant's
// device registry; the SKUs the cloud reports are that vendor's models.
const DefaultManufacturer = "Govee"

// Config is what the discovery payloads depend on besides the devices.
type Config struct {
	// Prefix is Home Assistant's discovery prefix (default "homeassistant").
	Prefix string
	// Layout is the bridge's topic layout (zero value: topic.New("")).
	Layout topic.Layout
	// Version is the bridge's version, shown as the origin's sw_version and
	// the bridge device's software version.
	Version string
	// BridgeID is the bridge's own device id in Home Assistant, the
	// via_device of every device (default "<base>_bridge", so two bridges
	// with different base topics never share a device).
	BridgeID string
	// Manufacturer of the devices (default DefaultManufacturer).
	Manufacturer string
	// SupportURL is the origin's support_url; omitted when empty.
	SupportURL string
	// DailyLimit is the account's daily request quota (CLOUD_DAILY_LIMIT);
	// 0 means none. The bridge's "Quota left today" sensor exists only with
	// a limit.
	DailyLimit int
	// QuotaKnown says the bridge knows the account's quota (it learned it
	// from the cloud's rate-limit headers); a DailyLimit counts as known
	// too. The bridge's six entities of the quota (quota_* of BridgeStats)
	// exist only then: with none known they would stay unknown forever.
	QuotaKnown bool
	// Local is LAN_ENABLED: the lights the LAN may reach get a "Connection"
	// sensor (local.go).
	Local bool
}

func (c Config) withDefaults() Config {
	if c.Prefix = strings.Trim(strings.TrimSpace(c.Prefix), "/"); c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Layout.Base == "" {
		c.Layout = topic.New("")
	}
	if c.BridgeID == "" {
		c.BridgeID = topic.DeviceID(c.Layout.Base, "") + "_bridge"
	}
	if c.Manufacturer == "" {
		c.Manufacturer = DefaultManufacturer
	}
	return c
}

// ConfigTopic is the discovery topic of one entity:
// <prefix>/<component>/<node>/<object>/config.
func (c Config) ConfigTopic(component, node, object string) string {
	c = c.withDefaults()
	return c.Prefix + "/" + component + "/" + node + "/" + object + "/config"
}

// Configs returns every discovery message of a device: config topic →
// retained JSON payload, one single-component message per entity. The
// device's scene capabilities (lightScene, diyScene) must already hold the
// options of the scene endpoints. The result depends only on cfg and dev, so
// comparing it with the previous result (Diff) tells what to publish.
//
// Home Assistant's device is named dev.Name (the SKU when it is empty). To
// show a name the user chose instead of the cloud's, pass a copy of the
// device with Name set to it: ids, unique_ids, entity ids and topics derive
// from the SKU and device id only, so a rename changes nothing else and Home
// Assistant keeps the entities, their history and the user's customisations.
func Configs(cfg Config, dev capability.Device) map[string][]byte {
	cfg = cfg.withDefaults()
	id := topic.DeviceID(dev.SKU, dev.Device)
	out := make(map[string][]byte)
	for _, e := range entities(cfg, dev, id) {
		e.common(cfg, dev, id)
		out[cfg.ConfigTopic(e.component, id, e.role)] = marshal(e.payload)
	}
	return out
}

// entity is one Home Assistant entity before the common members are added.
type entity struct {
	component string // light, switch, ...
	role      string // the object id part: an instance or a role name
	payload   map[string]any
	// bridgeOnly entities stay available while the device is offline
	// (the connectivity sensor must be able to say "disconnected").
	bridgeOnly bool
}

// common adds what every entity of a device carries: ids, device block,
// origin and availability.
func (e *entity) common(cfg Config, dev capability.Device, id string) {
	p := e.payload
	uid := id + "_" + e.role
	p["unique_id"] = uid
	// object_id names the entity id before HA 2025.10; default_entity_id
	// after (older releases drop it, newer ones prefer it).
	p["object_id"] = strings.ToLower(uid)
	p["default_entity_id"] = e.component + "." + strings.ToLower(uid)
	if _, ok := p["name"]; !ok {
		p["name"] = nil
	}
	p["device"] = deviceBlock(cfg, dev, id)
	p["origin"] = origin(cfg)
	avail := []any{map[string]any{"topic": cfg.Layout.BridgeState()}}
	if !e.bridgeOnly {
		avail = append(avail, map[string]any{"topic": cfg.Layout.Availability(id)})
	}
	p["availability"] = avail
	p["availability_mode"] = "all"
}

func deviceBlock(cfg Config, dev capability.Device, id string) map[string]any {
	name := capability.DisplayName(dev, "")
	if name == "" {
		name = id
	}
	b := map[string]any{
		"identifiers":  []any{id},
		"name":         name,
		"manufacturer": cfg.Manufacturer,
		"via_device":   cfg.BridgeID,
	}
	if dev.SKU != "" {
		b["model"] = dev.SKU
	}
	return b
}

func origin(cfg Config) map[string]any {
	o := map[string]any{"name": "cloud2mqtt"}
	if cfg.Version != "" {
		o["sw_version"] = cfg.Version
	}
	if cfg.SupportURL != "" {
		o["support_url"] = cfg.SupportURL
	}
	return o
}

// marshal encodes a payload deterministically (map keys sorted) without
// HTML escaping, so templates stay readable in the golden files.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Payloads are built from strings, numbers, bools, maps and slices
		// only; an error here is a programming error we surface as an
		// empty object rather than a panic.
		return []byte("{}")
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// jstr quotes s as a JSON string, which is also a valid Jinja string literal
// (Jinja unescapes \" \\ and \uXXXX the same way).
func jstr(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		return `""`
	}
	return string(b)
}

// jval renders a normalised value as a JSON (and Jinja) literal.
func jval(v any) string {
	return string(marshal(v))
}

// stateGet is the Jinja expression of an instance's value in the state JSON;
// None (rendered "None", which Home Assistant reads as unknown) when the
// cloud did not report it.
func stateGet(instance string) string {
	return "value_json.get(" + jstr(instance) + ")"
}
