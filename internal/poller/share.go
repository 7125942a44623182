package poller

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/scheduler"
)

// Reads shared by how often each device changes (Config.QuietFactor above
// 1): the devices at the common interval share the plain plan's reads in
// proportion to √λ of their learned rate λ, which makes the mean delay from
// a change to its read least for a fixed number of reads. An account of the
// reads sent against the plan (owing) keeps the total at the plain plan's.

// Why a device is read at its interval (Interval.Why).
const (
	WhyOften    = "changes often"  // read more often than the plain interval
	WhyQuiet    = "quiet"          // read less often than the plain interval
	WhyPlain    = "plain interval" // read at the plain interval (sharing off, or its share)
	WhyOwn      = "own interval"   // the user's interval for it
	WhyLocal    = "local"          // the LAN reads it (the cloud only for what the LAN lacks)
	WhyDisabled = "disabled"       // not read
	WhyNoState  = "no state"       // the cloud keeps no state of it (StatelessRecheck)
)

// DefaultQuietFactor is POLL_QUIET_FACTOR's default: a quiet device is read
// at least every four plain intervals.
const DefaultQuietFactor = 4

// reshareEvery bounds how often the shares are worked out again while what
// is learned moves; each is a pass over the devices at a wake of the loop
// that happens anyway.
const reshareEvery = 10 * time.Second

// OnInterval hears of a device again when its reason changed or its
// interval moved by toldChange, at the first look after a change of the
// plan (a setting, a device's options) and otherwise at most every
// tellEvery: bridge/devices, which shows them, is a large retained message
// (a megabyte at 1000 devices), republished whole.
const (
	toldChange = 0.25
	tellEvery  = 5 * time.Minute
)

// shared says whether the device's reads are shared by how often it
// changes.
func (d *device) shared() bool {
	return !d.disabled && !d.local.local && d.own == 0 && !d.stateless
}

// fastest is the shortest interval a share may give: half the rate the
// device's state-read row allows (Config.StateRow), so that its confirming
// reads and reads on request still find room in its bucket, and at least a
// step of the grid, rounded up to whole steps.
func (p *Poller) fastest() time.Duration {
	f := max(2*max(p.cfg.StateRow, MinInterval), p.grid)
	if rest := f % p.grid; rest > 0 {
		f += p.grid - rest
	}
	return f
}

// learnt spends what was learned, at a step of the loop: the shares are
// worked out again when the plan changed or, while reads teach something,
// every reshareEvery; what was learned is saved every activitySaveEvery
// (after the lock is released). Called with p.mu held.
func (p *Poller) learnt(now time.Time) {
	if p.sharesStale || p.learning && !now.Before(p.nextShare) {
		p.reshare(now)
	}
	if dir := p.cfg.StateDir; dir != "" && !p.nextSave.IsZero() && !now.Before(p.nextSave) {
		p.nextSave = now.Add(activitySaveEvery)
		p.emit(func() { saveActivity(p.act, dir, now, p.log) })
	}
}

// reshare works the devices' shares out again and tells OnInterval what
// moved. Called with p.mu held.
func (p *Poller) reshare(now time.Time) {
	replanned := p.sharesStale
	p.sharesStale, p.learning = false, false
	p.nextShare = now.Add(reshareEvery)
	cands := p.cands[:0]
	for _, d := range p.devices {
		if d.shared() {
			cands = append(cands, d)
		} else {
			d.share = 0
		}
	}
	slices.SortFunc(cands, func(a, b *device) int { return cmp.Compare(a.order, b.order) })
	plain, fastest := p.interval, p.fastest()
	if p.cfg.QuietFactor <= 1 || len(cands) < 2 || plain >= day || fastest >= plain {
		for _, d := range cands {
			d.share = 0
		}
	} else {
		rates := make([]float64, len(cands))
		for i, d := range cands {
			rates[i] = max(p.act.rate(d.dev.Key(), now, plain), leastRate)
		}
		budget := p.owing(now, cands, plain)
		for i, every := range shareBudget(rates, budget, plain, p.cfg.QuietFactor, fastest, p.grid) {
			p.setShare(now, cands[i], every)
		}
	}
	clear(cands)
	p.cands = cands
	if replanned || !now.Before(p.nextTell) {
		p.nextTell = now.Add(tellEvery)
		p.tell()
	}
}

// setShare gives the device its share, which its next read counts the
// read after from. Only a move by a quarter or more moves the next read
// too, so that reads follow the mean of a device's recent shares rather
// than the shortest. A new device keeps its place in the start's spread.
func (p *Poller) setShare(now time.Time, d *device, every time.Duration) {
	was := d.placed
	if was == 0 {
		was = p.interval
	}
	d.share = every
	if moved := every - was; moved > -was/4 && moved < was/4 || d.lastSent.IsZero() || !d.secondRead.IsZero() || d.inSpread || d.inFlight {
		return
	}
	g := p.gridOf(d)
	d.nextPoll = onGridOf(latest(gridBase(d.lastSent, g).Add(p.deviceInterval(d)), now), g)
	d.placed = every
	p.schedule(d)
}

// owing is the reads a second the shares may spend from now: the plain
// plan's for the shared devices, plus what the shares' reads owe it
// (Poller.owed) repaid over half a plain interval, since while shares move
// the reads placed at older ones drift off the plan. Called with p.mu held.
func (p *Poller) owing(now time.Time, cands []*device, plain time.Duration) float64 {
	p.accrue(now)
	p.owedRate, p.owedCap = 0, float64(len(cands))
	for _, d := range cands {
		// The plain plan reads a device backing off less often too.
		p.owedRate += 1 / scheduler.Backoff(plain, max(OfflineMaxInterval, plain), d.backoffReads).Seconds()
	}
	n := float64(len(cands))
	return n / plain.Seconds() * (1 + min(max(2*p.owed/n, -owedSwing), owedSwing))
}

// owedSwing bounds what the account moves the shares' budget by: a
// quarter of the plan's either way.
const owedSwing = 0.1

// accrue brings what the shared devices' reads owe the plan to now, at
// the plan's rate. Called with p.mu held.
func (p *Poller) accrue(now time.Time) {
	if !p.owedAt.IsZero() && now.After(p.owedAt) {
		p.owed += p.owedRate * now.Sub(p.owedAt).Seconds()
	}
	p.owedAt = latest(p.owedAt, now)
	p.owed = min(max(p.owed, -p.owedCap), p.owedCap)
}

// spent counts a state read of a shared device against the plan. Called
// with p.mu held.
func (p *Poller) spent(now time.Time) {
	p.accrue(now)
	p.owed--
	p.owed = max(p.owed, -p.owedCap)
}

// gridBase is the grid instant a read sent at t was due at, when it went
// within readGrid after one; else t.
func gridBase(t time.Time, g time.Duration) time.Time {
	if f := clock.Floor(t, g); t.Sub(f) < readGrid {
		return f
	}
	return t
}

// why says why the device is read at its interval.
func (p *Poller) why(d *device) string {
	switch {
	case d.disabled:
		return WhyDisabled
	case d.local.local:
		return WhyLocal
	case d.own > 0:
		return WhyOwn
	case d.stateless:
		return WhyNoState
	case d.share == 0 || d.share == p.interval:
		return WhyPlain
	case d.share < p.interval:
		return WhyOften
	}
	return WhyQuiet
}

// tell hands OnInterval every device whose reason changed or whose
// interval moved by toldChange since it was last told. Called with p.mu
// held; the calls are made after it is released.
func (p *Poller) tell() {
	on := p.cfg.OnInterval // read under the lock: SetConfig replaces p.cfg
	if on == nil {
		return
	}
	for k, d := range p.devices {
		iv := Interval{Every: p.planned(d), Own: d.own > 0, Why: p.why(d)}
		if iv.Why == d.told.Why && d.told.Every > 0 && math.Abs(float64(iv.Every-d.told.Every)) < toldChange*float64(d.told.Every) {
			continue
		}
		d.told = iv
		p.emit(func() { on(k, iv) })
	}
}

// shareBudget is the interval of each of len(rates) devices, changing at
// rates (a second), that share budget reads a second: proportional to the
// square root of the rate, between factor × plain and fastest (both whole
// multiples of grid), and no more reads in all than budget (all at factor
// × plain when even that is more).
func shareBudget(rates []float64, budget float64, plain time.Duration, factor int, fastest, grid time.Duration) []time.Duration {
	n := len(rates)
	out := make([]time.Duration, n)
	lo, hi := 1/(float64(factor)*plain.Seconds()), 1/fastest.Seconds()
	roots := make([]float64, n)
	for i, r := range rates {
		if r > 0 && !math.IsInf(r, 0) {
			roots[i] = math.Sqrt(r)
		}
	}
	ideal := waterfill(roots, budget, lo, hi)
	// Nothing known to change, or nothing that tells the devices apart:
	// all alike, at the plain interval whatever the budget's account says
	// (it moves reads between devices, not the plan).
	if ideal == nil || !slices.ContainsFunc(rates, func(r float64) bool { return r != rates[0] }) {
		for i := range out {
			out[i] = plain
		}
		return out
	}
	// Whole grid steps: each interval rounded up (fewer reads), then the
	// reads left over go a step at a time where a step shortens the
	// expected delay most for the reads it costs: a step from k to k-1
	// grid steps gains λ·grid/2 of delay a change for 1/(grid·k·(k-1))
	// reads a second, a ratio that falls as k does, so that taking the
	// best step each time is as good as any choice of steps.
	g := grid.Seconds()
	kmin, kmax := max(int64(fastest/grid), 1), int64(factor)*int64(plain/grid)
	steps := make([]int64, n)
	spent := 0.0
	for i, r := range ideal {
		steps[i] = min(max(int64(math.Ceil(1/r/g-1e-9)), kmin), kmax)
		spent += 1 / (float64(steps[i]) * g)
	}
	h := stepHeap{rates: rates, steps: steps, idx: make([]int, 0, n)}
	for i := range steps {
		if steps[i] > kmin {
			h.idx = append(h.idx, i)
		}
	}
	heap.Init(&h)
	for h.Len() > 0 {
		i := h.idx[0]
		k := float64(steps[i])
		cost := 1 / (g * k * (k - 1))
		if spent+cost > budget*(1+1e-12) {
			h.dropTop() // it never fits: what is left only shrinks
			continue
		}
		spent += cost
		if steps[i]--; steps[i] > kmin {
			heap.Fix(&h, 0)
		} else {
			h.dropTop()
		}
	}
	for i, k := range steps {
		out[i] = time.Duration(k) * grid
	}
	return out
}

// stepHeap orders devices by what a step shorter gains for its cost:
// rate·k·(k-1) for a device read every k grid steps.
type stepHeap struct {
	rates []float64
	steps []int64
	idx   []int
}

func (h *stepHeap) worth(i int) float64 {
	k := float64(h.steps[i])
	return h.rates[i] * k * (k - 1)
}

func (h *stepHeap) Len() int { return len(h.idx) }
func (h *stepHeap) Less(a, b int) bool {
	i, j := h.idx[a], h.idx[b]
	if wi, wj := h.worth(i), h.worth(j); wi != wj {
		return wi > wj
	}
	return h.steps[i] > h.steps[j] // alike: the longest first, so they stay alike
}
func (h *stepHeap) Swap(a, b int) { h.idx[a], h.idx[b] = h.idx[b], h.idx[a] }
func (h *stepHeap) Push(x any)    { h.idx = append(h.idx, x.(int)) }
func (h *stepHeap) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}

// dropTop takes the top out (heap.Pop without boxing the index).
func (h *stepHeap) dropTop() {
	last := len(h.idx) - 1
	h.idx[0] = h.idx[last]
	h.idx = h.idx[:last]
	if last > 0 {
		heap.Fix(h, 0)
	}
}

// waterfill returns rates rᵢ = clamp(c·rootsᵢ, lo, hi) summing to budget
// (or as near as the bounds allow), nil when every root is 0.
func waterfill(roots []float64, budget, lo, hi float64) []float64 {
	top, least := 0.0, math.Inf(1)
	for _, s := range roots {
		top = max(top, s)
		if s > 0 {
			least = min(least, s)
		}
	}
	if top == 0 {
		return nil
	}
	sum := func(c float64) float64 {
		t := 0.0
		for _, s := range roots {
			t += min(max(c*s, lo), hi)
		}
		return t
	}
	// Below lo/top every rate is lo, above hi/least every one it can be is
	// hi: the sum is monotone between, bisected on a log scale.
	a, b := math.Log(lo/top), math.Log(hi/least)
	for range 50 { // a relative precision far below a grid step's
		m := (a + b) / 2
		if sum(math.Exp(m)) > budget {
			b = m
		} else {
			a = m
		}
	}
	c := math.Exp(a) // the sum at a is within the budget
	out := make([]float64, len(roots))
	for i, s := range roots {
		out[i] = min(max(c*s, lo), hi)
	}
	return out
}

// Planned returns every device's interval and why as the bridge would plan
// them now, for cfg, devs and the users' options (-check): with what it
// learned in cfg.StateDir, without the quota (which only the cloud's
// answers tell) and without the LAN.
func Planned(devs []capability.Device, opts map[capability.Key]DeviceOptions, cfg Config) map[capability.Key]Interval {
	cfg.OnInterval = nil
	p := New(nil, nil, cfg, zerolog.Nop())
	for i, dev := range devs {
		d := &device{slot: -1, order: i}
		d.setDev(dev)
		o := opts[dev.Key()]
		if o.Interval > 0 {
			o.Interval = gridUp(max(o.Interval, MinInterval))
		}
		d.own, d.disabled = o.Interval, o.Disabled
		p.devices[dev.Key()] = d
	}
	p.replan()
	p.reshare(p.cfg.Clock.Now())
	return p.Intervals()
}
