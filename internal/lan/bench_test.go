package lan_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/lansim"
)

// BenchmarkCommand measures the LAN layer's share of a command's latency
// over loopback: from Send to the datagram at the simulated device, and to
// the confirming status answer. Pacing is off so the path is measured.
//
//	go test -run XXX -bench Command -benchtime 2000x ./internal/lan
func BenchmarkCommand(b *testing.B) {
	sim, err := lansim.New(lansim.Options{}, lansim.Spec{ID: lamp, SKU: "H6076", Addr: lampAddr,
		State: lan.Status{On: true, Brightness: 1, HasBrightness: true}})
	if err != nil {
		b.Fatal(err)
	}
	defer sim.Close()
	// The hook must not block the device: a command sent again (a
	// confirmation that took longer than a try) arrives twice.
	type arrival struct {
		value int
		at    time.Time
	}
	arrived := make(chan arrival, 16)
	sim.OnReceive(func(_ string, r lansim.Received) {
		if r.Request.Cmd == lan.CmdBrightness {
			select {
			case arrived <- arrival{r.Request.Command.Value, r.At}:
			default:
			}
		}
	})
	found := make(chan lan.Device, 1)
	c, err := lan.New(lan.Config{Listen: "127.0.0.1:0", CommandPort: sim.CommandPort(), Pace: -1,
		Targets:  []lan.Target{{Host: lampAddr.String(), Port: sim.ScanPort()}},
		OnDevice: func(d lan.Device) { found <- d }})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	c.SetKnown([]string{lamp})
	if err := c.Scan(context.Background()); err != nil {
		b.Fatal(err)
	}
	<-found
	toDatagram := make([]time.Duration, 0, b.N)
	toConfirmed := make([]time.Duration, 0, b.N)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		start, value := time.Now(), 2+i%99
		if _, err := c.Send(ctx, lamp, lan.Brightness(value)); err != nil {
			b.Fatal(err)
		}
		done := time.Now()
		a := <-arrived
		for a.value != value { // a repeat of an earlier command
			a = <-arrived
		}
		for len(arrived) > 0 { // repeats of this one
			<-arrived
		}
		toDatagram = append(toDatagram, a.at.Sub(start))
		toConfirmed = append(toConfirmed, done.Sub(start))
	}
	b.StopTimer()
	report(b, "datagram", toDatagram)
	report(b, "confirmed", toConfirmed)
}

func report(b *testing.B, name string, d []time.Duration) {
	slices.Sort(d)
	q := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Microseconds()) }
	b.ReportMetric(q(0.50), name+"-p50-µs")
	b.ReportMetric(q(0.99), name+"-p99-µs")
}

func BenchmarkDecodeStatus(b *testing.B) {
	msg := lan.AppendStatus(nil, lan.Status{On: true, Brightness: 40, HasBrightness: true,
		Color: lan.RGB{R: 255, G: 136}, HasColor: true, HasKelvin: true})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lan.DecodeAnswer(msg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendCommand(b *testing.B) {
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		buf = lan.AppendCommand(buf[:0], lan.Color(lan.RGB{R: 255, G: 136}))
	}
}
