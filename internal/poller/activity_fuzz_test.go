package poller

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/statedir"
)

// FuzzRestoreActivity: whatever activity.json holds, a restore learns from
// it only counts a rate can be made of (finite, not negative, every
// device's rate finite and positive) and the shares made of them stay
// within the floor and the grid.
func FuzzRestoreActivity(f *testing.F) {
	f.Add([]byte(`{"format":"cloud2mqtt/activity","version":1,"saved":"2026-11-28T12:00:00Z","data":{"devices":[` +
		`{"sku":"H6072","device":"D00","at":"2026-11-28T11:59:00Z","changed_reads":3,"changed_s":180,"unchanged_s":60,"other":1,"watched_s":300},` +
		`{"sku":"H6072","device":"D01","at":"2026-11-28T11:00:00Z","changed_reads":0,"changed_s":0,"unchanged_s":900,"other":0,"watched_s":900}]}}`))
	f.Add([]byte(`{"format":"cloud2mqtt/activity","version":1,"data":{"devices":[{"sku":"H6072","device":"D00","changed_reads":1e308,"changed_s":1e-308,"unchanged_s":0}]}}`))
	f.Add([]byte(`{"format":"cloud2mqtt/activity","version":1,"data":{"devices":[{"sku":"H6072","device":"D00","at":"9999-12-31T23:59:59Z","other":-1}]}}`))
	f.Add([]byte(`{"format":"cloud2mqtt/activity","version":1,"data":null}`))
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, file []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, activityFile), file, 0o600); err != nil {
			t.Fatal(err)
		}
		a := NewActivity(nil)
		restoreActivity(a, statedir.Dir(dir), now, zerolog.Nop())
		var rates []float64
		for k := range a.devs {
			r := a.rate(k, now, time.Minute)
			if math.IsNaN(r) || math.IsInf(r, 0) || r <= 0 {
				t.Fatalf("%v restored at rate %v", k, r)
			}
			rates = append(rates, r)
		}
		rates = append(rates, a.rate(capability.Key{SKU: "H6072", Device: "new"}, now, time.Minute))
		for _, iv := range shareReads(rates, time.Minute, 4, 10*time.Second, 10*time.Second) {
			if iv < 10*time.Second || iv > 4*time.Minute || iv%(10*time.Second) != 0 {
				t.Fatalf("a share of %v from rates %v", iv, rates)
			}
		}
	})
}
