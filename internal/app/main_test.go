package app_test

import (
	"flag"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The end-to-end tests that call t.Parallel spend their time waiting on
	// brokers, the simulated cloud and poll intervals, not on the CPU:
	// unless -parallel is given, let them all run at once instead of
	// GOMAXPROCS at a time, or the suite takes minutes on two cores.
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", "16")
	}
	goleak.VerifyTestMain(m,
		// paho's reconnect loop sleeps with time.Sleep, which Disconnect
		// cannot interrupt: a daemon stopped while its broker is gone (the
		// tests that stop the broker) leaves that goroutine, and the one
		// Disconnect starts to wait for it, until the sleep ends. The same
		// exception as internal/mqtt's.
		goleak.IgnoreAnyFunction("github.com/eclipse/paho%2emqtt%2egolang.(*backoffController).sleepWithBackoff"),
		goleak.IgnoreAnyFunction("github.com/eclipse/paho%2emqtt%2egolang.(*connectionStatus).Disconnecting"),
	)
}
