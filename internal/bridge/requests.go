package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/topic"
)

// requestJSON is the body of <base>/bridge/request/<action>. Every member is
// optional; an empty body is a request without arguments.
type requestJSON struct {
	Transaction any             `json:"transaction,omitempty"`
	Device      string          `json:"device,omitempty"`  // a device id, or "sku/device"
	Options     json.RawMessage `json:"options,omitempty"` // options and device/options
}

// responseJSON is the body of <base>/bridge/response/<action>, and of
// bridge/response/unknown for an unknown action (Action shortened).
type responseJSON struct {
	Status      string  `json:"status"`           // "ok" or "error"
	Action      *string `json:"action,omitempty"` // "" is an unknown action too
	Data        any     `json:"data,omitempty"`
	Error       string  `json:"error,omitempty"`
	Transaction any     `json:"transaction,omitempty"`
}

// maxEchoedAction bounds an unknown action in its answer.
const maxEchoedAction = 64

// respond answers a request for one of requests' actions on its response
// topic.
func (b *Bridge) respond(action string, req requestJSON, data any, err error) {
	b.sendResponse(b.opt.Layout.BridgeResponse(action), responseOf(req, data, err))
}

// respondUnknown answers an unknown action on bridge/response/unknown, so that
// no client can choose a topic the bridge publishes on.
func (b *Bridge) respondUnknown(action string, req requestJSON, err error) {
	r := responseOf(req, nil, err)
	a := clip(action, maxEchoedAction)
	r.Action = &a
	b.sendResponse(b.opt.Layout.BridgeResponseUnknown(), r)
}

// reply answers a request before its action was looked up.
func (b *Bridge) reply(action string, req requestJSON, err error) {
	if _, known := requests[action]; known {
		b.respond(action, req, nil, err)
		return
	}
	b.respondUnknown(action, req, err)
}

func responseOf(req requestJSON, data any, err error) responseJSON {
	if err != nil {
		return responseJSON{Status: "error", Error: UserText(err), Transaction: req.Transaction}
	}
	return responseJSON{Status: "ok", Data: data, Transaction: req.Transaction}
}

func (b *Bridge) sendResponse(t string, r responseJSON) {
	p, _ := json.Marshal(r)
	b.mirror.send([]message{{t, p, false}})
}

type requestError string

func (e requestError) Error() string { return string(e) }

func (b *Bridge) handleRequest(action string, payload []byte) {
	var req requestJSON
	if s := strings.TrimSpace(string(payload)); s != "" {
		if err := json.Unmarshal(payload, &req); err != nil {
			b.reply(action, req, requestError(`bridge: request body must be a JSON object such as {"transaction":"1","device":"<id>"} or empty`))
			return
		}
	}
	handle, ok := requests[action]
	if !ok {
		b.respondUnknown(action, req, requestError("bridge: unknown action "+strconvQuote(clip(action, maxEchoedAction))+"; known: "+strings.Join(slices.Sorted(maps.Keys(requests)), ", ")))
		return
	}
	handle(b, action, req)
}

// requests are the actions the bridge answers on <base>/bridge/request/<action>:
// a new request is a row here and its handler below.
var requests = map[string]func(b *Bridge, action string, req requestJSON){
	topic.ActionRefresh:       (*Bridge).refresh,
	topic.ActionScenes:        (*Bridge).scenes,
	topic.ActionHealth:        (*Bridge).health,
	topic.ActionDevices:       (*Bridge).devices,
	topic.ActionReadAll:       (*Bridge).readAll,
	topic.ActionRepublish:     (*Bridge).republishAll,
	topic.ActionOptions:       (*Bridge).options,
	topic.ActionDeviceOptions: (*Bridge).deviceOptions,
}

func (b *Bridge) refresh(action string, req requestJSON) {
	err := b.read.RefreshDevices(func(err error) {
		n := b.mirror.deviceCount()
		b.respond(action, req, map[string]any{"devices": n}, err)
	})
	if err != nil {
		b.respond(action, req, nil, err)
	}
}

func (b *Bridge) scenes(action string, req requestJSON) {
	dev, id, ok := b.lookup(req.Device)
	if !ok {
		b.respond(action, req, nil, requestError(`bridge: scenes needs {"device":"<id>"} naming a device listed in `+b.opt.Layout.BridgeDevices()))
		return
	}
	err := b.read.RefreshScenes(dev.SKU, dev.Device, func(err error) {
		b.respond(action, req, map[string]any{"device": id, "scenes": b.sceneNames(dev.Key())}, err)
	})
	if err != nil {
		b.respond(action, req, nil, err)
	}
}

func (b *Bridge) health(action string, req requestJSON) {
	if b.opt.Health == nil {
		b.respond(action, req, map[string]any{"healthy": true}, nil)
		return
	}
	ok, reasons, details := b.opt.Health()
	b.respond(action, req, map[string]any{"healthy": ok, "reasons": reasons, "details": details}, nil)
}

func (b *Bridge) devices(action string, req requestJSON) {
	b.respond(action, req, json.RawMessage(b.mirror.deviceList()), nil)
}

func (b *Bridge) readAll(action string, req requestJSON) {
	n, held := 0, 0
	var heldErr error
	for _, d := range b.reg.Devices() {
		switch err := b.read.ReadNow(d.SKU, d.Device, nil); {
		case err == nil:
			n++ // disabled devices are not read
		case errors.Is(err, scheduler.ErrReadsHeld):
			held++
			heldErr = err
		}
	}
	if held > 0 {
		// Not "ok": the reads wait for a hold-off of the bridge's; they
		// are made when it ends.
		b.respond(action, req, nil, fmt.Errorf("bridge: %d of %d devices cannot be read now, only when reads resume (%d read now); for example %w", held, held+n, n, heldErr))
		return
	}
	b.respond(action, req, map[string]any{"devices": n}, nil)
}

func (b *Bridge) republishAll(action string, req requestJSON) {
	b.mirror.republish(true)
	b.respond(action, req, map[string]any{"devices": b.mirror.deviceCount()}, nil)
}

func (b *Bridge) options(action string, req requestJSON) {
	if b.op == nil {
		b.respond(action, req, nil, requestError("bridge: options cannot be changed here"))
		return
	}
	data, err := b.op.SetOptions(req.Options)
	b.respond(action, req, data, err)
}

func (b *Bridge) deviceOptions(action string, req requestJSON) {
	dev, id, ok := b.lookup(req.Device)
	switch {
	case !ok:
		b.respond(action, req, nil, requestError(`bridge: device/options needs {"device":"<id>","options":{...}} naming a device listed in `+b.opt.Layout.BridgeDevices()))
	case b.op == nil:
		b.respond(action, req, nil, requestError("bridge: options cannot be changed here"))
	default:
		data, err := b.op.SetDeviceOptions(id, dev.Key(), req.Options)
		b.respond(action, req, data, err)
	}
}

// lookup finds a device by topic id or "sku/device".
func (b *Bridge) lookup(ref string) (capability.Device, string, bool) {
	k, id, ok := b.mirror.keyOf(ref)
	if !ok {
		return capability.Device{}, "", false
	}
	dev, ok := b.reg.Device(k)
	return dev, id, ok
}

// sceneNames lists the names of a device's scenes after a refresh.
func (b *Bridge) sceneNames(k capability.Key) map[string][]string {
	out := map[string][]string{}
	dev, ok := b.reg.Device(k)
	if !ok {
		return out
	}
	for _, c := range dev.Capabilities {
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
