package cloud

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/testkit"
)

// separately decodes each device of a list answer on its own, as ListDevices
// did before devices shared definitions: what readDevices must still give,
// apart from the sharing. Devices that do not decode, have no name or repeat
// one are left out as readDevices leaves them out.
func separately(t testing.TB, body []byte) []capability.Device {
	t.Helper()
	env, err := parseEnvelope(body)
	if err != nil {
		t.Fatal(err)
	}
	var items []json.RawMessage
	if !isNull(env.data) {
		if err := json.Unmarshal(env.data, &items); err != nil {
			t.Fatal(err)
		}
	}
	out := []capability.Device{}
	seen := map[string]bool{}
	for _, raw := range items {
		var d capability.Device
		if err := json.Unmarshal(raw, &d); err != nil || d.SKU == "" || d.Device == "" || seen[d.String()] {
			continue
		}
		seen[d.String()] = true
		out = append(out, d)
	}
	return out
}

func TestDevicesOfOneModelShareDefinitions(t *testing.T) {
	same := `[{"type":"devices.capabilities.on_off","instance":"powerSwitch","parameters":{"dataType":"ENUM","options":[{"name":"on","value":1},{"name":"off","value":0}]}},
		{"type":"devices.capabilities.range","instance":"brightness","parameters":{"dataType":"INTEGER","range":{"min":1,"max":100}}},
		{"type":"devices.capabilities.range"},
		{"type":"devices.capabilities.teleport","instance":"beam"}]`
	other := strings.Replace(same, `"max":100`, `"max":254`, 1)
	body := `{"code":200,"message":"success","data":[
		{"sku":"H1","device":"D1","type":"devices.types.light","capabilities":` + same + `},
		{"sku":"H1","device":"D2","deviceName":"second","type":"device.type.light","capabilities":` + same + `},
		{"sku":"H2","device":"D3","capabilities":` + other + `},
		{"sku":"H1","device":"D4","capabilities":` + same + `}]}`
	c, logs := newTestClient(t, answerWith(200, body))
	devs, err := c.ListDevices(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := separately(t, []byte(body)); !reflect.DeepEqual(devs, want) {
		t.Fatalf("shared decoding\n%+v\nseparate decoding\n%+v", devs, want)
	}
	if len(devs) != 4 || len(devs[0].Capabilities) != 3 || len(devs[0].Problems) != 1 {
		t.Fatalf("devices %+v", devs)
	}
	d1, d2, d3, d4 := devs[0], devs[1], devs[2], devs[3]
	if &d1.Capabilities[0] != &d2.Capabilities[0] || &d1.Capabilities[0] != &d4.Capabilities[0] ||
		d1.Capabilities[1].Parameters != d4.Capabilities[1].Parameters {
		t.Error("devices with the same capabilities JSON do not share one decoding")
	}
	if &d3.Capabilities[0] == &d1.Capabilities[0] || d3.Capabilities[1].Parameters.Range.Max != 254 {
		t.Error("a device with another definition shares the first model's")
	}
	if cap(d1.Capabilities) != len(d1.Capabilities) {
		t.Errorf("shared capabilities have spare capacity %d > %d: an append would write into other devices'", cap(d1.Capabilities), len(d1.Capabilities))
	}
	d1.Problems[0] = "changed"
	if d2.Problems[0] == "changed" {
		t.Error("devices share their Problems slice")
	}
	// Logging is per device as before: each device's problem once, the
	// unknown capability type once for the client.
	var problems, types int
	for _, w := range logs.warnings(t) {
		switch w["message"] {
		case "a capability cannot be decoded; left out":
			problems++
		case "unknown capability type; kept as reported":
			types++
		}
	}
	if problems != 4 || types != 1 {
		t.Errorf("%d problem warnings (want 4, one per device) and %d type warnings (want 1):\n%s", problems, types, logs)
	}
}

// TestSharedDecodingMatchesSeparate: the recorded lists and a generated
// household decode as each device alone would, and devices of a model share.
func TestSharedDecodingMatchesSeparate(t *testing.T) {
	household, models := householdList(t, 3*40)
	bodies := map[string][]byte{"household": household}
	for _, name := range []string{"list_devices.json", "list_devices_2.json", "list_devices_issue4.json"} {
		bodies[name] = testkit.ReadFixture(t, fixtureDir, name)
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			c := fuzzClient(t)
			devs, err := c.readDevices(call{ep: epDevices}, answer{status: 200, header: http.Header{}, body: body})
			if err != nil {
				t.Fatal(err)
			}
			if want := separately(t, body); !reflect.DeepEqual(devs, want) {
				t.Fatalf("the shared decoding differs from the separate one")
			}
			if name != "household" {
				return
			}
			if len(devs) != 3*40 || models > 40 {
				t.Fatalf("%d devices of %d models", len(devs), models)
			}
			for i := models; i < len(devs); i++ {
				if len(devs[i].Capabilities) > 0 && &devs[i].Capabilities[0] != &devs[i%models].Capabilities[0] {
					t.Fatalf("%s and %s are of one model but do not share", devs[i], devs[i%models])
				}
			}
		})
	}
}
