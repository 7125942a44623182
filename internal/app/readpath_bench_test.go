package app_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/app"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/mqtttest"
)

// BenchmarkPeriodicRead measures the whole periodic-read path in one
// process: the poller's grid, the scheduler, the cloud client over loopback
// HTTP to the simulator, decoding, the registry's comparison and the
// publish to a broker (mosquitto when installed, in its own process, else
// the embedded one). One op is one state read served by the simulator;
// nothing changes between reads, the common case of an idle home.
//
// It reports the process's CPU time per read (user + system, from
// getrusage: the simulator's own share is in it too, see
// docs/benchmarks.md for the split) and the allocations per read.
//
//	go test -run '^$' -bench PeriodicRead -benchtime 400x ./internal/app
//
// READPATH_CPUPROFILE=file writes a CPU profile of the measured reads alone.
func BenchmarkPeriodicRead(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) { benchmarkReads(b, n) })
	}
}

func benchmarkReads(b *testing.B, n int) {
	cat, err := cloudsim.Household(n)
	if err != nil {
		b.Fatal(err)
	}
	broker := mqtttest.Start(b)
	sim := cloudsim.New(cloudsim.Options{APIKey: testKey, Catalogue: cat})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	cfg, err := config.Load(map[string]string{
		"CLOUD_BASE_URL": srv.URL, "CLOUD_API_KEY": testKey, "MQTT_URL": broker.URL(),
		"MQTT_CLIENT_ID": fmt.Sprintf("bench-%d", n), "POLL_INTERVAL": "2s", "LOG_LEVEL": "warn",
		"SCENE_INTERVAL": "24h", "DEVICE_LIST_INTERVAL": "24h",
	})
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		b.Fatal(err)
	}
	m := &app.Main{Config: cfg, Version: "bench", Log: zerolog.Nop()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := m.WaitReady(wctx); err != nil {
		b.Fatal(err)
	}
	reads := func() int { return sim.Counts().Requests[cloud.EndpointState][200] }
	// Past the first reads and scene lists: the steady state.
	for reads() < 2*n {
		time.Sleep(10 * time.Millisecond)
	}

	var before, after syscall.Rusage
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	r0 := reads()
	if path := os.Getenv("READPATH_CPUPROFILE"); path != "" {
		// The steady state alone (go test's -cpuprofile includes the start).
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	b.ResetTimer()
	for reads() < r0+b.N {
		time.Sleep(5 * time.Millisecond)
	}
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	runtime.ReadMemStats(&m1)
	got := reads() - r0
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	b.ReportMetric(float64(cpu.Microseconds())/float64(got), "cpu-µs/read")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(got), "allocs/read")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(got), "B/read")
}
