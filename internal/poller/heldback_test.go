package poller

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

// TestHeldBackReadsAreNoFailures: reads the bridge held
// back itself count toward no device's unavailability, whatever refusal
// their error wraps (or none): the device stays available with its last
// values, its failure count stays 0 and its reads are not backed off. A
// read the cloud answered with a failure still counts (the last case).
func TestHeldBackReadsAreNoFailures(t *testing.T) {
	refusal := &cloud.APIError{Kind: cloud.ErrAuth, Endpoint: cloud.EndpointState, HTTPStatus: 401, Code: 401, Msg: "unauthorized"}
	limited := &cloud.APIError{Kind: cloud.ErrRateLimited, Endpoint: cloud.EndpointState, HTTPStatus: 429, Msg: "too many requests"}
	for _, tc := range []struct {
		name     string
		held     error
		failures bool
	}{
		{"after a refused key", fmt.Errorf("%w: %w", scheduler.ErrAuthHoldoff, refusal), false},
		{"after a refused key, the refusal not wrapped", scheduler.ErrAuthHoldoff, false},
		{"the quota spent", &scheduler.QuotaError{Err: limited}, false},
		{"a 429's wait at shutdown", fmt.Errorf("%w: %w", scheduler.ErrNotSent, limited), false},
		{"the cloud failing", errDevice, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(devs(2)...)
				f.setState(func(device string, n int) (cloud.DeviceState, error) {
					if device == "D00" && n >= 2 && n <= 6 {
						return cloud.DeviceState{}, tc.held
					}
					return mkState("H6072", device, true, map[string]any{capability.InstancePower: 1}), nil
				})
				h := start(t, f, Config{Interval: time.Minute})
				time.Sleep(5*time.Minute + 30*time.Second) // the first read, then five held back
				h.p.mu.Lock()
				failures := h.p.devices[capability.Key{SKU: "H6072", Device: "D00"}].failedReads
				h.p.mu.Unlock()
				time.Sleep(3 * time.Minute)
				h.stop()

				un := h.c.of("unreachable", "D00")
				if !tc.failures {
					if failures != 0 || len(un) != 0 {
						t.Errorf("held-back reads: %d failures, unreachable %+v; want none", failures, un)
					}
					if got, want := offsets(h.t0, f.reads("D00")), secs(0, 60, 120, 180, 240, 300, 360, 420, 480); !slices.Equal(got, want) {
						t.Errorf("reads at %v, want %v (held-back reads are not backed off)", got, want)
					}
				} else if failures == 0 || len(un) != 1 {
					t.Errorf("failed reads: %d failures, unreachable %+v; want the device unreachable", failures, un)
				}
				if un := h.c.of("unreachable", "D01"); len(un) != 0 {
					t.Errorf("the other device unreachable: %+v", un)
				}
			})
		})
	}
}
