// Package discovery maps the cloud's capability definitions onto Home
// Assistant's MQTT discovery: one retained config per entity, the JSON state
// of lights, and the decoding of Home Assistant's light commands. It is pure
// mapping, with no broker, goroutines or state of its own; the bridge
// publishes what it returns.
//
// Entities read the device's retained state object (<base>/<id>/state) with
// value templates and command through <base>/<id>/set/<instance>, reshaped
// by command templates where Home Assistant's payload is not the cloud's.
// Only lights have their own state and command topics, because Home
// Assistant's JSON light schema wants all of a light's state in one object.
// The bridge's own controls read bridge/info and bridge/stats and send
// requests on bridge/request/<action>.
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
	// BridgeID is the bridge's own device id and the via_device of every
	// device. It defaults to "<base>_bridge" so two bridges never share one.
	BridgeID string
	// Manufacturer of the devices (default DefaultManufacturer).
	Manufacturer string
	// SupportURL is the origin's support_url; omitted when empty.
	SupportURL string
	// DailyLimit is the account's daily request quota (CLOUD_DAILY_LIMIT), 0
	// for none; the "Quota left today" sensor exists only with a limit.
	DailyLimit int
	// QuotaKnown says the bridge has learned the account's quota from the
	// cloud's headers. The quota entities exist only then, or with a
	// DailyLimit, since otherwise they would stay unknown forever.
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

// Configs returns every discovery message of a device, config topic to
// retained JSON payload, one per entity. The scene capabilities must already
// hold the scene endpoints' options. The result depends only on cfg and
// dev, so Diff against the previous result tells what to publish.
//
// The device is named dev.Name (the SKU when empty). Ids and topics derive
// from the SKU and device id only, so a rename keeps the entities and their
// history in Home Assistant.
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
		// Payloads hold only plain JSON types, so an error is a programming
		// error; an empty object is safer than a panic.
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

// stateGet is the Jinja expression of an instance's value in the state
// JSON; it renders None, which Home Assistant shows as unknown, if absent.
func stateGet(instance string) string {
	return "value_json.get(" + jstr(instance) + ")"
}
