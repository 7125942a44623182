package lan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"unicode/utf8"
)

// MaxDatagram is the largest datagram either side accepts. A device's scan
// answer is about 250 bytes and a status answer about 120; anything larger
// is not from a device and is dropped unread.
const MaxDatagram = 2048

// The protocol's commands (the "cmd" member of every message).
const (
	CmdScan       = "scan"
	CmdStatus     = "devStatus"
	CmdTurn       = "turn"
	CmdBrightness = "brightness"
	CmdColor      = "colorwc"
)

// Bounds a decoded value must keep to; a datagram outside them is malformed.
const (
	maxIDLen      = 64 // device ids are 23 characters ("1F:80:C5:32:32:36:72:4E")
	maxSKULen     = 32
	maxVersionLen = 32
	// MinKelvin and MaxKelvin bound a white's temperature on the wire; the
	// devices' own ranges (about 2000–9000 K) lie inside. 0 means "colour".
	MinKelvin = 1000
	MaxKelvin = 10000
)

// RGB is a colour as the protocol sends it.
type RGB struct{ R, G, B uint8 }

// Int is the colour as the cloud's colorRgb value: r<<16 | g<<8 | b.
func (c RGB) Int() int64 { return int64(c.R)<<16 | int64(c.G)<<8 | int64(c.B) }

// RGBOf is the colour of a cloud colorRgb value (0–0xFFFFFF).
func RGBOf(v int64) RGB { return RGB{uint8(v >> 16), uint8(v >> 8), uint8(v)} }

// Status is a device's status answer. On is always present; the other
// members only when their Has flag is set (a device may leave them out).
type Status struct {
	On            bool
	Brightness    int // 0–100
	HasBrightness bool
	Color         RGB
	HasColor      bool
	Kelvin        int // 0 while a colour shows, else MinKelvin–MaxKelvin
	HasKelvin     bool
}

// ScanAnswer is a device's answer to a scan.
type ScanAnswer struct {
	Device string     // the cloud's device id
	SKU    string     // the model
	IP     netip.Addr // the address the device names; may be invalid (left out)

	BLEVersionHard, BLEVersionSoft   string
	WiFiVersionHard, WiFiVersionSoft string
}

// Answer is a decoded datagram sent to the client: a scan answer or a
// status answer (Cmd says which).
type Answer struct {
	Cmd    string // CmdScan or CmdStatus
	Scan   ScanAnswer
	Status Status
}

// Command is a control message for one device: turn, brightness or colorwc.
// Build it with Turn, Brightness, Color or White.
type Command struct {
	Cmd    string
	Value  int // turn: 0 or 1; brightness: 1–100
	Color  RGB // colorwc
	Kelvin int // colorwc: 0 shows Color, else this white
}

// Turn switches a device on or off.
func Turn(on bool) Command {
	if on {
		return Command{Cmd: CmdTurn, Value: 1}
	}
	return Command{Cmd: CmdTurn, Value: 0}
}

// Brightness sets the brightness in percent (1–100).
func Brightness(pct int) Command { return Command{Cmd: CmdBrightness, Value: pct} }

// Color shows a colour.
func Color(c RGB) Command { return Command{Cmd: CmdColor, Color: c} }

// White shows a white of that temperature (MinKelvin–MaxKelvin).
func White(kelvin int) Command { return Command{Cmd: CmdColor, Kelvin: kelvin} }

// Validate says whether the command can go on the wire.
func (c Command) Validate() error {
	switch c.Cmd {
	case CmdTurn:
		if c.Value != 0 && c.Value != 1 {
			return fmt.Errorf("lan: turn value %d: must be 0 or 1", c.Value)
		}
	case CmdBrightness:
		if c.Value < 1 || c.Value > 100 {
			return fmt.Errorf("lan: brightness %d: must be 1–100", c.Value)
		}
	case CmdColor:
		if c.Kelvin != 0 && (c.Kelvin < MinKelvin || c.Kelvin > MaxKelvin) {
			return fmt.Errorf("lan: colour temperature %d K: must be 0 (colour) or %d–%d", c.Kelvin, MinKelvin, MaxKelvin)
		}
	default:
		return fmt.Errorf("lan: unknown command %q: use turn, brightness or colorwc", c.Cmd)
	}
	return nil
}

// AppendScan appends the scan request.
func AppendScan(dst []byte) []byte {
	return append(dst, `{"msg":{"cmd":"scan","data":{"account_topic":"reserve"}}}`...)
}

// AppendStatusRequest appends the status request.
func AppendStatusRequest(dst []byte) []byte {
	return append(dst, `{"msg":{"cmd":"devStatus","data":{}}}`...)
}

// AppendCommand appends a control message; the command must be valid.
func AppendCommand(dst []byte, c Command) []byte {
	dst = append(dst, `{"msg":{"cmd":"`...)
	dst = append(dst, c.Cmd...)
	dst = append(dst, `","data":{`...)
	switch c.Cmd {
	case CmdColor:
		dst = appendRGB(append(dst, `"color":`...), c.Color)
		dst = strconv.AppendInt(append(dst, `,"colorTemInKelvin":`...), int64(c.Kelvin), 10)
	default:
		dst = strconv.AppendInt(append(dst, `"value":`...), int64(c.Value), 10)
	}
	return append(dst, "}}}"...)
}

func appendRGB(dst []byte, c RGB) []byte {
	dst = strconv.AppendUint(append(dst, `{"r":`...), uint64(c.R), 10)
	dst = strconv.AppendUint(append(dst, `,"g":`...), uint64(c.G), 10)
	dst = strconv.AppendUint(append(dst, `,"b":`...), uint64(c.B), 10)
	return append(dst, '}')
}

// AppendStatus appends a device's status answer (the simulator's side).
func AppendStatus(dst []byte, s Status) []byte {
	on := 0
	if s.On {
		on = 1
	}
	dst = strconv.AppendInt(append(dst, `{"msg":{"cmd":"devStatus","data":{"onOff":`...), int64(on), 10)
	if s.HasBrightness {
		dst = strconv.AppendInt(append(dst, `,"brightness":`...), int64(s.Brightness), 10)
	}
	if s.HasColor {
		dst = appendRGB(append(dst, `,"color":`...), s.Color)
	}
	if s.HasKelvin {
		dst = strconv.AppendInt(append(dst, `,"colorTemInKelvin":`...), int64(s.Kelvin), 10)
	}
	return append(dst, "}}}"...)
}

// scanAnswerJSON is the scan answer's data on the wire.
type scanAnswerJSON struct {
	IP              string `json:"ip,omitempty"`
	Device          string `json:"device"`
	SKU             string `json:"sku"`
	BLEVersionHard  string `json:"bleVersionHard,omitempty"`
	BLEVersionSoft  string `json:"bleVersionSoft,omitempty"`
	WiFiVersionHard string `json:"wifiVersionHard,omitempty"`
	WiFiVersionSoft string `json:"wifiVersionSoft,omitempty"`
}

// AppendScanAnswer appends a device's scan answer (the simulator's side).
func AppendScanAnswer(dst []byte, a ScanAnswer) []byte {
	data := scanAnswerJSON{Device: a.Device, SKU: a.SKU, BLEVersionHard: a.BLEVersionHard,
		BLEVersionSoft: a.BLEVersionSoft, WiFiVersionHard: a.WiFiVersionHard, WiFiVersionSoft: a.WiFiVersionSoft}
	if a.IP.IsValid() {
		data.IP = a.IP.String()
	}
	b, err := json.Marshal(map[string]any{"msg": map[string]any{"cmd": CmdScan, "data": data}})
	if err != nil { // strings and a struct of strings always marshal
		panic(err)
	}
	return append(dst, b...)
}

// ErrMalformed is wrapped by every decoding error; ErrOversized by those
// of datagrams over MaxDatagram.
var (
	ErrMalformed  = errors.New("malformed datagram")
	ErrOversized  = errors.New("oversized datagram")
	errNotForUs   = errors.New("not an answer")
	errNotRequest = errors.New("not a request")
)

func malformed(format string, args ...any) error {
	return fmt.Errorf("lan: %w: "+format, append([]any{ErrMalformed}, args...)...)
}

// envelope is {"msg":{"cmd":…,"data":…}}.
type envelope struct {
	Msg *struct {
		Cmd  *string         `json:"cmd"`
		Data json.RawMessage `json:"data"`
	} `json:"msg"`
}

// parseEnvelope checks the size and the envelope, and returns the command
// and its data object.
func parseEnvelope(b []byte) (string, json.RawMessage, error) {
	if len(b) > MaxDatagram {
		return "", nil, fmt.Errorf("lan: %w: %d bytes (at most %d)", ErrOversized, len(b), MaxDatagram)
	}
	if !utf8.Valid(b) || !json.Valid(b) {
		return "", nil, malformed("not JSON")
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return "", nil, malformed("%v", err)
	}
	if env.Msg == nil || env.Msg.Cmd == nil {
		return "", nil, malformed(`no "msg" with a "cmd"`)
	}
	data := bytes.TrimSpace(env.Msg.Data)
	if len(data) == 0 || data[0] != '{' {
		return "", nil, malformed(`%s: "data" is not an object`, *env.Msg.Cmd)
	}
	return *env.Msg.Cmd, data, nil
}

// DecodeAnswer decodes a scan or status answer. Anything else, including
// another client's requests, is an error wrapping ErrMalformed or
// ErrOversized.
func DecodeAnswer(b []byte) (Answer, error) {
	cmd, data, err := parseEnvelope(b)
	if err != nil {
		return Answer{}, err
	}
	switch cmd {
	case CmdScan:
		a, err := decodeScanAnswer(data)
		return Answer{Cmd: CmdScan, Scan: a}, err
	case CmdStatus:
		s, err := decodeStatus(data)
		return Answer{Cmd: CmdStatus, Status: s}, err
	}
	return Answer{}, malformed("%w: cmd %.32q", errNotForUs, cmd)
}

func decodeScanAnswer(data json.RawMessage) (ScanAnswer, error) {
	var w struct {
		IP              *string `json:"ip"`
		Device          *string `json:"device"`
		SKU             *string `json:"sku"`
		BLEVersionHard  *string `json:"bleVersionHard"`
		BLEVersionSoft  *string `json:"bleVersionSoft"`
		WiFiVersionHard *string `json:"wifiVersionHard"`
		WiFiVersionSoft *string `json:"wifiVersionSoft"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return ScanAnswer{}, malformed("scan answer: %v", err)
	}
	var a ScanAnswer
	var err error
	if a.Device, err = token("device", w.Device, maxIDLen, true); err != nil {
		return ScanAnswer{}, err
	}
	if a.SKU, err = token("sku", w.SKU, maxSKULen, true); err != nil {
		return ScanAnswer{}, err
	}
	if w.IP != nil && *w.IP != "" {
		ip, perr := netip.ParseAddr(*w.IP)
		if perr != nil || ip.Zone() != "" {
			return ScanAnswer{}, malformed("scan answer: ip %.64q is not an address", *w.IP)
		}
		a.IP = ip.Unmap()
	}
	for _, f := range []struct {
		name string
		in   *string
		out  *string
	}{
		{"bleVersionHard", w.BLEVersionHard, &a.BLEVersionHard}, {"bleVersionSoft", w.BLEVersionSoft, &a.BLEVersionSoft},
		{"wifiVersionHard", w.WiFiVersionHard, &a.WiFiVersionHard}, {"wifiVersionSoft", w.WiFiVersionSoft, &a.WiFiVersionSoft},
	} {
		if *f.out, err = token(f.name, f.in, maxVersionLen, false); err != nil {
			return ScanAnswer{}, err
		}
	}
	return a, nil
}

// token checks a string member: printable ASCII without spaces or quotes,
// at most max bytes, present (and not empty) when required.
func token(name string, s *string, max int, required bool) (string, error) {
	if s == nil || *s == "" {
		if required {
			return "", malformed("scan answer: no %s", name)
		}
		return "", nil
	}
	if len(*s) > max {
		return "", malformed("scan answer: %s is %d bytes (at most %d)", name, len(*s), max)
	}
	for i := 0; i < len(*s); i++ {
		if c := (*s)[i]; c <= ' ' || c > '~' || c == '"' || c == '\\' {
			return "", malformed("scan answer: %s %.64q has a character outside printable ASCII", name, *s)
		}
	}
	return *s, nil
}

func decodeStatus(data json.RawMessage) (Status, error) {
	var w struct {
		OnOff      json.RawMessage `json:"onOff"`
		Brightness json.RawMessage `json:"brightness"`
		Color      json.RawMessage `json:"color"`
		Kelvin     json.RawMessage `json:"colorTemInKelvin"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return Status{}, malformed("status answer: %v", err)
	}
	var s Status
	switch string(w.OnOff) {
	case "1", "true":
		s.On = true
	case "0", "false":
	case "":
		return Status{}, malformed("status answer: no onOff")
	default:
		return Status{}, malformed("status answer: onOff %.16s is not 0 or 1", w.OnOff)
	}
	var err error
	if w.Brightness != nil {
		if s.Brightness, err = intIn("brightness", w.Brightness, 0, 100); err != nil {
			return Status{}, err
		}
		s.HasBrightness = true
	}
	if w.Color != nil {
		if s.Color, err = decodeRGB(w.Color); err != nil {
			return Status{}, err
		}
		s.HasColor = true
	}
	if w.Kelvin != nil {
		if s.Kelvin, err = intIn("colorTemInKelvin", w.Kelvin, 0, MaxKelvin); err != nil {
			return Status{}, err
		}
		if s.Kelvin != 0 && s.Kelvin < MinKelvin {
			return Status{}, malformed("colorTemInKelvin %d: must be 0 or %d–%d", s.Kelvin, MinKelvin, MaxKelvin)
		}
		s.HasKelvin = true
	}
	return s, nil
}

func decodeRGB(raw json.RawMessage) (RGB, error) {
	var w struct{ R, G, B json.RawMessage }
	if err := json.Unmarshal(raw, &w); err != nil {
		return RGB{}, malformed("color: %v", err)
	}
	var c RGB
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		out  *uint8
	}{{"color.r", w.R, &c.R}, {"color.g", w.G, &c.G}, {"color.b", w.B, &c.B}} {
		v, err := intIn(f.name, f.raw, 0, 255)
		if err != nil {
			return RGB{}, err
		}
		*f.out = uint8(v)
	}
	return c, nil
}

// intIn reads a JSON integer (no fraction, no exponent, no string) in
// [lo, hi].
func intIn(name string, raw json.RawMessage, lo, hi int) (int, error) {
	if len(raw) == 0 {
		return 0, malformed("no %s", name)
	}
	if len(raw) > 8 {
		return 0, malformed("%s %.16s… is not a small integer", name, raw)
	}
	v, err := strconv.Atoi(string(raw))
	if err != nil || raw[0] == '+' {
		return 0, malformed("%s %.16s is not an integer", name, raw)
	}
	if v < lo || v > hi {
		return 0, malformed("%s %d is outside %d–%d", name, v, lo, hi)
	}
	return v, nil
}

// Request is a decoded datagram sent to a device (the simulator's side).
type Request struct {
	Cmd          string  // CmdScan, CmdStatus, or a command's
	AccountTopic string  // scan
	Command      Command // turn, brightness, colorwc
}

// DecodeRequest decodes a datagram sent to a device, as strictly as
// DecodeAnswer.
func DecodeRequest(b []byte) (Request, error) {
	cmd, data, err := parseEnvelope(b)
	if err != nil {
		return Request{}, err
	}
	r := Request{Cmd: cmd}
	switch cmd {
	case CmdScan:
		var w struct {
			AccountTopic *string `json:"account_topic"`
		}
		if err := json.Unmarshal(data, &w); err != nil || w.AccountTopic == nil || *w.AccountTopic != "reserve" {
			return Request{}, malformed(`scan: account_topic must be "reserve"`)
		}
		r.AccountTopic = *w.AccountTopic
	case CmdStatus:
	case CmdTurn, CmdBrightness:
		var w struct{ Value json.RawMessage }
		if err := json.Unmarshal(data, &w); err != nil {
			return Request{}, malformed("%s: %v", cmd, err)
		}
		v, err := intIn(cmd+" value", w.Value, 0, 100)
		if err != nil {
			return Request{}, err
		}
		r.Command = Command{Cmd: cmd, Value: v}
	case CmdColor:
		var w struct {
			Color  json.RawMessage `json:"color"`
			Kelvin json.RawMessage `json:"colorTemInKelvin"`
		}
		if err := json.Unmarshal(data, &w); err != nil {
			return Request{}, malformed("colorwc: %v", err)
		}
		c, err := decodeRGB(w.Color)
		if err != nil {
			return Request{}, err
		}
		k, err := intIn("colorTemInKelvin", w.Kelvin, 0, MaxKelvin)
		if err != nil {
			return Request{}, err
		}
		r.Command = Command{Cmd: CmdColor, Color: c, Kelvin: k}
	default:
		return Request{}, malformed("%w: cmd %.32q", errNotRequest, cmd)
	}
	if r.Command.Cmd != "" {
		if err := r.Command.Validate(); err != nil {
			return Request{}, malformed("%v", err)
		}
	}
	return r, nil
}
