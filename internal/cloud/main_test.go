package cloud

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// test server, transport and client connection must be shut down. The one
// exception is fasthttp's cleaner of idle connections (ReadTransport's),
// which sleeps until the oldest connection would have expired, cannot be
// woken, and ends by itself once it finds none.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"))
}
