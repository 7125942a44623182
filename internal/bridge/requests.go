package bridge

import (
	"encoding/json"
	"strings"

	"cloud2mqtt/internal/capability"
)

// requestJSON is the body of <base>/bridge/request/<action>. Every member is
// optional; an empty body is a request without arguments.
type requestJSON struct {
	Transaction any    `json:"transaction,omitempty"`
	Device      string `json:"device,omitempty"` // a device id, or "sku/device"
}

// responseJSON is the body of <base>/bridge/response/<action>.
type responseJSON struct {
	Status      string `json:"status"` // "ok" or "error"
	Data        any    `json:"data,omitempty"`
	Error       string `json:"error,omitempty"`
	Transaction any    `json:"transaction,omitempty"`
}

// Actions the bridge answers on <base>/bridge/request/<action>.
var actions = []string{"refresh", "scenes", "health", "devices"}

func (b *Bridge) respond(action string, req requestJSON, data any, err error) {
	r := responseJSON{Status: "ok", Data: data, Transaction: req.Transaction}
	if err != nil {
		r = responseJSON{Status: "error", Error: err.Error(), Transaction: req.Transaction}
	}
	p, _ := json.Marshal(r)
	b.send([]message{{b.opt.Layout.BridgeResponse(action), p, false}})
}

type requestError string

func (e requestError) Error() string { return string(e) }

func (b *Bridge) handleRequest(action string, payload []byte) {
	var req requestJSON
	if s := strings.TrimSpace(string(payload)); s != "" {
		if err := json.Unmarshal(payload, &req); err != nil {
			b.respond(action, req, nil, requestError(`bridge: request body must be a JSON object such as {"transaction":"1","device":"<id>"} or empty`))
			return
		}
	}
	switch action {
	case "refresh":
		err := b.reader().RefreshDevices(func(err error) {
			b.mu.Lock()
			n := len(b.order)
			b.mu.Unlock()
			b.respond(action, req, map[string]any{"devices": n}, err)
		})
		if err != nil {
			b.respond(action, req, nil, err)
		}
	case "scenes":
		dev, ok := b.lookup(req.Device)
		if !ok {
			b.respond(action, req, nil, requestError(`bridge: scenes needs {"device":"<id>"} naming a device listed in `+b.opt.Layout.BridgeDevices()))
			return
		}
		err := b.reader().RefreshScenes(dev.SKU, dev.Device, func(err error) {
			b.respond(action, req, map[string]any{"device": topicID(b, dev), "scenes": sceneNames(b, dev)}, err)
		})
		if err != nil {
			b.respond(action, req, nil, err)
		}
	case "health":
		if b.opt.Health == nil {
			b.respond(action, req, map[string]any{"healthy": true}, nil)
			return
		}
		ok, reasons, details := b.opt.Health()
		b.respond(action, req, map[string]any{"healthy": ok, "reasons": reasons, "details": details}, nil)
	case "devices":
		b.mu.Lock()
		list := b.deviceListJSONLocked()
		b.mu.Unlock()
		b.respond(action, req, json.RawMessage(list), nil)
	default:
		b.respond(action, req, nil, requestError("bridge: unknown action "+strconvQuote(action)+"; known: "+strings.Join(actions, ", ")))
	}
}

// lookup finds a device by topic id or "sku/device".
func (b *Bridge) lookup(ref string) (capability.Device, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.devices[ref]; ok {
		return e.dev, true
	}
	if id, ok := b.byKey[ref]; ok {
		return b.devices[id].dev, true
	}
	return capability.Device{}, false
}

func topicID(b *Bridge, dev capability.Device) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.byKey[key(dev.SKU, dev.Device)]
}

// sceneNames lists the names of a device's scenes after a refresh.
func sceneNames(b *Bridge, dev capability.Device) map[string][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entryLocked(dev)
	out := map[string][]string{}
	if e == nil {
		return out
	}
	for _, c := range e.dev.Capabilities {
		if c.Instance != capability.InstanceLightScene && c.Instance != capability.InstanceDIYScene && c.Instance != capability.InstanceSnapshot {
			continue
		}
		names := []string{}
		if c.Parameters != nil {
			for _, o := range c.Parameters.Options {
				names = append(names, o.Name)
			}
		}
		out[c.Instance] = names
	}
	return out
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
