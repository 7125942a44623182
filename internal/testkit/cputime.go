package testkit

import (
	"testing"
	"time"
)

// ReportCPU adds the process's CPU time per operation since start (taken
// with CPUTime) and the operations per CPU second: on a shared machine the
// wall time per operation measures the machine's load as much as the code.
func ReportCPU(b *testing.B, start time.Duration) {
	b.Helper()
	cpu := CPUTime(b) - start
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(b.N)/cpu.Seconds(), "ops/cpu-s")
}
