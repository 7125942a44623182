// Package soak measures the whole daemon the way it runs for a user: the
// real cmd/bridge binary, started as its own process so that its resident
// memory and CPU time are its own, against mosquitto and a simulated cloud
// account of many devices. It is only tests:
//
//   - TestSmoke (always on, a few seconds): 40 devices, proves the harness
//     itself works, so the long runs do not rot.
//
// With -tags soak (compiled only then, so that go test ./... stays short):
//
//   - TestSoak (-soak=30m, the default): 1000 devices read every 10 s with random
//     commands for the given time; memory must stay flat, no 429, no error
//     log line.
//
//   - TestFootprint: 1000 devices at the default 60 s poll:
//     resident memory, idle CPU, discovery time, command latency.
//
//   - TestHeapProfile: a heap (and optionally CPU) profile of the daemon
//     run in-process.
//
//   - TestFirstStates, TestIdleRatio: cmd/cloudsim
//     and the bridge each as its own process, binaries of -bins alternated
//     in one sitting: the time from the exec to the last first state (18,
//     100, 1000 lights), and the idle cost as a ratio against a bare Go
//     reader (internal/soak/barereader; TestBareReader, always on, proves it).
//
// docs/reliability.md has the figures and the commands that reproduce them.
package soak

import (
	"flag"
	"os"
	"testing"

	"go.uber.org/goleak"
)

var (
	binary    = flag.String("bin", "", "a bridge binary to measure instead of building cmd/bridge from this checkout")
	sceneFile = flag.String("scenes", "", "a scenes-endpoint answer (JSON) the simulator serves for every light, as lights of one model get the same list (e.g. ../../testdata/scenes.json); default: a short list of its own per light")
	daemonEnv = flag.String("env", "", "extra environment of the daemon, KEY=VALUE[,KEY=VALUE...], e.g. GOMEMLIMIT=20MiB")
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
