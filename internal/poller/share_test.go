package poller

import (
	"math"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
)

// shareReads is the interval of each of len(rates) devices, changing at
// rates (a second), that share the reads of as many devices read every
// plain: shareBudget with their budget.
func shareReads(rates []float64, plain time.Duration, factor int, fastest, grid time.Duration) []time.Duration {
	return shareBudget(rates, float64(len(rates))/plain.Seconds(), plain, factor, fastest, grid)
}

// readsPerSecond is what intervals read in all.
func readsPerSecond(iv []time.Duration) float64 {
	r := 0.0
	for _, d := range iv {
		r += 1 / d.Seconds()
	}
	return r
}

// TestShareReadsBySquareRoot: a household of 5 devices changing every
// 40 s and 25 every 20 min, at a plain interval of 3 min: the busy
// devices are read about √30 ≈ 5.5 times as often as the quiet ones, on
// the grid, with no more reads than the plain plan and within 2 % of them.
func TestShareReadsBySquareRoot(t *testing.T) {
	rates := make([]float64, 30)
	for i := range rates {
		rates[i] = 1.0 / 1200
		if i < 5 {
			rates[i] = 1.0 / 40
		}
	}
	const plain, grid = 180 * time.Second, 10 * time.Second
	iv := shareReads(rates, plain, 4, grid, grid)
	budget := 30 / plain.Seconds()
	if got := readsPerSecond(iv); got > budget*(1+1e-9) || got < 0.98*budget {
		t.Errorf("%.5f reads a second, want at most the plain plan's %.5f and within 2 %% of it", got, budget)
	}
	for i, d := range iv {
		if d%grid != 0 {
			t.Errorf("device %d read every %v, off the %v grid", i, d, grid)
		}
	}
	busy, quiet := iv[0], iv[29]
	if busy < 50*time.Second || busy > 70*time.Second || quiet < 280*time.Second || quiet > 340*time.Second {
		t.Errorf("busy devices every %v, quiet every %v; want about 57 s and 5m15s (reads ∝ √rate)", busy, quiet)
	}
	if ratio := quiet.Seconds() / busy.Seconds(); math.Abs(ratio-math.Sqrt(30)) > 1 {
		t.Errorf("quiet/busy interval %.2f, want about √30 = %.2f", ratio, math.Sqrt(30))
	}
}

// TestShareReadsWithinBounds: however lopsided the rates, no device is
// read less often than the floor (factor × plain) nor more often than
// fastest (half its rate row, on the grid); devices alike are read at the
// plain interval; nothing known to change reads everyone at it.
func TestShareReadsWithinBounds(t *testing.T) {
	const plain, grid = 60 * time.Second, 5 * time.Second
	for _, tc := range []struct {
		name    string
		rates   []float64
		fastest time.Duration
		want    func(iv []time.Duration) bool
	}{
		// The busy one as often as the grid lets it within the reads (its
		// 7.75 s rounded up: a step shorter costs more than is left); the
		// still ones share what it leaves, alike, within the floor.
		{"one busy among still ones", append([]float64{1}, make([]float64, 9)...), 5 * time.Second,
			func(iv []time.Duration) bool { return iv[0] == 10*time.Second && iv[1] == iv[9] && iv[1] <= 4*plain }},
		{"all busy alike: the plain interval", []float64{1, 1, 1, 1}, 5 * time.Second,
			func(iv []time.Duration) bool { return iv[0] == plain && iv[3] == plain }},
		{"nothing changes: the plain interval", make([]float64, 4), 5 * time.Second,
			func(iv []time.Duration) bool { return iv[0] == plain && iv[3] == plain }},
		{"the row holds the busy one back", []float64{100, 0.0001, 0.0001}, 30 * time.Second,
			func(iv []time.Duration) bool { return iv[0] == 30*time.Second }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			iv := shareReads(tc.rates, plain, 4, tc.fastest, grid)
			budget := float64(len(tc.rates)) / plain.Seconds()
			if got := readsPerSecond(iv); got > budget*(1+1e-9) {
				t.Errorf("%.5f reads a second, more than the plain plan's %.5f", got, budget)
			}
			for i, d := range iv {
				if d > 4*plain || d < tc.fastest || d%grid != 0 {
					t.Errorf("device %d every %v: want between %v and the floor %v, on the %v grid", i, d, tc.fastest, 4*plain, grid)
				}
			}
			if !tc.want(iv) {
				t.Errorf("intervals %v", iv)
			}
		})
	}
}

// TestLearnedRate: a device nothing is known of changes at the prior's
// rate, ln 2 a plain interval; one whose every read finds a change is
// taken to change more than once a read (a read sees one change however
// many there were); one whose reads find nothing falls towards nothing; a
// busy device's rate falls tenfold within an hour of quiet.
func TestLearnedRate(t *testing.T) {
	const plain = time.Minute
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	a := NewActivity(nil)
	busy, still := dev("B", false), dev("S", false)
	if got, want := a.rate(busy.Key(), t0, plain), math.Ln2/60; math.Abs(got-want) > 1e-12 {
		t.Errorf("prior rate %.6f, want ln 2 a minute (%.6f)", got, want)
	}
	at := t0
	for i := range 30 {
		at = t0.Add(time.Duration(i) * time.Minute)
		a.read(busy, mkState("H6072", "B", true, map[string]any{capability.InstanceBrightness: i + 1}).All(), at)
		a.read(still, mkState("H6072", "S", true, map[string]any{capability.InstanceBrightness: 1}).All(), at)
	}
	b, s := a.rate(busy.Key(), at, plain), a.rate(still.Key(), at, plain)
	if b < 1.5/60 || s > 0.05/60 {
		t.Errorf("busy %.2f, still %.3f changes a minute; want the busy one above 1.5 (every read changed) and the still one below 0.05", b*60, s*60)
	}
	for i := range 60 {
		a.read(busy, mkState("H6072", "B", true, map[string]any{capability.InstanceBrightness: 30}).All(), at.Add(time.Duration(i+1)*time.Minute))
	}
	if later := a.rate(busy.Key(), at.Add(time.Hour), plain); later > b/10 {
		t.Errorf("an hour after the busy device went quiet: %.3f changes a minute, want below a tenth of %.2f", later*60, b*60)
	}
}

// BenchmarkShareReads: the shares of 1000 devices, worked out at most
// every reshareEvery while reads teach something.
func BenchmarkShareReads(b *testing.B) {
	rates := make([]float64, 1000)
	for i := range rates {
		rates[i] = 1.0 / float64(60+i*7)
	}
	for b.Loop() {
		shareReads(rates, 6*time.Minute, 4, 6*time.Second, 6*time.Second)
	}
}
