package cloudsim

import (
	"math"
	"time"

	"golang.org/x/time/rate"

	"cloud2mqtt/internal/cloud"
)

// Limit is one token bucket: Rate tokens per second, up to Burst stored.
// Rate rate.Inf switches the bucket off.
type Limit struct {
	Rate  rate.Limit
	Burst int
}

// PerMinute is a limit of n requests a minute with a burst of n, the shape
// of most rows of the spec's table.
func PerMinute(n int) Limit { return Limit{Rate: rate.Limit(float64(n) / 60), Burst: n} }

// Unlimited is a bucket that never refuses.
var Unlimited = Limit{Rate: rate.Inf, Burst: 1}

// Limits are the buckets of the simulated service. A zero Limit (Burst 0)
// means the spec's value for that row.
type Limits struct {
	Devices        Limit // per account: GET /user/devices
	ControlAccount Limit // per account: POST /device/control
	ControlDevice  Limit // per device: POST /device/control
	State          Limit // per device: POST /device/state
	Scenes         Limit // per device: POST /device/scenes
	DIYScenes      Limit // per device: POST /device/diy-scenes (own bucket)
}

// SpecLimits are the rate limits of the spec's table. The spec gives none for
// diy-scenes; the simulator treats it like scenes, in a bucket of its own.
func SpecLimits() Limits {
	return Limits{
		Devices:        PerMinute(30),
		ControlAccount: Limit{Rate: 12, Burst: 80},
		ControlDevice:  Limit{Rate: 2, Burst: 6},
		State:          PerMinute(30),
		Scenes:         PerMinute(30),
		DIYScenes:      PerMinute(30),
	}
}

func (l Limits) withDefaults() Limits {
	spec := SpecLimits()
	pick := func(v, d Limit) Limit {
		if v.Burst == 0 {
			return d
		}
		return v
	}
	return Limits{
		Devices:        pick(l.Devices, spec.Devices),
		ControlAccount: pick(l.ControlAccount, spec.ControlAccount),
		ControlDevice:  pick(l.ControlDevice, spec.ControlDevice),
		State:          pick(l.State, spec.State),
		Scenes:         pick(l.Scenes, spec.Scenes),
		DIYScenes:      pick(l.DIYScenes, spec.DIYScenes),
	}
}

// Bucket names, as counted in Counts.RateLimited. A bucket of one endpoint
// is named after it (cloud.Endpoint*); control has two buckets.
const (
	BucketDevices        = cloud.EndpointDevices
	BucketControlAccount = "control-account"
	BucketControlDevice  = "control-device"
	BucketState          = cloud.EndpointState
	BucketScenes         = cloud.EndpointScenes
	BucketDIYScenes      = cloud.EndpointDIYScenes
)

// buckets holds every limiter. All access happens under Sim.mu, so a check
// followed by a take is atomic across buckets.
type buckets struct {
	limits    Limits
	devices   *rate.Limiter
	control   *rate.Limiter
	perDevice map[string]*rate.Limiter // bucket name + "\x00" + device id
}

func newBuckets(l Limits) *buckets {
	return &buckets{
		limits:    l,
		devices:   newLimiter(l.Devices),
		control:   newLimiter(l.ControlAccount),
		perDevice: map[string]*rate.Limiter{},
	}
}

func newLimiter(l Limit) *rate.Limiter { return rate.NewLimiter(l.Rate, l.Burst) }

func (b *buckets) device(bucket, id string) *rate.Limiter {
	key := bucket + "\x00" + id
	if l, ok := b.perDevice[key]; ok {
		return l
	}
	var lim Limit
	switch bucket {
	case BucketControlDevice:
		lim = b.limits.ControlDevice
	case BucketState:
		lim = b.limits.State
	case BucketScenes:
		lim = b.limits.Scenes
	default:
		lim = b.limits.DIYScenes
	}
	l := newLimiter(lim)
	b.perDevice[key] = l
	return l
}

// namedLimiter is a bucket a request must pass, with its name for counters.
type namedLimiter struct {
	name string
	lim  *rate.Limiter
}

// take lets a request through only when every bucket has a token, so a
// refusal costs no bucket anything. Its wait is the longest of the refusing
// buckets, so Retry-After is enough for all of them.
func take(now time.Time, ls ...namedLimiter) (refused string, retry time.Duration) {
	for _, l := range ls {
		if ok, wait := allowedAt(l.lim, now); !ok {
			if refused == "" {
				refused = l.name
			}
			retry = max(retry, wait)
		}
	}
	if refused != "" {
		return refused, retry
	}
	for _, l := range ls {
		l.lim.AllowN(now, 1)
	}
	return "", 0
}

// allowedAt reports whether AllowN(now, 1) would succeed without taking a
// token, and otherwise how long until it would; a test checks it agrees
// with the limiter.
func allowedAt(l *rate.Limiter, now time.Time) (bool, time.Duration) {
	limit := l.Limit()
	if limit == rate.Inf {
		return true, 0
	}
	if l.Burst() < 1 || limit <= 0 {
		return false, time.Duration(math.MaxInt64)
	}
	deficit := 1 - l.TokensAt(now)
	if deficit <= 0 {
		return true, 0
	}
	wait := time.Duration(deficit / float64(limit) * float64(time.Second))
	if wait <= 0 {
		return true, 0
	}
	return false, wait
}

// retryAfterSeconds is the Retry-After value for a wait: whole seconds,
// rounded up, at least 1.
func retryAfterSeconds(wait time.Duration) int64 {
	if wait >= time.Duration(math.MaxInt64) {
		return 3600
	}
	s := int64((wait + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

// drain takes up to n whole tokens from l at now and returns how many it took.
func drain(l *rate.Limiter, now time.Time, n int) int {
	if n <= 0 || l.Limit() == rate.Inf {
		return 0
	}
	avail := int(math.Floor(l.TokensAt(now)))
	if avail > n {
		avail = n
	}
	if avail <= 0 || !l.AllowN(now, avail) {
		return 0
	}
	return avail
}
