package poller

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"cloud2mqtt/internal/capability"
)

// TestSetConfigWhileIntervalsAreTold: the settings change the poller's
// configuration (options over MQTT, the status page) while it tells
// OnInterval of the devices' intervals; under -race neither may touch the
// other's copy of the configuration.
func TestSetConfigWhileIntervalsAreTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(devs(4)...)
		f.setState(changing(func(d string) bool { return d == "D00" }))
		var told atomic.Int64
		h := start(t, f, Config{Interval: time.Minute, ListInterval: time.Hour, QuietFactor: 4,
			OnInterval: func(capability.Key, Interval) { told.Add(1) }})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range 240 {
				h.p.SetConfig(Config{Interval: time.Minute + time.Duration(i%2)*time.Second, ListInterval: time.Hour})
				time.Sleep(5 * time.Second)
			}
		}()
		<-done
		h.stop()
		if told.Load() == 0 {
			t.Error("no device's interval was told")
		}
	})
}
