package cloud

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// test server, transport and client connection must be shut down.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
