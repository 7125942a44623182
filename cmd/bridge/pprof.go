//go:build pprof

// Profiling build for developers: `go build -tags pprof ./cmd/bridge` and set
// C2M_PPROF_ADDR (e.g. 127.0.0.1:6060) to serve net/http/pprof there. Not
// part of the released binary: the endpoints expose the process's memory.
// C2M_MEMPROFILERATE sets runtime.MemProfileRate (1 records every
// allocation: exact heap profiles, at a cost).
package main

import (
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on http.DefaultServeMux
	"os"
	"runtime"
	"strconv"
)

func init() {
	if r, err := strconv.Atoi(os.Getenv("C2M_MEMPROFILERATE")); err == nil {
		runtime.MemProfileRate = r
	}
	addr := os.Getenv("C2M_PPROF_ADDR")
	if addr == "" {
		return
	}
	go func() { _ = http.ListenAndServe(addr, nil) }()
}
