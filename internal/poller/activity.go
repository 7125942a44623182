package poller

import (
	"cmp"
	"encoding/binary"
	"hash/maphash"
	"iter"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/registry"
)

// What the poller learns of how often each device changes, for share.go:
// from reads that found a change, from the registry (Observer) and from
// cloud events (Event). A read sees at most one change, so its part of the
// rate is the maximum-likelihood one, c/s·ln(1+s/u) for c reads that found
// a change over spans s and unchanged spans u; every count decays with
// activityHalfLife so that a device gone quiet is read less within the hour.

// activityHalfLife is how fast what was learned fades.
const activityHalfLife = 15 * time.Minute

// activityTau is the decay's time constant: a device changing at a steady
// rate λ (a second) keeps about λ·activityTau changes counted, over about
// activityTau seconds watched.
var activityTau = activityHalfLife.Seconds() / math.Ln2

// leastRate is the least rate the shares take a device to change at: one
// change in twice the time the decay keeps (activityTau). A rate below it
// is not told from none by what is kept; and without it a device that
// changed an hour ago would count for many times one that never did, and
// keep the reads it had while busy.
var leastRate = 1 / (2 * activityTau)

// priorReads is the prior's weight, in reads that found a change and as
// many that did not, each over the plain interval. At a tenth a device's
// first compared read already moves its share, so busy devices are read
// often within minutes of a start.
const priorReads = 0.1

// sensorBands is how far a sensor's reading must move from the value last
// counted before it counts as a change: about what such a sensor wanders by
// with nothing happening (a few steps of its resolution). Other numeric
// readings count from defaultBand on.
var sensorBands = map[string]float64{
	"sensorTemperature":          0.5, // °C or °F, read to a tenth
	"sensorHumidity":             2,   // %
	"humidity":                   2,   // %
	"carbonDioxideConcentration": 50,  // ppm
	"pm25":                       5,   // µg/m³
}

const defaultBand = 1

// Activity is what the poller learns of how often each device changes. The
// daemon makes it before the registry, whose observer it is (Observer), and
// hands it to the poller (Config.Activity). Its methods are safe for
// concurrent use; it calls nothing while locked, so that the registry may
// call it under its lock while the poller calls the registry under its own.
type Activity struct {
	clk  clock.Clock
	mu   sync.Mutex
	devs map[capability.Key]*learned
	// moved: something was learned since the last snapshot (saved).
	moved bool
	// scratch is compare's buffer, kept: a read costs no allocation.
	scratch []reading
}

// NewActivity returns an Activity with nothing learned, on c (nil: real).
func NewActivity(c clock.Clock) *Activity {
	return &Activity{clk: clock.Or(c), devs: make(map[capability.Key]*learned)}
}

// learned is one device's record: counts decayed to at, which is zero
// until the device was first watched (a first read, a change seen).
type learned struct {
	at        time.Time
	changed   float64 // reads that found a change
	busySpan  float64 // seconds those reads spanned (each from the read before)
	stillSpan float64 // seconds the reads that found none spanned
	other     float64 // changes seen otherwise: commands, the LAN, events
	watched   float64 // seconds the device was watched
	lastRead  time.Time
	seen      []reading // the values last seen, by instance
}

// reading is one instance's value as last seen: its hash, or for a
// sensor's number the value last counted.
type reading struct {
	instance string
	hash     uint64
	num      float64
	sensor   bool
}

// decay brings the counts to now: what was counted fades, the time since
// at is watched. A device never watched starts being watched now.
func (l *learned) decay(now time.Time) {
	if l.at.IsZero() {
		l.at = now
		return
	}
	if !now.After(l.at) {
		return
	}
	f := math.Exp(-now.Sub(l.at).Seconds() / activityTau)
	l.changed, l.busySpan, l.stillSpan, l.other = l.changed*f, l.busySpan*f, l.stillSpan*f, l.other*f
	l.watched = l.watched*f + activityTau*(1-f)
	l.at = now
}

// rate is the device's changes a second as learned by now, plain being the
// interval of the prior's reads.
func (l *learned) rate(now time.Time, plain time.Duration) float64 {
	if !l.at.IsZero() {
		l.decay(now)
	}
	t := plain.Seconds()
	c, s, u := l.changed+priorReads, l.busySpan+priorReads*t, l.stillSpan+priorReads*t
	return c/s*math.Log1p(s/u) + l.other/(l.watched+t)
}

// compare lays the values over what was seen of the device and reports
// whether any changed: an instance seen before with another value, a
// sensor's number further than its band from the value last counted.
// Instances new or missing change nothing (a first read, a partial answer).
// scratch is a buffer compare may use; it returns it, grown.
func (l *learned) compare(dev capability.Device, values iter.Seq2[string, any], scratch []reading) (changed bool, _ []reading) {
	next := scratch[:0]
	for inst, v := range values {
		r := reading{instance: inst, hash: hashValue(v)}
		if c, ok := dev.Capability(inst); ok {
			r.instance = c.Instance // the definition's string: a read's own is not kept alive
			if c.Type == capability.TypeProperty {
				r.num, r.sensor = number(v)
			}
		}
		next = append(next, r)
	}
	// The last of a repeated instance wins, as in the registry: reversed,
	// it is the first of its run once sorted stably.
	slices.Reverse(next)
	slices.SortStableFunc(next, byInstance)
	next = slices.CompactFunc(next, func(a, b reading) bool { return a.instance == b.instance })
	for i, r := range next {
		j, ok := slices.BinarySearchFunc(l.seen, r.instance, findInstance)
		if !ok {
			continue
		}
		old := l.seen[j]
		switch {
		case r.sensor && old.sensor:
			band, ok := sensorBands[r.instance]
			if !ok {
				band = defaultBand
			}
			if math.Abs(r.num-old.num) >= band {
				changed = true
			} else {
				next[i].num = old.num // drift is measured from the value counted
			}
		case r.hash != old.hash:
			changed = true
		}
	}
	// What the values do not name is kept: a read leaves out what the cloud
	// does not report, which the registry's view has.
	named := len(next)
	for _, old := range l.seen {
		if _, ok := slices.BinarySearchFunc(next[:named], old.instance, findInstance); !ok {
			next = append(next, old)
		}
	}
	slices.SortFunc(next, byInstance)
	l.seen = append(l.seen[:0], next...)
	return changed, next
}

func byInstance(a, b reading) int { return cmp.Compare(a.instance, b.instance) }

func findInstance(r reading, inst string) int { return cmp.Compare(r.instance, inst) }

// number is a reading's value as a float, when it is a number.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	}
	return 0, false
}

// valueSeed: the hashes are this process's only (never saved).
var valueSeed = maphash.MakeSeed()

// hashValue hashes a normalised value (capability.Normalize): equal values
// (capability.Equal) hash equal.
func hashValue(v any) uint64 {
	var h maphash.Hash
	h.SetSeed(valueSeed)
	writeValue(&h, v)
	return h.Sum64()
}

func writeValue(h *maphash.Hash, v any) {
	var b [9]byte
	switch x := v.(type) {
	case nil:
		h.WriteByte(0)
	case bool:
		b[0], b[1] = 1, 0
		if x {
			b[1] = 1
		}
		h.Write(b[:2])
	case int64:
		b[0] = 2
		binary.LittleEndian.PutUint64(b[1:], uint64(x))
		h.Write(b[:])
	case float64:
		b[0] = 3
		binary.LittleEndian.PutUint64(b[1:], math.Float64bits(x))
		h.Write(b[:])
	case string:
		h.WriteByte(4)
		h.WriteString(x)
		h.WriteByte(0)
	case []any:
		b[0] = 5
		binary.LittleEndian.PutUint64(b[1:], uint64(len(x)))
		h.Write(b[:])
		for _, e := range x {
			writeValue(h, e)
		}
	case map[string]any:
		b[0] = 6
		binary.LittleEndian.PutUint64(b[1:], uint64(len(x)))
		h.Write(b[:])
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			h.WriteString(k)
			h.WriteByte(0)
			writeValue(h, x[k])
		}
	default:
		h.WriteByte(7) // not normalised: one value of its own
	}
}

// get returns the device's record, made when missing. Called with a.mu held.
func (a *Activity) get(k capability.Key) *learned {
	l := a.devs[k]
	if l == nil {
		l = &learned{}
		a.devs[k] = l
	}
	return l
}

// read learns from a cloud read of the device sent at sent: whether its
// values differ from those seen before, over the span since the read
// before it. The first read (also the first after a restart) records the
// values and starts the watch.
func (a *Activity) read(dev capability.Device, values iter.Seq2[string, any], sent time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.get(dev.Key())
	var changed bool
	changed, a.scratch = l.compare(dev, values, a.scratch)
	l.decay(sent)
	if !l.lastRead.IsZero() && sent.After(l.lastRead) {
		// A span longer than the decay's time constant says no more.
		span := min(sent.Sub(l.lastRead).Seconds(), activityTau)
		if changed {
			l.changed++
			l.busySpan += span
		} else {
			l.stillSpan += span
		}
	}
	l.lastRead = sent
	a.moved = true
}

// seenOther counts a change seen otherwise than by a cloud read.
func (a *Activity) seenOther(k capability.Key) {
	l := a.get(k)
	l.decay(a.clk.Now())
	l.other++
	a.moved = true
}

// Event counts a cloud event of the device (a button pressed, a sensor
// triggered) as activity. It never blocks.
func (a *Activity) Event(k capability.Key) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seenOther(k)
}

// Observer is the Activity as the registry's observer: a change of a
// device's values made by anything but a cloud read (which the poller
// compares itself, before the registry sees it) counts as activity: a
// command's accepted value, a LAN status read. The registry's restore
// only records the values.
func (a *Activity) Observer() registry.Observer {
	return registry.Observer{State: a.observe}
}

func (a *Activity) observe(v registry.View) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := v.Device.Key()
	var changed bool
	if changed, a.scratch = a.get(k).compare(v.Device, maps.All(v.Values), a.scratch); changed {
		a.seenOther(k)
	}
}

// rate is the device's learned changes a second at now (rate of learned).
func (a *Activity) rate(k capability.Key, now time.Time, plain time.Duration) float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if l := a.devs[k]; l != nil {
		return l.rate(now, plain)
	}
	var none learned
	return none.rate(now, plain)
}

// keep forgets every device keep says no to (removed from the list).
func (a *Activity) keep(keep func(capability.Key) bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range a.devs {
		if !keep(k) {
			delete(a.devs, k)
		}
	}
}
