// Package settings holds what a user changes at run time over MQTT or on the
// status page: the poll intervals, daily limit and log level, and each
// device's interval, disabled flag and name. It validates them with the
// environment's rules (internal/config), applies them to the poller and the
// Mirror, and keeps them in STATE_DIR (options.json) for the next start.
// It publishes nothing itself.
package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/bridge"
	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/logging"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/statedir"
)

// options are the variables with an option tag in config.Config, by option
// name. A new option is that tag plus its effect in applyLocked.
var options = func() map[string]config.Var {
	m := map[string]config.Var{}
	for _, v := range config.Vars() {
		if v.Option != "" {
			m[v.Option] = v
		}
	}
	return m
}()

// isDuration reports whether the option name is a duration (a device's
// poll_interval is the bridge's, for one device).
func isDuration(name string) bool { return options[name].Kind == config.KindDuration }

func optionNames() []string { return slices.Sorted(maps.Keys(options)) }

const (
	optionsFile    = "options.json"
	optionsFormat  = "cloud2mqtt/options"
	optionsVersion = 1
)

// Device is one device's options, as kept and shown.
type Device struct {
	SKU          string `json:"sku"`
	Device       string `json:"device"`
	PollInterval string `json:"poll_interval,omitempty"`
	Disabled     bool   `json:"disabled,omitempty"`
	Name         string `json:"name,omitempty"`
}

// savedOptions is the options file of the state directory.
type savedOptions struct {
	Options map[string]string `json:"options"`
	Devices map[string]Device `json:"devices"` // by topic id
}

// Poller is what the settings change in the poller: the intervals and the
// daily limit, and each device's options.
type Poller interface {
	SetConfig(c poller.Config)
	SetDeviceOptions(k capability.Key, o poller.DeviceOptions)
}

// Mirror is what the settings change in the bridge's Mirror: each device's
// options (a disabled device has no discovery, a display name).
type Mirror interface {
	SetDeviceOptions(k capability.Key, o bridge.DeviceOptions)
}

// Settings are the environment's values overridden by what a user set at run
// time; it is the bridge's Operator and safe for concurrent use.
type Settings struct {
	env     config.Config
	dir     statedir.Dir
	log     zerolog.Logger
	poll    Poller
	mirror  Mirror
	changed func() // told of each change, under mu; it must not block

	mu      sync.Mutex
	saved   savedOptions
	applied config.Config // the environment with the overrides
	changes int           // counts the changes, so readers can tell one happened
}

// New returns the settings of env with what a previous run kept in dir; a bad
// or invalid options.json is a warning and the environment applies. Nothing
// applies until Apply. changed, if not nil, is called after each change made
// at run time (for bridge/info to show it at once); it must not block.
func New(env config.Config, dir statedir.Dir, log zerolog.Logger, poll Poller, mirror Mirror, changed func()) *Settings {
	if changed == nil {
		changed = func() {}
	}
	s := &Settings{env: env, dir: dir, log: log, poll: poll, mirror: mirror, changed: changed,
		saved: savedOptions{Options: map[string]string{}, Devices: map[string]Device{}}, applied: env}
	if dir != "" {
		var saved savedOptions
		err := dir.Read(optionsFile, optionsFormat, optionsVersion, &saved)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			log.Warn().Err(err).Msg("the saved options cannot be used; the environment's settings apply")
		default:
			if saved.Options == nil {
				saved.Options = map[string]string{}
			}
			if saved.Devices == nil {
				saved.Devices = map[string]Device{}
			}
			if cfg, err := withOptions(env, saved.Options); err != nil {
				log.Warn().Err(err).Msg("the saved options are no longer valid; the environment's settings apply")
			} else {
				s.saved, s.applied = saved, cfg
			}
		}
	}
	return s
}

// Apply makes the settings take effect (poller intervals, log level, device
// options) and logs each with where it comes from.
func (s *Settings) Apply() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applyLocked()
	ev := s.log.Info()
	for _, name := range optionNames() {
		from := "environment"
		if _, ok := s.saved.Options[name]; ok {
			from = "mqtt"
		}
		ev = ev.Str(name, s.applied.Value(options[name].Name)+" ("+from+")")
	}
	ev.Int("devices_with_options", len(s.saved.Devices)).Msg("settings")
}

func (s *Settings) applyLocked() {
	c := s.applied
	s.poll.SetConfig(poller.Config{Interval: c.Poll.Interval, DailyLimit: c.Cloud.DailyLimit,
		ListInterval: c.Poll.DeviceListInterval, SceneInterval: c.Poll.SceneInterval})
	if lvl, err := logging.ParseLevel(c.Log.Level); err == nil {
		zerolog.SetGlobalLevel(lvl)
	}
	for _, d := range s.saved.Devices {
		s.applyDevice(d)
	}
}

func (s *Settings) applyDevice(d Device) {
	k := capability.Key{SKU: d.SKU, Device: d.Device}
	iv, _ := config.ParseDuration(d.PollInterval) // validated when set
	s.poll.SetDeviceOptions(k, poller.DeviceOptions{Interval: iv, Disabled: d.Disabled})
	s.mirror.SetDeviceOptions(k, bridge.DeviceOptions{PollInterval: iv, Disabled: d.Disabled, Name: d.Name})
}

// withOptions lays opts over env and validates the result with the
// environment's rules; the error names every bad option, not only the first.
func withOptions(env config.Config, opts map[string]string) (config.Config, error) {
	c, problems := overlayOptions(env, opts)
	if len(problems) > 0 {
		return env, optionsError(problems)
	}
	return c, nil
}

// overlayOptions lays opts over env and lists every problem. An option that
// does not parse keeps env's value, so Validate does not report it twice.
func overlayOptions(env config.Config, opts map[string]string) (config.Config, []string) {
	c := env
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(opts)) {
		o, ok := options[name]
		if !ok {
			problems = append(problems, unknownOption(name))
			continue
		}
		if err := c.Set(o.Name, opts[name]); err != nil {
			problems = append(problems, name+": "+err.Error())
		}
	}
	if err := c.Validate(); err != nil {
		problems = append(problems, strings.Split(strings.TrimPrefix(err.Error(), "config: "), "\n")...)
	}
	return c, problems
}

// unknownOption names an option that is none, with the one meant when one
// is close (pol_interval: poll_interval).
func unknownOption(name string) string {
	return unknownName("option", name, optionNames())
}

// unknownName is the message for an unknown option (what) of a request:
// the name meant when one is close, else every name there is.
func unknownName(what, name string, known []string) string {
	msg := fmt.Sprintf("unknown %s %s", what, config.Quote(name))
	if hint, ok := config.Closest(name, known); ok {
		return msg + ": did you mean " + hint + "?"
	}
	return fmt.Sprintf("%s; the %ss are %s", msg, what, strings.Join(known, ", "))
}

// optionsError is every problem of an options request in one line (it is
// one response's error).
func optionsError(problems []string) error {
	return fmt.Errorf("bridge: options rejected: %s", strings.Join(problems, "; "))
}

// optionString is a JSON option value as text; a number for a duration means
// seconds, as Home Assistant sends it. ok is false for null (the environment's value).
func optionString(name string, raw json.RawMessage) (s string, ok bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", false, fmt.Errorf("%s: %s is neither a string nor a number", name, excerpt(raw))
	}
	if isDuration(name) {
		return string(n) + "s", true, nil
	}
	return string(n), true, nil
}

// excerpt is a rejected JSON value for a message: at most 64 characters,
// with its length when it was cut (config.Clip).
func excerpt(raw []byte) string {
	return config.Clip(strings.ToValidUTF8(string(raw), "?"))
}

// SetOptions implements bridge.Operator: {"poll_interval":"5m", ...}, where null
// returns an option to the environment's value. All or nothing.
func (s *Settings) SetOptions(raw json.RawMessage) (any, error) {
	var in map[string]json.RawMessage
	if err := json.Unmarshal(raw, &in); err != nil || in == nil {
		return nil, fmt.Errorf(`bridge: options must be a JSON object such as {"options":{"poll_interval":"5m","log_level":"debug"}}`)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := maps.Clone(s.saved.Options)
	if next == nil {
		next = map[string]string{}
	}
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(in)) {
		if _, ok := options[name]; !ok {
			problems = append(problems, unknownOption(name))
			continue
		}
		str, set, err := optionString(name, in[name])
		switch {
		case err != nil:
			problems = append(problems, err.Error())
			delete(next, name)
		case set:
			next[name] = str
		default:
			delete(next, name)
		}
	}
	cfg, more := overlayOptions(s.env, next)
	if problems = append(problems, more...); len(problems) > 0 {
		return nil, optionsError(problems)
	}
	// Durations are kept as the environment would spell them ("90" is 1m30s).
	for name, v := range next {
		if isDuration(name) {
			if d, err := config.ParseDuration(v); err == nil {
				next[name] = config.FormatDuration(d)
			}
		}
	}
	s.saved.Options, s.applied = next, cfg
	s.changes++
	s.changed()
	s.applyLocked()
	s.saveLocked()
	s.log.Info().Interface("options", next).Msg("options changed over MQTT")
	return s.optionsLocked(), nil
}

// Origin says where a change of the settings was made, as the log names
// it.
type Origin string

// Where changes are made.
const (
	OverMQTT  Origin = "over MQTT"          // bridge/request/device/options
	OnThePage Origin = "on the status page" // the page's buttons (internal/statuspage)
)

// SetDeviceOptions implements bridge.Operator: SetDeviceOptionsFrom over
// MQTT.
func (s *Settings) SetDeviceOptions(id string, k capability.Key, raw json.RawMessage) (any, error) {
	return s.SetDeviceOptionsFrom(OverMQTT, id, k, raw)
}

// SetDeviceOptionsFrom sets a device's options ({"poll_interval":"2m",
// "disabled":true,"name":"Hall light"}), null or "" restoring a default.
// All or nothing; from says where the change was made.
func (s *Settings) SetDeviceOptionsFrom(from Origin, id string, k capability.Key, raw json.RawMessage) (any, error) {
	var in map[string]json.RawMessage
	if err := json.Unmarshal(raw, &in); err != nil || in == nil {
		return nil, fmt.Errorf(`bridge: device options must be a JSON object such as {"device":"<id>","options":{"poll_interval":"2m","disabled":false,"name":"Hall light"}}`)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.saved.Devices[id]
	d.SKU, d.Device = k.SKU, k.Device
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(in)) {
		if err := setDeviceOption(&d, name, in[name]); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("bridge: device options rejected: %s", strings.Join(problems, "; "))
	}
	if d.PollInterval == "" && !d.Disabled && d.Name == "" {
		delete(s.saved.Devices, id)
	} else {
		s.saved.Devices[id] = d
	}
	s.changes++
	s.changed()
	s.applyDevice(d)
	s.saveLocked()
	s.log.Info().Str("device", id).Interface("options", d).Msg("device options changed " + string(from))
	return map[string]any{"device": id, "options": d}, nil
}

// setDeviceOption sets one device option from its JSON value.
func setDeviceOption(d *Device, name string, v json.RawMessage) error {
	switch name {
	case "poll_interval":
		str, set, err := optionString(name, v)
		if err != nil {
			return err
		}
		d.PollInterval = ""
		if !set {
			return nil
		}
		iv, err := config.ParseDurationFor(name, str)
		if err != nil {
			return err
		}
		if err := config.CheckAs("POLL_INTERVAL", name, iv); err != nil {
			return err
		}
		d.PollInterval = config.FormatDuration(iv)
	case "disabled":
		var b *bool
		if err := json.Unmarshal(v, &b); err != nil {
			return fmt.Errorf("disabled must be true, false or null, not %s", excerpt(v))
		}
		d.Disabled = b != nil && *b
	case "name":
		var n *string
		if err := json.Unmarshal(v, &n); err != nil {
			return fmt.Errorf("name must be a string or null, not %s", excerpt(v))
		}
		d.Name = ""
		if n != nil {
			d.Name = strings.TrimSpace(*n)
		}
	default:
		return errors.New(unknownName("device option", name, []string{"disabled", "name", "poll_interval"}))
	}
	return nil
}

func (s *Settings) saveLocked() {
	if s.dir == "" {
		return
	}
	if err := s.dir.Write(optionsFile, optionsFormat, optionsVersion, s.saved); err != nil {
		s.log.Warn().Err(err).Msg("the options apply now but cannot be kept for the next start")
	}
}

// optionsLocked is the effective options with where each comes from.
func (s *Settings) optionsLocked() map[string]any {
	values, sources := map[string]any{}, map[string]string{}
	for _, name := range optionNames() {
		v := s.applied.Value(options[name].Name)
		values[name] = v
		if n, err := strconv.Atoi(v); err == nil && options[name].Kind == config.KindNumber {
			values[name] = n
		}
		sources[name] = "environment"
		if _, ok := s.saved.Options[name]; ok {
			sources[name] = "mqtt"
		}
	}
	return map[string]any{"options": values, "sources": sources}
}

// Version counts the changes of the settings: a reader tells by it that
// one happened.
func (s *Settings) Version() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changes
}

// DailyLimit is the daily limit in force (CLOUD_DAILY_LIMIT or its
// option).
func (s *Settings) DailyLimit() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied.Cloud.DailyLimit
}

// Snapshot is the settings in force at one instant, for bridge/info.
type Snapshot struct {
	// Config is the environment's configuration with the options laid
	// over it.
	Config config.Config
	// Devices are the devices' options by topic id.
	Devices map[string]Device
	// Options are the effective options by name, as the environment spells them,
	// and Sources says where each comes from: "environment" or "mqtt".
	Options map[string]any
	Sources map[string]string
}

// Snapshot returns the settings in force.
func (s *Settings) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	opts := s.optionsLocked()
	return Snapshot{Config: s.applied, Devices: maps.Clone(s.saved.Devices),
		Options: opts["options"].(map[string]any), Sources: opts["sources"].(map[string]string)}
}

// Devices are the devices' options by topic id, as set over MQTT or on the
// page.
func (s *Settings) Devices() map[string]Device {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.saved.Devices)
}
