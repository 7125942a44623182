package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"

	"cloud2mqtt/internal/capability"
)

// decoderObject decodes with encoding/json's tokens: the reference the faster
// scan must agree with.
func decoderObject(payload []byte) ([]string, []any, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, nil, errors.New("not a JSON object")
	}
	var keys []string
	var vals []any
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, ok := tok.(string)
		if !ok {
			return nil, nil, errors.New("not a JSON object")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, err
		}
		v, err := capability.Normalize(raw)
		if err != nil {
			return nil, nil, err
		}
		keys = append(keys, k)
		vals = append(vals, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("trailing data after the JSON object")
	}
	return keys, vals, nil
}

var objectSeeds = []string{
	`{"powerSwitch":1,"brightness":40}`,
	` { "brightness" : 57 , "brightness":58 } `,
	"{\n\t\"colorRgb\":\r\n16711680}\n",
	`{}`, `{ }`, `[]`, `1`, `"x"`, `null`, ``, ` `, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1}{}`, `{"a":1} x`,
	`{"musicMode":{"musicMode":1,"sensitivity":80,"rgb":[1,2]},"x":[{"y":"}]"},"\"{"]}`,
	`{"a\"b":"c\\\"}","é":"ü","\u00e9":1,"\ud800":2}`,
	"{\"\xff\xfe\":1,\"a\":\"\xff\"}",
	`{"n":-0,"f":1.50,"e":1e2,"big":1e309,"t":true,"f2":false,"z":null}`,
	`{"s":"\u0000","t":"a\tb"}`,
}

// orderedObject reads what encoding/json reads, member by member and in
// order: the same keys (escapes decoded, bad UTF-8 replaced), the same
// normalised values, and an error for the same payloads.
func TestOrderedObjectAgreesWithTheDecoder(t *testing.T) {
	for _, p := range objectSeeds {
		checkObject(t, []byte(p))
	}
}

func FuzzOrderedObject(f *testing.F) {
	for _, p := range objectSeeds {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, payload []byte) { checkObject(t, payload) })
}

func checkObject(t *testing.T, payload []byte) {
	t.Helper()
	keys, vals, err := orderedObject(payload)
	wantKeys, wantVals, wantErr := decoderObject(payload)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: error %v, the decoder's %v", payload, err, wantErr)
	}
	if err != nil {
		return
	}
	if !reflect.DeepEqual(keys, wantKeys) || len(vals) != len(wantVals) {
		t.Fatalf("%q: keys %q, the decoder's %q", payload, keys, wantKeys)
	}
	for i := range vals {
		if !capability.Equal(vals[i], wantVals[i]) {
			t.Fatalf("%q: %s = %#v, the decoder's %#v", payload, keys[i], vals[i], wantVals[i])
		}
	}
}

// BenchmarkOrderedObject: a command's object by the scan and by encoding/json's
// tokens.
func BenchmarkOrderedObject(b *testing.B) {
	payload := []byte(`{"brightness":57}`)
	for name, decode := range map[string]func([]byte) ([]string, []any, error){"scan": orderedObject, "decoder": decoderObject} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := decode(payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
