package cloud

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/testkit"

	"github.com/rs/zerolog"
)

// demoDevicesFile is the simulator's demo account: one device of every type.
// Read as a file, not imported: this package's tests import nothing of ours.
const demoDevicesFile = "../cloudsim/demo/devices.json"

// lightStateAnswer is the state answer the live service gives for the first
// H6072 (a segmented light strip) of list_devices_2.json, in the form the
// simulator also sends: online first, then every readable capability in list
// order, "" for what the service never reports (segments, scenes, music).
func lightStateAnswer(tb testing.TB) (sku, device string, body []byte) {
	tb.Helper()
	var list struct {
		Data []capability.Device `json:"data"`
	}
	if err := json.Unmarshal(testkit.ReadFixture(tb, fixtureDir, "list_devices_2.json"), &list); err != nil {
		tb.Fatal(err)
	}
	d := list.Data[0]
	if d.SKU != "H6072" {
		tb.Fatalf("the first device of list_devices_2.json is %s, want H6072", d.SKU)
	}
	values := map[string]any{
		capability.InstancePower: 1, "gradientToggle": 0, capability.InstanceBrightness: 80,
		capability.InstanceColorRGB: 16744192, capability.InstanceColorTemperatureK: 0,
	}
	type state struct {
		Value any `json:"value"`
	}
	type capState struct {
		Type     string `json:"type"`
		Instance string `json:"instance"`
		State    state  `json:"state"`
	}
	caps := []capState{{capability.TypeOnline, capability.InstanceOnline, state{true}}}
	for _, c := range d.Capabilities {
		v, ok := values[c.Instance]
		if !ok {
			v = ""
		}
		caps = append(caps, capState{c.Type, c.Instance, state{v}})
	}
	b, err := json.Marshal(struct {
		RequestID string `json:"requestId"`
		Msg       string `json:"msg"`
		Code      int    `json:"code"`
		Payload   any    `json:"payload"`
	}{"5f0e7c1a-8d3b-4c2e-9a61-2b7d0c4e8f13", "success", 200, struct {
		SKU          string     `json:"sku"`
		Device       string     `json:"device"`
		Capabilities []capState `json:"capabilities"`
	}{d.SKU, d.Device, caps}})
	if err != nil {
		tb.Fatal(err)
	}
	return d.SKU, d.Device, b
}

// BenchmarkDecodeState decodes whole state answers as Client.State does
// after the request: a segmented light and the recorded humidifier.
func BenchmarkDecodeState(b *testing.B) {
	c, err := New(Config{BaseURL: "http://127.0.0.1:1", APIKey: testKey, Logger: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	sku, device, light := lightStateAnswer(b)
	cases := []struct {
		name        string
		sku, device string
		body        []byte
	}{
		{"light-H6072", sku, device, light},
		{"humidifier-fixture", "H7143", "52:8B:D4:AD:FC:45:5D:FE", testkit.ReadFixture(b, fixtureDir, "get_device_state.json")},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			cl := call{ep: epState, sku: tc.sku, device: tc.device}
			a := answer{status: 200, header: http.Header{}, body: tc.body}
			b.SetBytes(int64(len(tc.body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.readState(cl, a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// householdList is a device-list answer of n devices cloned in turn from the
// demo account's definitions (and the recorded lists'), each with its own id
// and name: a large household has many devices of few models, whose
// capability definitions the service sends byte for byte the same. Device i
// is of model i%models.
func householdList(tb testing.TB, n int) (body []byte, models int) {
	tb.Helper()
	var defs []map[string]json.RawMessage
	for _, path := range []string{demoDevicesFile, filepath.Join(fixtureDir, "list_devices_2.json"), filepath.Join(fixtureDir, "list_devices_issue4.json")} {
		raw, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		var list struct {
			Data []map[string]json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		defs = append(defs, list.Data...)
	}
	devices := make([]json.RawMessage, 0, n)
	for i := range n {
		d := map[string]json.RawMessage{}
		for k, v := range defs[i%len(defs)] {
			d[k] = v
		}
		d["device"] = json.RawMessage(fmt.Sprintf(`"5A:%02X:%02X:%02X:C0:FF:EE:01"`, i>>16&0xff, i>>8&0xff, i&0xff))
		d["deviceName"] = json.RawMessage(fmt.Sprintf(`"Device %d"`, i))
		b, err := json.Marshal(d)
		if err != nil {
			tb.Fatal(err)
		}
		devices = append(devices, b)
	}
	b, err := json.Marshal(map[string]any{"code": 200, "message": "success", "data": devices})
	if err != nil {
		tb.Fatal(err)
	}
	return b, len(defs)
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestDeviceListLiveHeap reports what a decoded 1000-device list keeps alive
// (run with -v to see the figure) and fails if it grows past a bound well
// above today's, so a change that undoes the sharing of definitions shows.
func TestDeviceListLiveHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap; not in -short")
	}
	c := fuzzClient(t)
	body, models := householdList(t, 1000)
	a := answer{status: 200, header: http.Header{}, body: body}
	before := liveHeap()
	devs, err := c.readDevices(call{ep: epDevices}, a)
	if err != nil {
		t.Fatal(err)
	}
	after := liveHeap()
	runtime.KeepAlive(devs)
	if len(devs) != 1000 {
		t.Fatalf("%d devices, want 1000", len(devs))
	}
	live := int64(after) - int64(before)
	t.Logf("1000 devices of %d models (%d-byte list): %d KB live after decoding", models, len(a.body), live/1024)
	// The bound lies well between the figures with and without shared
	// definitions, so it fails only when devices of a model stop sharing.
	if live > 1536<<10 {
		t.Errorf("the decoded list keeps %d KB alive, want under 1.5 MB: do devices of one model still share their definitions?", live/1024)
	}
}

// BenchmarkDecodeDevices decodes a 1000-device household list.
func BenchmarkDecodeDevices(b *testing.B) {
	c := fuzzClient(b)
	body, _ := householdList(b, 1000)
	a := answer{status: 200, header: http.Header{}, body: body}
	b.SetBytes(int64(len(a.body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.readDevices(call{ep: epDevices}, a); err != nil {
			b.Fatal(err)
		}
	}
}
