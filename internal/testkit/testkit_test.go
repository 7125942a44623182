package testkit_test

import (
	"testing"

	"cloud2mqtt/internal/testkit"
)

func TestRepeatedKey(t *testing.T) {
	for _, tc := range []struct {
		line, key string
		ok        bool
	}{
		{`{"level":"info","message":"a","level":"debug"}`, "level", true},
		{`{"level":"info","nested":{"level":1},"message":"a"}`, "", false},
		{`not json`, "", false},
		{`["level","level"]`, "", false},
	} {
		key, ok := testkit.RepeatedKey(tc.line)
		if key != tc.key || ok != tc.ok {
			t.Errorf("RepeatedKey(%s) = %q, %v; want %q, %v", tc.line, key, ok, tc.key, tc.ok)
		}
	}
}
