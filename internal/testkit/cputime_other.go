//go:build !unix

package testkit

import (
	"runtime"
	"testing"
	"time"
)

// CPUTime skips the test: the process's CPU time is read with getrusage,
// which only Unix has.
func CPUTime(tb testing.TB) time.Duration {
	tb.Helper()
	tb.Skipf("no process CPU time on %s", runtime.GOOS)
	return 0
}
