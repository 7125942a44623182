package cloud

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"testing"
)

// A state read gives its answer's buffer back for the next answer
// (answer.release): a state already handed out must keep every string and
// value it had while later answers are read into the same memory.
func TestStatesSurviveTheReuseOfTheirBuffers(t *testing.T) {
	answers := map[string]string{
		// plain
		"A1": `{"code":200,"msg":"success","payload":{"sku":"H6008","device":"A1","capabilities":[
			{"type":"devices.capabilities.online","instance":"online","state":{"value":true}},
			{"type":"devices.capabilities.range","instance":"brightness","state":{"value":77}},
			{"type":"devices.capabilities.color_setting","instance":"colorRgb","state":{"value":16711935}},
			{"type":"devices.capabilities.work_mode","instance":"workMode","state":{"value":{"workMode":1,"modeValue":2}}},
			{"type":"devices.capabilities.property","instance":"note","state":{"value":"kitchen lamp"}}]}}`,
		// escapes in names and values
		"B2": `{"code":200,"msg":"success","payload":{"sku":"H7131","device":"B2","capabilities":[
			{"type":"devices.capabilities.on_off","instance":"power\u0053witch","state":{"value":0}},
			{"type":"devices.capabilities.property","instance":"label","state":{"value":"heater \u00e9t\u00e9"}}]}}`,
		// a different answer of the same shape, to overwrite the buffers
		"C3": `{"code":200,"msg":"success","payload":{"sku":"H6008","device":"C3","capabilities":[
			{"type":"devices.capabilities.online","instance":"zzzzzz","state":{"value":false}},
			{"type":"devices.capabilities.range","instance":"xxxxxxxxxx","state":{"value":1}},
			{"type":"devices.capabilities.color_setting","instance":"yyyyyyyy","state":{"value":0}},
			{"type":"devices.capabilities.work_mode","instance":"wwwwwwww","state":{"value":{"qqqqqqqq":9,"rrrrrrrrr":9}}},
			{"type":"devices.capabilities.property","instance":"vvvv","state":{"value":"############"}}]}}`,
	}
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Payload struct{ Device string } `json:"payload"`
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &req); err != nil {
			t.Errorf("request body %s: %v", b, err)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answers[req.Payload.Device])
	})
	ctx := context.Background()
	read := func(sku, dev string) DeviceState {
		t.Helper()
		st, err := c.State(ctx, sku, dev)
		if err != nil {
			t.Fatalf("State(%s): %v", dev, err)
		}
		return st
	}
	a, b := read("H6008", "A1"), read("H7131", "B2")
	// What they are now, deeply copied (by value through fmt).
	wantA, wantB := fmt.Sprintf("%#v", a), fmt.Sprintf("%#v", b)
	if len(a.Capabilities) != 5 || len(b.Capabilities) != 2 || b.Capabilities[0].Instance != "powerSwitch" {
		t.Fatalf("the states read are not the answers: %s\n%s", wantA, wantB)
	}
	for range 50 {
		read("H6008", "C3")
	}
	if got := fmt.Sprintf("%#v", a); got != wantA {
		t.Errorf("a state changed when later answers were read:\nwas %s\nnow %s", wantA, got)
	}
	if got := fmt.Sprintf("%#v", b); got != wantB {
		t.Errorf("a state with escapes changed when later answers were read:\nwas %s\nnow %s", wantB, got)
	}
	if again := read("H6008", "A1"); !reflect.DeepEqual(again, a) {
		t.Errorf("the same answer read again decodes differently:\n%#v\n%#v", again, a)
	}
}
