package cloud

// Decoding the live service's answers: the recorded ones and the odd ones.

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/testkit"
)

// TestFixturesDecode serves every recorded answer and checks what the
// client makes of it.
func TestFixturesDecode(t *testing.T) {
	t.Run("list_devices.json", func(t *testing.T) {
		c, logs := newTestClient(t, answerWith(200, string(testkit.ReadFixture(t, fixtureDir, "list_devices.json"))))
		devs, err := c.ListDevices(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(devs) != 3 || devs[1].SKU != "H605C" {
			t.Fatalf("got %d devices", len(devs))
		}
		var kept bool
		for _, cp := range devs[1].Capabilities {
			kept = kept || cp.Type == "devices.capabilities.dynamic_setting"
		}
		if !kept {
			t.Error("H605C's dynamic_setting capability was dropped; unknown types are kept as reported")
		}
		if w := logs.warnings(t); len(w) != 1 || w[0]["type"] != "devices.capabilities.dynamic_setting" {
			t.Errorf("warnings %v, want one about devices.capabilities.dynamic_setting", w)
		}
	})
	t.Run("list_devices_2.json", func(t *testing.T) {
		c, logs := newTestClient(t, answerWith(200, string(testkit.ReadFixture(t, fixtureDir, "list_devices_2.json"))))
		devs, err := c.ListDevices(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(devs) != 10 {
			t.Fatalf("got %d devices, want 10", len(devs))
		}
		seg, ok := devs[0].Capability(capability.InstanceSegmentedColorRGB)
		f, _ := seg.Parameters.Field("segment")
		if !ok || f.ElementRange == nil || f.ElementRange.Max != 14 || f.Size.Max != 8 {
			t.Errorf("H6072 segment field %+v", f)
		}
		if w := logs.warnings(t); len(w) != 0 {
			t.Errorf("warnings for known types: %v", w)
		}
	})
	t.Run("list_devices_issue4.json", func(t *testing.T) {
		c, logs := newTestClient(t, answerWith(200, string(testkit.ReadFixture(t, fixtureDir, "list_devices_issue4.json"))))
		devs, err := c.ListDevices(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(devs) != 9 || devs[0].Type != "devices.types.fan" {
			t.Fatalf("got %d devices, first of type %q", len(devs), devs[0].Type)
		}
		if _, ok := devs[1].Capability("lackWaterEvent"); !ok {
			t.Error("the humidifier's lackWaterEvent is missing")
		}
		if w := logs.warnings(t); len(w) != 0 {
			t.Errorf("warnings %v, want none (devices.types.fan is known)", w)
		}
	})
	t.Run("get_device_state.json", func(t *testing.T) {
		c, _ := newTestClient(t, answerWith(200, string(testkit.ReadFixture(t, fixtureDir, "get_device_state.json"))))
		st, err := c.State(t.Context(), "H7143", "52:8B:D4:AD:FC:45:5D:FE")
		if err != nil {
			t.Fatal(err)
		}
		if on, known := st.Online(); on || !known {
			t.Errorf("Online() = %v, %v; want false, true", on, known)
		}
		v := st.Values()
		if !capability.Equal(v[capability.InstanceWorkMode], map[string]any{"workMode": int64(3), "modeValue": int64(9)}) {
			t.Errorf("workMode = %#v", v[capability.InstanceWorkMode])
		}
		if _, ok := v[capability.InstanceHumidity]; ok || v[capability.InstanceColorRGB] != int64(16777215) || len(st.Capabilities) != 9 {
			t.Errorf("values %v from %d capabilities", v, len(st.Capabilities))
		}
	})
	t.Run("scenes.json", func(t *testing.T) {
		c, _ := newTestClient(t, answerWith(200, string(testkit.ReadFixture(t, fixtureDir, "scenes.json"))))
		sc, err := c.Scenes(t.Context(), tSKU, "AA:BB:CC:DD:EE:AA:BB:FF")
		if err != nil {
			t.Fatal(err)
		}
		opts := sc.Options()
		if len(opts) != 65 || opts[0].Name != "rainbow B" || !capability.Equal(opts[0].Value, map[string]any{"paramId": int64(11837), "id": int64(7691)}) {
			t.Errorf("%d options, first %+v", len(opts), opts[0])
		}
	})
	t.Run("diy scenes", func(t *testing.T) {
		body := `{"requestId":"x","msg":"success","code":200,"payload":{"sku":"H6072","device":"AA:BB:CC:DD:EE:FF:00:11",
			"capabilities":[{"type":"devices.capabilities.diy_color_setting","instance":"diyScene",
			"parameters":{"dataType":"ENUM","options":[{"name":"Mine","value":8216567}]}}]}}`
		c, _ := newTestClient(t, answerWith(200, body))
		sc, err := c.DIYScenes(t.Context(), tSKU, tDevice)
		if err != nil {
			t.Fatal(err)
		}
		if opts := sc.Options(); len(opts) != 1 || opts[0].Value != int64(8216567) || sc.Capabilities[0].Type != capability.TypeDIYColorSetting {
			t.Errorf("DIY scenes %+v", sc)
		}
	})
}

func TestTolerantAnswers(t *testing.T) {
	t.Run("device list without data is empty", func(t *testing.T) {
		for _, body := range []string{`{"code":200,"message":"success","data":null}`, `{"code":200,"message":"success"}`, `{"code":"200","data":[]}`} {
			c, _ := newTestClient(t, answerWith(200, body))
			devs, err := c.ListDevices(t.Context())
			if err != nil || devs == nil || len(devs) != 0 {
				t.Errorf("%s: %v, %v; want an empty list", body, devs, err)
			}
		}
	})
	t.Run("devices without id, duplicates and bad capabilities", func(t *testing.T) {
		body := `{"code":200,"message":"success","data":[
			{"sku":"H1","device":"D1","capabilities":[{"type":"devices.capabilities.on_off","instance":"powerSwitch"},
			                                          {"type":"devices.capabilities.range"},
			                                          {"type":"devices.capabilities.range","instance":"brightness","parameters":{"range":{"min":"low"}}}]},
			{"sku":"","device":"D2","capabilities":[]},
			{"sku":"H3","capabilities":[]},
			42,
			null,
			{"sku":"H1","device":"D1","capabilities":[]},
			{"sku":"H4","device":"D4"}]}`
		c, logs := newTestClient(t, answerWith(200, body))
		for range 2 {
			devs, err := c.ListDevices(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(devs) != 2 || devs[0].Device != "D1" || devs[1].Device != "D4" {
				t.Fatalf("devices %+v, want D1 and D4", devs)
			}
			if len(devs[0].Capabilities) != 1 || len(devs[0].Problems) != 2 {
				t.Errorf("D1: %d capabilities, problems %q", len(devs[0].Capabilities), devs[0].Problems)
			}
		}
		// Two problems, D2, H3, 42, null (no id) and the duplicate: seven
		// warnings, each once although the list was read twice.
		if w := logs.warnings(t); len(w) != 7 {
			t.Errorf("%d warnings, want 7:\n%s", len(w), logs)
		}
	})
	t.Run("state skips unreadable capabilities", func(t *testing.T) {
		body := `{"code":200,"msg":"success","payload":{"capabilities":[
			{"type":"devices.capabilities.on_off","instance":"powerSwitch","state":{"value":1}},
			{"type":"devices.capabilities.on_off","state":{"value":1}},
			{"type":7,"instance":"x"}]}}`
		c, logs := newTestClient(t, answerWith(200, body))
		st, err := c.State(t.Context(), tSKU, tDevice)
		if err != nil {
			t.Fatal(err)
		}
		if st.SKU != tSKU || st.Device != tDevice || len(st.Capabilities) != 1 || st.Values()[capability.InstancePower] != int64(1) {
			t.Errorf("state %+v", st)
		}
		if w := logs.warnings(t); len(w) != 2 {
			t.Errorf("%d warnings, want 2:\n%s", len(w), logs)
		}
	})
	t.Run("device names compare without case", func(t *testing.T) {
		body := `{"code":200,"msg":"success","payload":{"sku":"h6072","device":"aa:bb:cc:dd:ee:ff:00:11","capabilities":[]}}`
		c, _ := newTestClient(t, answerWith(200, body))
		if st, err := c.State(t.Context(), tSKU, tDevice); err != nil || st.Device != tDevice {
			t.Errorf("%+v, %v", st, err)
		}
	})
	t.Run("control success echo", func(t *testing.T) {
		body := `{"requestId":"r1","msg":"success","code":200,"capability":{"type":"devices.capabilities.range","instance":"brightness","value":50,"state":{"status":"success"}}}`
		c, _ := newTestClient(t, answerWith(200, body))
		res, err := c.Control(t.Context(), ControlRequest{SKU: tSKU, Device: tDevice, Type: capability.TypeRange, Instance: capability.InstanceBrightness, Value: 50})
		if err != nil {
			t.Fatal(err)
		}
		if res.RequestID != "r1" || res.Code != 200 || res.Msg != "success" || res.Capability == nil ||
			res.Capability.Value != int64(50) || res.Capability.State.Status != "success" {
			t.Errorf("result %+v, echo %+v", res, res.Capability)
		}
	})
	t.Run("control answer without echo", func(t *testing.T) {
		c, _ := newTestClient(t, answerWith(200, `{"requestId":"r1","msg":"success","code":200}`))
		if res, err := c.Control(t.Context(), ControlRequest{SKU: tSKU, Device: tDevice, Type: capability.TypeOnOff, Instance: capability.InstancePower, Value: 1}); err != nil || res.Capability != nil {
			t.Errorf("%+v, %v", res, err)
		}
	})
}

// TestUnknownTypesLoggedOnce: every distinct unknown type is one warning per
// client, with structured fields, however often and wherever it appears.
func TestUnknownTypesLoggedOnce(t *testing.T) {
	list := `{"code":200,"message":"success","data":[
		{"sku":"H1","device":"D1","type":"devices.types.robot","capabilities":[{"type":"devices.capabilities.teleport","instance":"beam"}]},
		{"sku":"H2","device":"D2","type":"devices.types.robot","capabilities":[{"type":"devices.capabilities.teleport","instance":"beam"},
		                                                                       {"type":"devices.capability.on_off","instance":"powerSwitch"}]},
		{"sku":"H3","device":"D3","type":"device.type.light","capabilities":[]}]}`
	state := `{"code":200,"msg":"success","payload":{"sku":"H6072","device":"AA:BB:CC:DD:EE:FF:00:11","capabilities":[
		{"type":"devices.capabilities.teleport","instance":"beam","state":{"value":1}},
		{"type":"devices.capabilities.gravity","instance":"g","state":{"value":1}}]}}`
	handler := func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_, _ = io.WriteString(w, list)
			return
		}
		_, _ = io.WriteString(w, state)
	}
	c, logs := newTestClient(t, handler)
	for range 3 {
		devs, err := c.ListDevices(t.Context())
		if err != nil || len(devs) != 3 || devs[2].Type != capability.DeviceLight || devs[1].Capabilities[1].Type != capability.TypeOnOff {
			t.Fatalf("%+v, %v", devs, err)
		}
		if _, err := c.State(t.Context(), tSKU, tDevice); err != nil {
			t.Fatal(err)
		}
	}
	count := map[string]int{}
	for _, w := range logs.warnings(t) {
		typ, _ := w["type"].(string)
		count[typ]++
		if !strings.HasPrefix(w["message"].(string), "unknown ") {
			t.Errorf("warning %v", w)
		}
	}
	want := map[string]int{"devices.types.robot": 1, "devices.capabilities.teleport": 1, "devices.capabilities.gravity": 1}
	if fmt.Sprint(count) != fmt.Sprint(want) {
		t.Errorf("warnings per type %v, want %v:\n%s", count, want, logs)
	}

	// Another client has not warned yet.
	c2, logs2 := newTestClient(t, handler)
	if _, err := c2.ListDevices(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(logs2.warnings(t)); n != 2 {
		t.Errorf("a new client logged %d warnings, want 2", n)
	}
}
