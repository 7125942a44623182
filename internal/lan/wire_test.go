package lan

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestAppendRequests(t *testing.T) {
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"scan", AppendScan(nil), `{"msg":{"cmd":"scan","data":{"account_topic":"reserve"}}}`},
		{"status", AppendStatusRequest(nil), `{"msg":{"cmd":"devStatus","data":{}}}`},
		{"on", AppendCommand(nil, Turn(true)), `{"msg":{"cmd":"turn","data":{"value":1}}}`},
		{"off", AppendCommand(nil, Turn(false)), `{"msg":{"cmd":"turn","data":{"value":0}}}`},
		{"brightness", AppendCommand(nil, Brightness(40)), `{"msg":{"cmd":"brightness","data":{"value":40}}}`},
		{"colour", AppendCommand(nil, Color(RGB{255, 136, 0})),
			`{"msg":{"cmd":"colorwc","data":{"color":{"r":255,"g":136,"b":0},"colorTemInKelvin":0}}}`},
		{"white", AppendCommand(nil, White(2700)),
			`{"msg":{"cmd":"colorwc","data":{"color":{"r":0,"g":0,"b":0},"colorTemInKelvin":2700}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if string(tt.got) != tt.want {
				t.Errorf("got  %s\nwant %s", tt.got, tt.want)
			}
			// What the client sends, a device reads back.
			if _, err := DecodeRequest(tt.got); err != nil {
				t.Errorf("DecodeRequest: %v", err)
			}
		})
	}
}

func TestDecodeAnswer(t *testing.T) {
	scan := `{"msg":{"cmd":"scan","data":{"ip":"192.168.1.23","device":"1F:80:C5:32:32:36:72:4E","sku":"H6076",` +
		`"bleVersionHard":"3.01.01","bleVersionSoft":"1.04.06","wifiVersionHard":"1.00.10","wifiVersionSoft":"1.02.11"}}}`
	a, err := DecodeAnswer([]byte(scan))
	if err != nil {
		t.Fatal(err)
	}
	want := ScanAnswer{Device: "1F:80:C5:32:32:36:72:4E", SKU: "H6076", IP: netip.MustParseAddr("192.168.1.23"),
		BLEVersionHard: "3.01.01", BLEVersionSoft: "1.04.06", WiFiVersionHard: "1.00.10", WiFiVersionSoft: "1.02.11"}
	if a.Cmd != CmdScan || a.Scan != want {
		t.Errorf("scan answer: got %+v, want %+v", a, want)
	}

	status := `{"msg":{"cmd":"devStatus","data":{"onOff":1,"brightness":40,"color":{"r":255,"g":136,"b":0},"colorTemInKelvin":0}}}`
	a, err = DecodeAnswer([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	wantS := Status{On: true, Brightness: 40, HasBrightness: true, Color: RGB{255, 136, 0}, HasColor: true, HasKelvin: true}
	if a.Cmd != CmdStatus || a.Status != wantS {
		t.Errorf("status answer: got %+v, want %+v", a, wantS)
	}
	// What a device sends, the client reads back.
	if got, err := DecodeAnswer(AppendStatus(nil, wantS)); err != nil || got.Status != wantS {
		t.Errorf("status round trip: %+v, %v", got.Status, err)
	}
	if got, err := DecodeAnswer(AppendScanAnswer(nil, want)); err != nil || got.Scan != want {
		t.Errorf("scan answer round trip: %+v, %v", got.Scan, err)
	}
}

func TestDecodeAnswerTolerates(t *testing.T) {
	tests := map[string]string{
		"no ip (newer firmware)": `{"msg":{"cmd":"scan","data":{"device":"AA:BB","sku":"H6008"}}}`,
		"extra members":          `{"msg":{"cmd":"scan","data":{"device":"AA:BB","sku":"H6008","pactCode":1}},"x":2}`,
		"onOff as a boolean":     `{"msg":{"cmd":"devStatus","data":{"onOff":true}}}`,
		"only onOff":             `{"msg":{"cmd":"devStatus","data":{"onOff":0}}}`,
		"white":                  `{"msg":{"cmd":"devStatus","data":{"onOff":1,"brightness":100,"colorTemInKelvin":9000}}}`,
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeAnswer([]byte(in)); err != nil {
				t.Errorf("refused: %v", err)
			}
		})
	}
}

func TestDecodeAnswerRefuses(t *testing.T) {
	tests := map[string]string{
		"empty":               ``,
		"not JSON":            `hello`,
		"truncated":           `{"msg":{"cmd":"devStatus","data":{"onOff":1}`,
		"no msg":              `{"cmd":"devStatus","data":{"onOff":1}}`,
		"msg not an object":   `{"msg":[1]}`,
		"no cmd":              `{"msg":{"data":{"onOff":1}}}`,
		"data not an object":  `{"msg":{"cmd":"devStatus","data":[1]}}`,
		"a request":           `{"msg":{"cmd":"turn","data":{"value":1}}}`,
		"scan request":        `{"msg":{"cmd":"devStatus","data":{}}}`,
		"onOff 2":             `{"msg":{"cmd":"devStatus","data":{"onOff":2}}}`,
		"onOff string":        `{"msg":{"cmd":"devStatus","data":{"onOff":"1"}}}`,
		"brightness 101":      `{"msg":{"cmd":"devStatus","data":{"onOff":1,"brightness":101}}}`,
		"brightness -1":       `{"msg":{"cmd":"devStatus","data":{"onOff":1,"brightness":-1}}}`,
		"brightness fraction": `{"msg":{"cmd":"devStatus","data":{"onOff":1,"brightness":40.5}}}`,
		"brightness exponent": `{"msg":{"cmd":"devStatus","data":{"onOff":1,"brightness":4e1}}}`,
		"brightness null":     `{"msg":{"cmd":"devStatus","data":{"onOff":1,"brightness":null}}}`,
		"colour 256":          `{"msg":{"cmd":"devStatus","data":{"onOff":1,"color":{"r":256,"g":0,"b":0}}}}`,
		"colour member gone":  `{"msg":{"cmd":"devStatus","data":{"onOff":1,"color":{"r":1,"g":0}}}}`,
		"kelvin 500":          `{"msg":{"cmd":"devStatus","data":{"onOff":1,"colorTemInKelvin":500}}}`,
		"kelvin huge":         `{"msg":{"cmd":"devStatus","data":{"onOff":1,"colorTemInKelvin":99999999999}}}`,
		"scan without id":     `{"msg":{"cmd":"scan","data":{"sku":"H6008"}}}`,
		"scan id with space":  `{"msg":{"cmd":"scan","data":{"device":"AA BB","sku":"H6008"}}}`,
		"scan id too long":    `{"msg":{"cmd":"scan","data":{"device":"` + strings.Repeat("A", 65) + `","sku":"H6008"}}}`,
		"scan bad ip":         `{"msg":{"cmd":"scan","data":{"device":"AA","sku":"H6008","ip":"1.2.3"}}}`,
		"scan ip number":      `{"msg":{"cmd":"scan","data":{"device":"AA","sku":"H6008","ip":17}}}`,
		"invalid UTF-8":       "{\"msg\":{\"cmd\":\"scan\",\"data\":{\"device\":\"A\xff\",\"sku\":\"H6008\"}}}",
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeAnswer([]byte(in))
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("got %v, want an error wrapping ErrMalformed", err)
			}
		})
	}
	big := `{"msg":{"cmd":"devStatus","data":{"onOff":1,"pad":"` + strings.Repeat("x", MaxDatagram) + `"}}}`
	if _, err := DecodeAnswer([]byte(big)); !errors.Is(err, ErrOversized) {
		t.Errorf("oversized: got %v, want ErrOversized", err)
	}
}

func TestDecodeRequestRefuses(t *testing.T) {
	tests := map[string]string{
		"scan without reserve": `{"msg":{"cmd":"scan","data":{"account_topic":"x"}}}`,
		"turn 2":               `{"msg":{"cmd":"turn","data":{"value":2}}}`,
		"brightness 0":         `{"msg":{"cmd":"brightness","data":{"value":0}}}`,
		"kelvin 500":           `{"msg":{"cmd":"colorwc","data":{"color":{"r":0,"g":0,"b":0},"colorTemInKelvin":500}}}`,
		"colorwc no colour":    `{"msg":{"cmd":"colorwc","data":{"colorTemInKelvin":2700}}}`,
		"unknown command":      `{"msg":{"cmd":"ptReal","data":{}}}`,
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeRequest([]byte(in)); !errors.Is(err, ErrMalformed) {
				t.Errorf("got %v, want an error wrapping ErrMalformed", err)
			}
		})
	}
}
