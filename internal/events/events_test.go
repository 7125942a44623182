package events

import (
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParse(t *testing.T) {
	live := `{"sku":"H7141","device":"AA:BB","deviceName":"Humidifier","capabilities":[{"type":"devices.capabilities.event","instance":"lackWaterEvent","state":[{"name":"lack","value":1,"message":"Lack of Water"}]}]}`
	cases := []struct {
		name    string
		payload string
		want    []Event
	}{
		{"live shape", live, []Event{{SKU: "H7141", Device: "AA:BB", DeviceName: "Humidifier", Instance: "lackWaterEvent", Name: "lack", Value: int64(1), Message: "Lack of Water"}}},
		{"state as one object", `{"sku":"S","device":"D","capabilities":[{"type":"devices.capability.event","instance":"iceFull","state":{"name":"full","value":2}}]}`,
			[]Event{{SKU: "S", Device: "D", Instance: "iceFull", Name: "full", Value: int64(2)}}},
		{"nameless option named by its value", `{"device":"D","capabilities":[{"type":"devices.capabilities.event","instance":"x","state":[{"value":3}]}]}`,
			[]Event{{Device: "D", Instance: "x", Name: "3", Value: int64(3)}}},
		{"not an event capability", `{"device":"D","capabilities":[{"type":"devices.capabilities.on_off","instance":"powerSwitch","state":[{"value":1}]}]}`, nil},
		{"no device", `{"capabilities":[]}`, nil},
		{"junk", `not json`, nil},
		{"empty", ``, nil},
		{"state junk", `{"device":"D","capabilities":[{"type":"devices.capabilities.event","instance":"x","state":"oops"}]}`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Parse([]byte(c.payload))
			if len(got) != len(c.want) {
				t.Fatalf("Parse = %+v, want %+v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("event %d = %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}

func TestRedactRemovesTheKey(t *testing.T) {
	err := redact(errors.New(`mqtt: subscribe to "GA/k3y-123": refused`), "k3y-123")
	if strings.Contains(err.Error(), "k3y-123") || !strings.Contains(err.Error(), "GA/***") {
		t.Errorf("redact = %v", err)
	}
	if redact(nil, "k") != nil {
		t.Errorf("redact(nil) is not nil")
	}
}
