package bridge

import (
	"errors"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
)

// Local sends a command over the vendor's LAN interface when it can. true means
// it took the command and will call report once (nil when a status answer
// confirmed it); false, or an error report, leaves it to the cloud.
type Local interface {
	Command(k capability.Key, instance string, value any, report func(error)) bool
}

// SetLocal routes commands through l first (LAN_ENABLED=true). Call it
// before the first message.
func (b *Bridge) SetLocal(l Local) { b.local = l }

// localCommand offers a validated command to the LAN with the cloud path's
// contract: the value is recorded once confirmed, a newer value supersedes a
// waiting one, and an unconfirmed command goes to the cloud, so none is lost.
func (b *Bridge) localCommand(id string, dev capability.Device, req cloud.ControlRequest) bool {
	if b.local == nil {
		return false
	}
	queued := time.Now()
	return b.local.Command(dev.Key(), req.Instance, req.Value, func(err error) {
		switch {
		case err == nil:
			if b.opt.OnCommand != nil {
				now := time.Now()
				b.opt.OnCommand(scheduler.CommandResult{Request: req, Attempts: 1, Queued: queued, Sent: queued, Done: now})
			}
			b.log.Debug().Str("device", dev.String()).Str("instance", req.Instance).
				Interface("value", req.Value).Msg("command applied over the LAN")
			b.reg.SetOptimistic(dev.Key(), req.Instance, req.Value)
		case errors.Is(err, capability.ErrSuperseded):
			// A newer value for the same setting took its place; that one reports.
		default:
			b.log.Info().Err(err).Str("device", dev.String()).Str("instance", req.Instance).
				Msg("command not confirmed over the LAN: sending it through the cloud")
			b.cloudCommand(id, dev, req)
		}
	})
}

// cloudCommand queues the command for the cloud.
func (b *Bridge) cloudCommand(id string, dev capability.Device, req cloud.ControlRequest) {
	err := b.cmd.Control(req, func(r scheduler.CommandResult) { b.commandDone(id, dev, r) })
	if err != nil {
		b.reject(id, dev, req.Instance, req.Value, err)
	}
}

// localJSON is where a light is reachable locally, in bridge/devices.
type localJSON struct {
	Address   string `json:"address"`
	Reachable bool   `json:"reachable"`
}

func localOf(l registry.Location) *localJSON {
	if l.Addr == "" {
		return nil
	}
	return &localJSON{Address: l.Addr, Reachable: l.Local}
}

// locatedLocked records where the device is reached; a change, which is rare,
// goes out with the next stats.
func (m *Mirror) locatedLocked(e *entry, l registry.Location) {
	if e.location == l {
		return
	}
	old := localOf(e.location)
	e.location = l
	if now := localOf(l); (old == nil) != (now == nil) || (old != nil && *old != *now) {
		m.listDirty, m.listSent = true, time.Time{}
	}
}
