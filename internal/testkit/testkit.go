// Package testkit holds the helpers the tests of several packages share.
// Only tests import it.
package testkit

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"
)

// WaitFor polls cond, which another goroutine makes true, until it holds;
// it fails the test naming what after timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WaitGoroutinesGone waits until no goroutine's stack contains any of fns
// (paho's stacks spell its package path with %2e for the dots); it fails
// the test naming the one left after timeout.
func WaitGoroutinesGone(t testing.TB, timeout time.Duration, fns ...string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 4<<20)
	for {
		stacks := string(buf[:runtime.Stack(buf, true)])
		left := ""
		for _, fn := range fns {
			if strings.Contains(stacks, fn) {
				left = fn
			}
		}
		if left == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("goroutines in %s still run %s after the daemons stopped", left, timeout)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// RepeatedKey reports a key a JSON object (a log line) has twice at its top
// level: zerolog writes what it is given, duplicates included.
func RepeatedKey(line string) (string, bool) {
	dec := json.NewDecoder(strings.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		key, _ := tok.(string)
		if seen[key] {
			return key, true
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}
