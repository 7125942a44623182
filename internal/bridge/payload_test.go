package bridge

import (
	"testing"

	"cloud2mqtt/internal/capability"
)

func TestParsePayload(t *testing.T) {
	cases := []struct {
		name, in string
		want     any
	}{
		{"word", "on", "on"},
		{"word with spaces", "  Sunrise \n", "Sunrise"},
		{"hex colour", "#ff0000", "#ff0000"},
		{"integer", "40", int64(40)},
		{"whole float", "40.0", int64(40)},
		{"fraction", "21.5", 21.5},
		{"boolean", "true", true},
		{"quoted string", `"Night Light"`, "Night Light"},
		{"object", `{"r":255,"g":0,"b":0}`, map[string]any{"r": int64(255), "g": int64(0), "b": int64(0)}},
		{"list", `[1, 2]`, []any{int64(1), int64(2)}},
		{"two values are text", "255,0,0", "255,0,0"},
		{"segment ranges are text", "0-4,7", "0-4,7"},
		{"broken JSON is text", `{"workMode":`, `{"workMode":`},
		{"empty", "   ", ""},
		{"null", "null", nil},
		{"byte order mark", "\ufeff{\"a\":1}", map[string]any{"a": int64(1)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := parsePayload([]byte(tc.in)); !capability.Equal(got, tc.want) {
				t.Fatalf("parsePayload(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
		})
	}
}
