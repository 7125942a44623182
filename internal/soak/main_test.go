// Package soak measures the whole daemon the way it runs for a user: the
// real cmd/bridge binary, started as its own process so that its resident
// memory and CPU time are its own, against mosquitto and a simulated cloud
// account of many devices. It is only tests:
//
//   - TestSmoke (always on, a few seconds): 40 devices, proves the harness
//     itself works, so the long runs do not rot.
//   - TestSoak (-soak=30m): 1000 devices read every 10 s with random
//     commands for the given time; memory must stay flat, no 429, no error
//     log line.
//   - TestFootprint (-footprint): 1000 devices at the default 60 s poll:
//     resident memory, idle CPU, discovery time, command latency.
//
// docs/reliability.md has the figures and the commands that reproduce them.
package soak

import (
	"flag"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

var (
	soakFor      = flag.Duration("soak", 0, "run TestSoak for this long, e.g. 30m (0 skips it)")
	footprintOn  = flag.Bool("footprint", false, "run TestFootprint: 1000 devices at the default poll, about 4 minutes")
	deviceCount  = flag.Int("devices", 1000, "simulated devices in TestSoak and TestFootprint")
	commandRate  = flag.Float64("rate", 3, "random commands per second during TestSoak")
	latencyCount = flag.Int("samples", 300, "command latency samples in TestFootprint")
	binary       = flag.String("bin", "", "a bridge binary to measure instead of building cmd/bridge from this checkout")
	heapProfile  = flag.String("heapprofile", "", "TestHeapProfile: write the in-process daemon's heap profile here")
	heapWait     = flag.Duration("heapwait", 70*time.Second, "TestHeapProfile: how long the daemon runs before the profile")
	cpuWindow    = flag.String("cpuwindow", "", "TestHeapProfile: also write a CPU profile of the minute after -heapwait here")
	daemonEnv    = flag.String("env", "", "extra environment of the daemon, KEY=VALUE[,KEY=VALUE...], e.g. GOMEMLIMIT=20MiB")
	sampleEvery  = flag.Duration("sample-every", 0, "how often TestSoak samples the daemon's memory (0: duration/15)")
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := func() int {
		defer removeBinary()
		return m.Run()
	}()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}
