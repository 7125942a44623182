package settings

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/bridge"
	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/topic"
)

// FuzzSetOptions: any payload of bridge/request/options or of a device's
// options is taken or refused without a panic; what is taken validates as
// the environment would, and no error shows more than 64 characters of a
// value or of a name sent.
func FuzzSetOptions(f *testing.F) {
	for _, seed := range []string{`{"poll_interval":"5m"}`, `{"pol_interval":"5m"}`, `{"log_level":"loud"}`, `{"daily_limit":10}`,
		`{"disabled":true,"name":"Hall"}`, `{"poll_interval":null}`, `[]`, `{"poll_interval":"60s60s"}`, `{"` + strings.Repeat("a", 100) + `":1}`} {
		f.Add(seed)
	}
	defer zerolog.SetGlobalLevel(zerolog.GlobalLevel()) // the log_level option sets it
	f.Fuzz(func(t *testing.T, raw string) {
		s := fuzzSettings(t)
		_, err := s.SetOptions(json.RawMessage(raw))
		checkShown(t, raw, err)
		if err == nil {
			if verr := s.applied.Validate(); verr != nil {
				t.Errorf("%s was taken, but the result does not validate: %v", raw, verr)
			}
		}
		_, err = s.SetDeviceOptions("h6008_x", capability.Key{SKU: "H6008", Device: "x"}, json.RawMessage(raw))
		checkShown(t, raw, err)
	})
}

// checkShown fails when err holds a string of raw's object longer than
// twice the 64 characters an error may show.
func checkShown(t *testing.T, raw string, err error) {
	t.Helper()
	var in map[string]json.RawMessage
	if err == nil || json.Unmarshal([]byte(raw), &in) != nil {
		return
	}
	for k, v := range in {
		var str string
		_ = json.Unmarshal(v, &str)
		for _, s := range []string{k, str} {
			if utf8.RuneCountInString(s) > 2*64 && utf8.ValidString(s) && !strings.ContainsAny(s, "\\\"") && strings.Contains(err.Error(), s) {
				t.Errorf("the error shows all %d characters of %.20q…: %.200v", len(s), s, err)
			}
		}
	}
}

// fuzzSettings are settings over a poller and a mirror that run nothing.
func fuzzSettings(t *testing.T) *Settings {
	t.Helper()
	log := zerolog.Nop()
	mirror := bridge.NewMirror(bridge.Options{Layout: topic.New("cloud2mqtt"), Log: log})
	reg := registry.New(log, mirror.Observer())
	p := poller.New(idleScheduler{}, reg, poller.Config{Interval: poller.MinInterval}, log)
	return New(envConfig(t), "", log, p, mirror, nil)
}

// idleScheduler refuses every request: the fuzzed settings never read.
type idleScheduler struct{}

var errIdle = errors.New("idle")

func (idleScheduler) State(string, string, scheduler.Priority, func(cloud.DeviceState, error)) error {
	return errIdle
}
func (idleScheduler) Held(string, string) (scheduler.Hold, bool)                { return scheduler.Hold{}, false }
func (idleScheduler) ListDevices(func([]capability.Device, error)) error        { return errIdle }
func (idleScheduler) Scenes(string, string, func(cloud.Scenes, error)) error    { return errIdle }
func (idleScheduler) DIYScenes(string, string, func(cloud.Scenes, error)) error { return errIdle }
func (idleScheduler) Quota() scheduler.Quota                                    { return scheduler.Quota{} }
