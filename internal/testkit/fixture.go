package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// ReadFixture returns the file name under dir, a path relative to the
// calling test's package directory (go test runs each package's tests
// there), and fails the test if it cannot be read.
func ReadFixture(tb testing.TB, dir, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
