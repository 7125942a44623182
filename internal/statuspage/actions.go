package statuspage

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/bridge"
	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/settings"
	"cloud2mqtt/internal/web"
)

// actions is the page's web.Actions: the paths of the MQTT requests (the
// settings log a change as made on the page).
type actions struct {
	Parts
	errs *web.DeviceErrors
	log  zerolog.Logger
}

func (a *actions) key(id string) (capability.Key, string, error) {
	k, id, ok := a.Mirror.KeyOf(id)
	if !ok {
		return capability.Key{}, "", web.ErrUnknownDevice
	}
	return k, id, nil
}

// ReadNow is <id>/get.
func (a *actions) ReadNow(id string) error {
	k, id, err := a.key(id)
	if err != nil {
		return err
	}
	err = a.Poller.ReadNow(k.SKU, k.Device, func(err error) {
		if err != nil {
			a.log.Warn().Err(err).Str("device", k.String()).Msg("read on request failed")
			a.errs.ReadFailed(k, bridge.UserText(err))
		}
	})
	switch {
	case errors.Is(err, poller.ErrDisabled):
		return fmt.Errorf("%s is disabled: enable it to read it", id)
	case errors.Is(err, poller.ErrUnknownDevice):
		return web.ErrUnknownDevice // the list changed since the id was found
	}
	return err
}

// SetEnabled is device/options {"disabled": !enabled}.
func (a *actions) SetEnabled(id string, enabled bool) error {
	return a.options(id, map[string]any{"disabled": !enabled})
}

// SetPollInterval is device/options {"poll_interval": interval}, null for "".
func (a *actions) SetPollInterval(id string, interval string) error {
	var v any
	if interval != "" {
		v = interval
	}
	return a.options(id, map[string]any{"poll_interval": v})
}

func (a *actions) options(id string, o map[string]any) error {
	k, id, err := a.key(id)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(o)
	if err != nil {
		return err
	}
	_, err = a.Settings.SetDeviceOptionsFrom(settings.OnThePage, id, k, raw)
	return err
}

// RefreshDevices is bridge/request/refresh.
func (a *actions) RefreshDevices() error { return a.Poller.RefreshDevices(nil) }

// RepublishDiscovery is bridge/request/republish.
func (a *actions) RepublishDiscovery() error {
	a.Mirror.Republish()
	return nil
}
