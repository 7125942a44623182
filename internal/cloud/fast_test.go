package cloud

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// stateCase is a state answer for the differential tests, about
// fuzzSKU/fuzzDevice, and whether the fast path must answer it (status 200).
type stateCase struct {
	name string
	body string
	fast bool
}

const plainCap = `{"type":"devices.capabilities.on_off","instance":"powerSwitch","state":{"value":1}}`

func statePayload(caps ...string) string {
	return `"payload":{"sku":"H7143","device":"52:8B:D4:AD:FC:45:5D:FE","capabilities":[` + strings.Join(caps, ",") + `]}`
}

// stateCases are answers the fast path must read as the robust decoding
// does, and odd ones it must leave to the robust decoding: case variants and
// repeats of the members it reads, which a map and a struct read
// differently, codes that are not the plain number 200, capabilities the
// robust decoding skips.
var stateCases = []stateCase{
	{"plain", `{"code":200,"msg":"success",` + statePayload(plainCap) + `}`, true},
	{"no capabilities", `{"code":200,` + statePayload() + `}`, true},
	{"capabilities null", `{"code":200,"payload":{"capabilities":null}}`, true},
	{"payload without names", `{"code":200,"payload":{"capabilities":[` + plainCap + `]}}`, true},
	{"empty payload", `{"code":200,"payload":{}}`, true},
	{"names in other case", `{"code":200,"payload":{"sku":"h7143","device":"52:8b:d4:ad:fc:45:5d:fe"}}`, true},
	{"payload before code, indented", "{\n \"payload\": {\n  \"capabilities\": [\n   " + plainCap + "\n  ]\n },\n \"code\": 200\n}", true},
	{"state missing, null, value null", `{"code":200,` + statePayload(
		`{"type":"devices.capabilities.range","instance":"a"}`,
		`{"type":"devices.capabilities.range","instance":"b","state":null}`,
		`{"type":"devices.capabilities.range","instance":"c","state":{"value":null}}`,
		`{"type":"devices.capabilities.range","instance":"d","state":{}}`) + `}`, true},
	{"every kind of value", `{"code":200,` + statePayload(
		`{"type":"devices.capabilities.online","instance":"online","state":{"value":false}}`,
		`{"type":"devices.capabilities.range","instance":"humidity","state":{"value":""}}`,
		`{"type":"devices.capabilities.property","instance":"t","state":{"value":21.5}}`,
		`{"type":"devices.capabilities.property","instance":"big","state":{"value":123456789012345678901234567890}}`,
		`{"type":"devices.capabilities.property","instance":"i19","state":{"value":-9223372036854775808}}`,
		`{"type":"devices.capabilities.property","instance":"exp","state":{"value":1e3}}`,
		`{"type":"devices.capabilities.work_mode","instance":"workMode","state":{"value":{"workMode":3,"modeValue":9}}}`,
		`{"type":"devices.capabilities.x","instance":"list","state":{"value":[1,"a\"b",{"c":[null,true]}]}}`,
		`{"type":"devices.capabilities.x","instance":"escaped","state":{"value":"caf\u00e9 \"x\""}}`,
		`{"type":"devices.capabilities.x","instance":"utf8","state":{"value":"café ✓"}}`,
		`{"type":"devices.capabilities.x","instance":"bad utf8","state":{"value":"a`+"\xff"+`b"}}`,
		`{"type":"devices.capabilities.x","instance":"spaces","state":{"value": 7 }}`) + `}`, true},
	{"type spellings and unknown types", `{"code":200,` + statePayload(
		`{"type":"devices.capability.on_off","instance":"powerSwitch","state":{"value":1}}`,
		`{"type":"device.capabilities.temperature_range","instance":"targetTemperature","state":{"value":{"temperature":22,"unit":"Celsius"}}}`,
		`{"type":"devices.capabilities.teleport","instance":"beam","state":{"value":1}}`,
		`{"instance":"untyped","state":{"value":1}}`) + `}`, true},
	{"other members anywhere", `{"requestId":"r","msg":5,"MSG":"x","message":{"a":1},"data":{"code":1,"payload":2},"code":200,` +
		`"payload":{"extra":[1,2],"sku":"H7143","capabilities":[{"instance":"x","state":{"value":1,"other":2},"more":"things"}]}}`, true},
	{"members of the struct levels in other case", `{"code":200,"payload":{"SKU":"H7143","Capabilities":[` +
		`{"TYPE":"devices.capabilities.on_off","Instance":"powerSwitch","State":{"VALUE":1}}]}}`, false},
	{"value repeated", `{"code":200,` + statePayload(`{"instance":"x","state":{"value":1,"value":2}}`) + `}`, false},
	{"value repeated with null", `{"code":200,` + statePayload(`{"instance":"x","state":{"value":1,"Value":null}}`) + `}`, false},
	{"names repeated", `{"code":200,"payload":{"sku":"H1","sku":"H7143","capabilities":[{"instance":"a","instance":"b","type":"x","type":null}]}}`, false},
	{"light-H6072", "", true}, // filled in from the fixtures

	{"code in other case", `{"Code":200,` + statePayload(plainCap) + `}`, false},
	{"code twice", `{"code":400,"code":200,` + statePayload(plainCap) + `}`, false},
	{"code and a case variant", `{"code":200,"CODE":400,` + statePayload(plainCap) + `}`, false},
	{"code with an escape", `{"c\u006fde":200,` + statePayload(plainCap) + `}`, false},
	{"payload twice, once with an escape", `{"code":200,"payload":{"capabilities":[` + plainCap + `]},"paylo\u0061d":null}`, false},
	{"payload in other case", `{"code":200,"Payload":{"capabilities":[` + plainCap + `]}}`, false},
	{"payload twice", `{"code":200,` + statePayload(plainCap) + `,"payload":{"capabilities":[]}}`, false},
	{"payload twice, second null", `{"code":200,` + statePayload(plainCap) + `,"payload":null}`, false},
	{"payload twice, second partial", `{"code":200,` + statePayload(plainCap) + `,"payload":{"sku":"H7143"}}`, false},
	{"capabilities twice", `{"code":200,"payload":{"capabilities":[` + plainCap + `],"capabilities":[{"instance":"y"}]}}`, false},
	{"capabilities and a case variant", `{"code":200,"payload":{"capabilities":[` + plainCap + `],"CAPABILITIES":[{"instance":"y"}]}}`, false},
	{"state twice", `{"code":200,` + statePayload(`{"instance":"x","state":{"value":1},"state":{}}`) + `}`, false},
	{"state with a long s", `{"code":200,` + statePayload(`{"instance":"x","state":{"value":1},"ſtate":null}`) + `}`, false},
	{"escape in a capability's name", `{"code":200,` + statePayload(`{"type":"devices.capabilities.on_off","instance":"power\u0053witch","state":{"value":1}}`) + `}`, false},
	{"code as a string", `{"code":"200",` + statePayload(plainCap) + `}`, false},
	{"code with a fraction", `{"code":200.0,` + statePayload(plainCap) + `}`, false},
	{"code with an exponent", `{"code":2e2,` + statePayload(plainCap) + `}`, false},
	{"code null", `{"code":null,` + statePayload(plainCap) + `}`, false},
	{"no code", `{` + statePayload(plainCap) + `}`, false},
	{"code 400", `{"code":400,"msg":"devices not exist"}`, false},
	{"payload null", `{"code":200,"payload":null}`, false},
	{"no payload", `{"code":200,"msg":"success"}`, false},
	{"payload a list", `{"code":200,"payload":[]}`, false},
	{"sku a number", `{"code":200,"payload":{"sku":7}}`, false},
	{"capabilities an object", `{"code":200,"payload":{"capabilities":{}}}`, false},
	{"another device", `{"code":200,"payload":{"sku":"H7143","device":"11:22:33:44:55:66:77:88"}}`, false},
	{"another sku", `{"code":200,"payload":{"sku":"H6072"}}`, false},
	{"capability without instance", `{"code":200,` + statePayload(plainCap, `{"type":"devices.capabilities.on_off","state":{"value":1}}`) + `}`, false},
	{"capability null", `{"code":200,` + statePayload(plainCap, `null`) + `}`, false},
	{"capability a number", `{"code":200,` + statePayload(plainCap, `42`) + `}`, false},
	{"type a number", `{"code":200,` + statePayload(`{"type":7,"instance":"x"}`) + `}`, false},
	{"state a number", `{"code":200,` + statePayload(`{"instance":"x","state":5}`) + `}`, false},
	{"state a list", `{"code":200,` + statePayload(`{"instance":"x","state":[]}`) + `}`, false},
	{"null", `null`, false},
	{"list", `[]`, false},
	{"string", `"x"`, false},
	{"not JSON", `<html>`, false},
	{"truncated", `{"code":200,"payload":{`, false},
	{"empty", ``, false},
}

// stateCorpus is every state answer the tests know: the cases above, the
// recorded answer, and the seed corpus of FuzzDecodeState (which holds the
// error bodies of client_test.go's tables).
func stateCorpus(tb testing.TB) []stateCase {
	tb.Helper()
	_, _, light := lightStateAnswer(tb)
	out := make([]stateCase, 0, len(stateCases)+32)
	for _, sc := range stateCases {
		if sc.name == "light-H6072" {
			sc.body = strings.NewReplacer("H6072", fuzzSKU).Replace(string(light))
			sc.body = replaceDevice(sc.body)
		}
		out = append(out, sc)
	}
	out = append(out, stateCase{"get_device_state.json", string(readFixtureTB(tb, "get_device_state.json")), true})
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeState")
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		_, arg, ok := strings.Cut(strings.TrimSpace(string(b)), "\n")
		body, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(arg, "[]byte("), ")"))
		if !ok || err != nil {
			tb.Fatalf("corpus file %s: %v", e.Name(), err)
		}
		// Whether the fast path answers is checked for the cases above;
		// for the corpus only that it agrees.
		out = append(out, stateCase{name: "corpus " + e.Name(), body: body, fast: e.Name() == "fixture-get_device_state"})
	}
	return out
}

// replaceDevice puts fuzzDevice in place of the light's device id.
func replaceDevice(body string) string {
	const key = `"device":"`
	i := strings.Index(body, key)
	if i < 0 {
		return body
	}
	j := strings.IndexByte(body[i+len(key):], '"')
	return body[:i+len(key)] + fuzzDevice + body[i+len(key)+j:]
}

// logClient is a client whose warnings go to the returned buffer.
func logClient(tb testing.TB) (*Client, *bytes.Buffer) {
	tb.Helper()
	var logs bytes.Buffer
	c, err := New(Config{BaseURL: "http://127.0.0.1:1", APIKey: fuzzKey, Logger: zerolog.New(&logs)})
	if err != nil {
		tb.Fatal(err)
	}
	return c, &logs
}

// fastAgrees decodes one answer both ways, each with a fresh client, and
// fails unless readState (fast path first) gives exactly what the robust
// decoding alone gives: the same DeviceState, or an error of the same kind,
// code, status and text, and the same log lines. It reports whether the fast
// path answered.
func fastAgrees(tb testing.TB, a answer) bool {
	tb.Helper()
	cl := call{ep: epState, sku: fuzzSKU, device: fuzzDevice}
	probe, probeLogs := logClient(tb)
	_, answered := probe.readStateFast(cl, a)
	if !answered && probeLogs.Len() != 0 {
		tb.Fatalf("status %d: the fast path gave up after logging %s", a.status, probeLogs)
	}
	cf, fastLogs := logClient(tb)
	st, err := cf.readState(cl, a)
	cs, slowLogs := logClient(tb)
	want, wantErr := cs.readStateSlow(cl, a)
	if !reflect.DeepEqual(st, want) {
		tb.Fatalf("status %d, body %q:\nreadState     %#v\nrobust decode %#v", a.status, a.body, st, want)
	}
	if (err == nil) != (wantErr == nil) {
		tb.Fatalf("status %d, body %q: readState error %v, robust decoding error %v", a.status, a.body, err, wantErr)
	}
	if err != nil {
		var ae, we *APIError
		if !errors.As(err, &ae) || !errors.As(wantErr, &we) || ae.Kind != we.Kind || ae.Code != we.Code ||
			ae.HTTPStatus != we.HTTPStatus || ae.Error() != we.Error() {
			tb.Fatalf("status %d, body %q: readState error %#v, robust decoding error %#v", a.status, a.body, err, wantErr)
		}
	}
	if fastLogs.String() != slowLogs.String() {
		tb.Fatalf("status %d, body %q: readState logged\n%s\nthe robust decoding\n%s", a.status, a.body, fastLogs, slowLogs)
	}
	return answered
}

func TestStateFastPathMatchesRobustDecoding(t *testing.T) {
	for _, sc := range stateCorpus(t) {
		t.Run(sc.name, func(t *testing.T) {
			for _, a := range fuzzAnswers([]byte(sc.body)) {
				answered := fastAgrees(t, a)
				if a.status == 200 && answered != sc.fast {
					t.Errorf("the fast path answered: %v, want %v", answered, sc.fast)
				}
				if a.status != 200 && answered {
					t.Errorf("the fast path answered under HTTP %d", a.status)
				}
			}
		})
	}
}

// TestStateFastPathLogsUnknownTypesOnce: the fast path warns about unknown
// capability types as the robust decoding does, once per client.
func TestStateFastPathLogsUnknownTypesOnce(t *testing.T) {
	c, logs := logClient(t)
	body := `{"code":200,` + statePayload(`{"type":"devices.capabilities.teleport","instance":"beam","state":{"value":1}}`, plainCap) + `}`
	cl := call{ep: epState, sku: fuzzSKU, device: fuzzDevice}
	for range 3 {
		if _, ok := c.readStateFast(cl, answer{status: 200, header: netHeader{}, body: []byte(body)}); !ok {
			t.Fatal("the fast path did not answer")
		}
	}
	if n := strings.Count(logs.String(), "\n"); n != 1 || !strings.Contains(logs.String(), "devices.capabilities.teleport") {
		t.Errorf("logs:\n%s\nwant one warning about devices.capabilities.teleport", logs)
	}
}

// TestReadPlainState: what the one-pass reader takes and what it leaves to
// the robust decoding.
func TestReadPlainState(t *testing.T) {
	tests := []struct {
		body string
		want bool
	}{
		{`{"code":200,"payload":{"capabilities":[{"instance":"a","state":{"value":"\""}}]}}`, true},
		{`{"code":200,"payload":{"capabilities":[]},"data":{"capabilities":1,"code":2}}`, true},
		{` {"msg":"\u0063ode\"", "code" : 200 , "payload" : {"sku":"H1","x":[{"a":[1,{"b":null}]}],"capabilities":[]} } `, true},
		{`{"code":200,"payload":{"capabilities":[{"state":{"value":{"a":[1,"]"]}}}]}}`, true},
		{`{"code":200,"payload":{"capabilities":[{"state":1}]}}`, false},
		{`{"code":200,"payload":{"capabilities":[{"state":{},"STATE":{}}]}}`, false},
		{`{"code":200,"payload":{"capabilities":[{"state":{"value":1,"value":2}}]}}`, false},
		{`{"code":200,"payload":{"capabilities":[null]}}`, false},
		{`{"code":200,"payload":{"sku":null,"capabilities":null}}`, true},
		{`{"code":200,"payload":{"capabilities":[{"instance":"a","type":null,"state":null}]}}`, true},
		{`{"code":200,"payload":{"SKU":"H1"}}`, false},
		{`{"code":200,"payload":{"sku":"H\u0031"}}`, false},
		{"{\"code\":200,\"payload\":{\"sku\":\"\xff\"}}", false},
		{`{"code":200,"code":200,"payload":{}}`, false},
		{`{"code":200.0,"payload":{}}`, false},
		{`{"code":"200","payload":{}}`, false},
		{`{"cODe":200,"payload":{}}`, false},
		{`{"code":200,"pa\"yload":1,"payload":{}}`, false},
		{`{"code":200,"payload":{"capabilities":[],"capabilitieſ":[]}}`, false},
		{`{"code":200,"payload":{}`, false}, // not JSON
		{`{"code":200}`, false},
		{`[{"code":200,"payload":{}}]`, false},
	}
	for _, tt := range tests {
		if got := readPlainState([]byte(tt.body), &plainState{}); got != tt.want {
			t.Errorf("readPlainState(%s) answered %v, want %v", tt.body, got, tt.want)
		}
	}
}
