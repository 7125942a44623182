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
	goleak.VerifyTestMain(m)
}
