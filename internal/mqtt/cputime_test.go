package mqtt

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's CPU time (user and system) so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds the process's CPU time per operation since start, and the
// operations per CPU second: on a shared machine the wall time per
// operation measures the machine's load as much as the code.
func reportCPU(b *testing.B, start time.Duration) {
	cpu := cpuTime(b) - start
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(b.N)/cpu.Seconds(), "ops/cpu-s")
}
