package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/testkit"
	"cloud2mqtt/internal/topic"
)

// unitDevices are a heater ranged 41–86 °F and a kettle ranged 40–100 °C
// (testdata/temperature_units.json), and the recorded heater ranged
// 5–30 °C (H7131 of ../../testdata/list_devices_issue4.json).
func unitDevices(t *testing.T) (fahrenheitHeater, celsiusKettle, celsiusHeater capability.Device) {
	t.Helper()
	var units, recorded struct{ Data []capability.Device }
	if err := json.Unmarshal(testkit.ReadFixture(t, "testdata", "temperature_units.json"), &units); err != nil || len(units.Data) != 2 {
		t.Fatalf("temperature_units.json: %v", err)
	}
	if err := json.Unmarshal(testkit.ReadFixture(t, "../../testdata", "list_devices_issue4.json"), &recorded); err != nil {
		t.Fatal(err)
	}
	for _, d := range recorded.Data {
		if d.SKU == "H7131" {
			return units.Data[0], units.Data[1], d
		}
	}
	t.Fatal("no H7131 in list_devices_issue4.json")
	return
}

// unitBridge is a bridge over the real registry with the devices listed.
func unitBridge(t *testing.T, devs ...capability.Device) (*testBridge, *fakePub, *fakeCmd) {
	t.Helper()
	pub, cmd := &fakePub{}, &fakeCmd{}
	l := topic.New("c2m")
	b := newTestBridgeWith(t, Options{Layout: l, Discovery: discovery.Config{Layout: l, Version: "test"}, Log: zerolog.Nop()}, pub, cmd, &fakeReader{})
	b.Devices(devs, devs, nil)
	pub.take()
	return b, pub, cmd
}

// outcome sends one command and says what a user sees: the value the
// cloud receives, or the answer on <id>/error.
func outcome(t *testing.T, b *testBridge, pub *fakePub, cmd *fakeCmd, dev capability.Device, sub, payload string) (sent []cloud.ControlRequest, e errorJSON) {
	t.Helper()
	id := topic.DeviceID(dev.SKU, dev.Device)
	cmd.reqs = nil
	b.Handle("c2m/"+id+"/"+sub, []byte(payload), false)
	sent = cmd.reqs
	errs := on(pub.take(), "c2m/"+id+"/error")
	if len(errs) > 1 {
		t.Fatalf("%s %s: %d answers on %s/error", sub, payload, len(errs), id)
	}
	if len(errs) == 1 {
		if err := json.Unmarshal([]byte(errs[0].payload), &e); err != nil {
			t.Fatal(err)
		}
	}
	return sent, e
}

// TestTemperaturesMeanWhatTheUserMeant: a temperature is checked and sent in
// the unit of the device's range, a bare number is in that unit, and every
// range message names its unit.
func TestTemperaturesMeanWhatTheUserMeant(t *testing.T) {
	heaterF, kettle, heaterC := unitDevices(t)
	b, pub, cmd := unitBridge(t, heaterF, kettle, heaterC)
	const setF, setK = "set/targetTemperature", "set/sliderTemperature"
	const inF, inC = `,"autoStop":0,"unit":"Fahrenheit"}`, `,"autoStop":0,"unit":"Celsius"}`
	for _, tc := range []struct {
		name, sub, payload string
		dev                capability.Device
		want               string // the value the cloud receives, or
		says               string // the answer on <id>/error (code 400)
	}{
		{"F heater: 22C is 72 °F", setF, "22C", heaterF, `{"temperature":72` + inF, ""},
		{"F heater: 72F", setF, "72F", heaterF, `{"temperature":72` + inF, ""},
		{"F heater: a Celsius object", setF, `{"temperature":22,"unit":"Celsius"}`, heaterF, `{"temperature":72` + inF, ""},
		{"F heater: in a set object", "set", `{"targetTemperature":"22C"}`, heaterF, `{"temperature":72` + inF, ""},
		{"F heater: a bare number is °F", setF, "72", heaterF, `{"temperature":72` + inF, ""},
		{"F heater: a bare 22 is 22 °F", setF, "22", heaterF, "", "targetTemperature.temperature: parameter value out of range: 22 °F is below the minimum 41 °F"},
		{"F heater: too cold in Celsius", setF, "2C", heaterF, "", "2 °C (36 °F) is below the minimum 41 °F"},
		{"kettle: 90F is 32 °C", setK, "90F", kettle, "", "sliderTemperature.temperature: parameter value out of range: 90 °F (32 °C) is below the minimum 40 °C"},
		{"kettle: 72F", setK, "72F", kettle, "", "72 °F (22 °C) is below the minimum 40 °C"},
		{"kettle: 22C", setK, "22C", kettle, "", "22 °C is below the minimum 40 °C"},
		{"kettle: a Celsius object", setK, `{"temperature":22,"unit":"Celsius"}`, kettle, "", "22 °C is below the minimum 40 °C"},
		{"kettle: a bare number is °C", setK, "90", kettle, `{"temperature":90` + inC, ""},
		{"kettle: 200F is 93 °C", setK, "200F", kettle, `{"temperature":93` + inC, ""},
		{"kettle: a Fahrenheit object", setK, `{"temperature":212,"unit":"Fahrenheit"}`, kettle, `{"temperature":100` + inC, ""},
		// README.md: mosquitto_pub -t cloud2mqtt/<id>/set/targetTemperature -m 22C, and the
		// friendly forms of its table, on a heater of each kind.
		{"README -m 22C, F heater", setF, "22C", heaterF, `{"temperature":72` + inF, ""},
		{"README -m 22C, C heater", setF, "22C", heaterC, `{"temperature":22` + inC, ""},
		{"README 72 F, F heater", setF, `"72 F"`, heaterF, `{"temperature":72` + inF, ""},
		{"README 72 F, C heater", setF, `"72 F"`, heaterC, `{"temperature":22` + inC, ""},
		{"README object, F heater", setF, `{"temperature":22,"unit":"Celsius","autoStop":0}`, heaterF, `{"temperature":72` + inF, ""},
		{"README object, C heater", setF, `{"temperature":22,"unit":"Celsius","autoStop":0}`, heaterC, `{"temperature":22` + inC, ""},
		{"README bare 22, C heater", setF, "22", heaterC, `{"temperature":22` + inC, ""},
		{"README bare 72, F heater", setF, "72", heaterF, `{"temperature":72` + inF, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sent, e := outcome(t, b, pub, cmd, tc.dev, tc.sub, tc.payload)
			if tc.says != "" {
				if len(sent) != 0 || e.Code != 400 || !strings.Contains(e.Error, tc.says) {
					t.Fatalf("sent %+v, answered %+v; want code 400 saying %q", sent, e, tc.says)
				}
				return
			}
			if e.Error != "" || len(sent) != 1 {
				t.Fatalf("sent %+v, answered %+v; want one command", sent, e)
			}
			want, _ := capability.Normalize([]byte(tc.want))
			if !capability.Equal(sent[0].Value, want) {
				t.Errorf("the cloud receives %s, want %s", mustJSON(sent[0].Value), tc.want)
			}
		})
	}
	// What the cloud accepted is the state, in the device's unit.
	outcome(t, b, pub, cmd, heaterF, setF, "22C")
	if v, _ := b.reg.Value(heaterF.Key(), capability.InstanceTargetTemperature); !capability.Equal(v, mustNormalize(`{"temperature":72`+inF)) {
		t.Errorf("registry: %s", mustJSON(v))
	}
}

// TestLightSetRefusesOutOfRangeLikeSet: light/set refuses what set refuses,
// with the same words on <id>/error, and sends nothing of the command.
func TestLightSetRefusesOutOfRangeLikeSet(t *testing.T) {
	b, pub, cmd := unitBridge(t, lamp)
	_, viaSet := outcome(t, b, pub, cmd, lamp, "set", `{"brightness":300}`)
	_, viaInstance := outcome(t, b, pub, cmd, lamp, "set/brightness", `300`)
	sent, viaLight := outcome(t, b, pub, cmd, lamp, "light/set", `{"state":"ON","brightness":300}`)
	const words = "brightness: parameter value out of range: 300 is above the maximum 100"
	for _, e := range []errorJSON{viaSet, viaInstance, viaLight} {
		if e.Code != 400 || e.Error != words {
			t.Errorf("answered %+v; want code 400 and %q", e, words)
		}
	}
	if len(sent) != 0 {
		t.Errorf("light/set with brightness 300 sent %+v; want nothing (not even the power)", sent)
	}
	for payload, says := range map[string]string{
		`{"color":{"r":300,"g":0,"b":0}}`: "color.r: parameter value out of range: 300 is above the maximum 255",
		`{"brightness":0}`:                "brightness: parameter value out of range: 0 is below the minimum 1",
		`{"state":"DIM"}`:                 `invalid parameter format: state "DIM" is neither ON nor OFF`,
		`{"effect":"Nope"}`:               `invalid parameter format: unknown effect "Nope"`,
	} {
		sent, e := outcome(t, b, pub, cmd, lamp, "light/set", payload)
		if len(sent) != 0 || e.Code != 400 || !strings.Contains(e.Error, says) || e.Instance != "light" {
			t.Errorf("light/set %s: sent %+v, answered %+v; want code 400 saying %q", payload, sent, e, says)
		}
	}
	sent, e := outcome(t, b, pub, cmd, lamp, "light/set", `{"state":"ON","brightness":80,"color":{"r":0,"g":255,"b":0}}`)
	if e.Error != "" || len(sent) != 3 || !capability.Equal(sent[1].Value, int64(80)) || !capability.Equal(sent[2].Value, int64(0x00FF00)) {
		t.Errorf("an in-range light command: sent %+v, answered %+v", sent, e)
	}
}

// TestErrorsInPlainWords: what goes on <id>/error and bridge/error names no Go
// package; the errors keep their wrapping.
func TestErrorsInPlainWords(t *testing.T) {
	b, pub, cmd := unitBridge(t, lamp)
	b.Handle("c2m/nobody/set/brightness", []byte("5"), false)
	var unknown errorJSON
	if msgs := on(pub.take(), "c2m/bridge/error"); len(msgs) != 1 || json.Unmarshal([]byte(msgs[0].payload), &unknown) != nil ||
		!strings.HasPrefix(unknown.Error, `unknown device "nobody": it is not in the cloud's device list`) {
		t.Errorf("unknown device: %+v", msgs)
	}
	cmd.err = &cloud.APIError{Kind: cloud.ErrRequest, Endpoint: cloud.EndpointControl, SKU: lamp.SKU, Device: lamp.Device,
		Instance: "brightness", HTTPStatus: 200, Code: 400, Msg: "parameter value out of range"}
	if _, e := outcome(t, b, pub, cmd, lamp, "set/brightness", "50"); e.Error != "control H6072/AA:BB:CC:DD:EE:FF:00:01: brightness: parameter value out of range (code 400)" {
		t.Errorf("the cloud's refusal answered %q", e.Error)
	}
	cmd.err = &scheduler.QuotaError{Err: errors.New("cloud: control: 429")}
	if _, e := outcome(t, b, pub, cmd, lamp, "set/brightness", "50"); strings.Contains(e.Error, "scheduler:") || strings.Contains(e.Error, "cloud:") || e.Code != 429 {
		t.Errorf("a spent quota answered %+v", e)
	}
	for _, err := range []error{scheduler.ErrOverloaded, scheduler.ErrAuthHoldoff, tooLarge(1 << 20),
		fmt.Errorf("scheduler: held (%w)", errors.New("cloud: state: 429; retry")), readFailure{errors.New("poller: read: cloud: timeout")}} {
		got := UserText(err)
		for _, p := range goPrefixes {
			if strings.HasPrefix(got, p) || strings.Contains(got, ": "+p) || strings.Contains(got, "("+p) {
				t.Errorf("UserText(%q) = %q", err, got)
			}
		}
	}
	// A value error is the value language's words, a quoted value and all.
	ve := &capability.ValueError{Category: capability.CategoryRange, Instance: "workMode", Msg: `"cloud: x" is not an option`}
	if got := UserText(ve); got != ve.Error() {
		t.Errorf("UserText(%q) = %q", ve, got)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func mustNormalize(s string) any {
	v, _ := capability.Normalize([]byte(s))
	return v
}
