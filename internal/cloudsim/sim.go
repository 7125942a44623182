// Package cloudsim is a faithful fake of the vendor's cloud service for
// tests, demo mode and benchmarks. It serves the spec's five endpoints with
// the live service's habits and rate limits, keeps device state, scenes and
// events, and can inject faults.
//
// It reuses package cloud's decoding and capability.Validate, so it refuses
// exactly what the bridge refuses. Only tests, the demo and cmd/cloudsim
// import it.
package cloudsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
)

// Endpoints are named as in internal/cloud (cloud.EndpointState, …).
const (
	// AnyEndpoint selects every endpoint in Faults, and names requests to
	// unknown paths in the log.
	AnyEndpoint = ""
)

// DefaultAPIKey is the key of a simulator whose Options name none.
const DefaultAPIKey = "cloudsim-demo-key"

// DefaultKeyHeader is the spec's authentication header.
const DefaultKeyHeader = "Service-API-Key"

// Options configure a simulator. The zero value is a demo account with the
// spec's limits on the real clock.
type Options struct {
	// APIKey is the account's key (default DefaultAPIKey); KeyHeader the
	// header that carries it (default DefaultKeyHeader).
	APIKey    string
	KeyHeader string

	// Catalogue holds the account's devices; nil means DemoCatalogue().
	// New takes ownership of it.
	Catalogue *Catalogue

	// ErrorsAs200 answers request failures (400 and 404) with HTTP 200 and
	// the code in the body, as the live service often does. 401, 429 and
	// injected faults keep their HTTP status.
	ErrorsAs200 bool

	// EmptyRateLimitBody answers 429 with an empty body instead of
	// {"code":429,"msg":"Too Many Requests"}.
	EmptyRateLimitBody bool

	// Limits override the spec's rate limits row by row (a zero row keeps
	// the spec's value; Unlimited switches a bucket off).
	Limits Limits

	// Now is the clock of the rate limits, the property drift and the logs
	// (default time.Now). Latency and hangs use real time.
	Now func() time.Time

	// Seed makes property drift and fractional faults reproducible.
	Seed uint64

	// LogLimit bounds Requests() and ControlLog() (default 10000 each; the
	// oldest entries go first). Counts are never dropped.
	LogLimit int

	// Quota is the account's request quota, told in the API-RateLimit-*
	// headers and enforced with 429; ShortQuota is a shorter window in the
	// X-RateLimit-* headers. Both are off by default.
	Quota, ShortQuota Quota
}

// Sim is a simulated cloud account, served as an http.Handler. All methods
// are safe for concurrent use.
type Sim struct {
	keyHeader   string
	errorsAs200 bool
	emptyBody   bool
	now         func() time.Time
	start       time.Time
	seed        uint64
	logLimit    int
	faults      *Faults

	mu            sync.Mutex
	key           string
	revoked       bool
	order         []string // device ids in list order, removed ones included
	devices       map[string]*simDevice
	removed       map[string]bool
	scenes        map[string][]capability.Option
	diyScenes     map[string][]capability.Option
	defaultScenes []capability.Option
	stateless     map[string]bool // device ids whose state reads answer "devices not exist"
	buckets       *buckets
	quotas        quotas
	requests      []Request
	controls      []ControlRecord
	counts        Counts
	listeners     map[int]func(Event)
	nextListener  int
}

// New builds a simulator.
func New(opts Options) *Sim {
	if opts.APIKey == "" {
		opts.APIKey = DefaultAPIKey
	}
	if opts.KeyHeader == "" {
		opts.KeyHeader = DefaultKeyHeader
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.LogLimit <= 0 {
		opts.LogLimit = 10000
	}
	cat := opts.Catalogue
	if cat == nil {
		cat = DemoCatalogue()
	}
	s := &Sim{
		keyHeader:     opts.KeyHeader,
		errorsAs200:   opts.ErrorsAs200,
		emptyBody:     opts.EmptyRateLimitBody,
		now:           opts.Now,
		start:         opts.Now(),
		seed:          opts.Seed,
		logLimit:      opts.LogLimit,
		faults:        newFaults(opts.Seed),
		key:           opts.APIKey,
		devices:       map[string]*simDevice{},
		removed:       map[string]bool{},
		scenes:        map[string][]capability.Option{},
		diyScenes:     map[string][]capability.Option{},
		defaultScenes: cat.DefaultScenes,
		buckets:       newBuckets(opts.Limits.withDefaults()),
		quotas:        newQuotas(opts),
		counts:        newCounts(),
		listeners:     map[int]func(Event){},
	}
	for id, o := range cat.Scenes {
		s.scenes[id] = o
	}
	for id, o := range cat.DIYScenes {
		s.diyScenes[id] = o
	}
	for i, d := range cat.Devices {
		if _, dup := s.devices[d.Device.Device]; dup || d.Device.Device == "" {
			continue
		}
		s.order = append(s.order, d.Device.Device)
		s.devices[d.Device.Device] = newSimDevice(d.Device, d.Raw, i)
	}
	s.stateless = statelessOf(cat)
	return s
}

// Faults is the simulator's fault injection.
func (s *Sim) Faults() *Faults { return s.faults }

// KeyHeader is the header the simulator reads the API key from.
func (s *Sim) KeyHeader() string { return s.keyHeader }

// APIKey is the key the simulator currently accepts.
func (s *Sim) APIKey() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.key
}

// RevokeKey makes every request answer 401 until RestoreKey, as when the
// user deletes the key in the vendor's app.
func (s *Sim) RevokeKey() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked = true
}

// RestoreKey undoes RevokeKey.
func (s *Sim) RestoreKey() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked = false
}

// SetAPIKey replaces the accepted key (a rotated key).
func (s *Sim) SetAPIKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// errNoDevice is wrapped by every method that is given an unknown device id.
var errNoDevice = errors.New("no such device in the simulated account")

func (s *Sim) lookup(id string) (*simDevice, error) {
	sd, ok := s.devices[id]
	if !ok || s.removed[id] {
		return nil, fmt.Errorf("cloudsim: device %q: %w; use an id of Devices()", id, errNoDevice)
	}
	return sd, nil
}

// Devices returns the account's devices as the device list would.
func (s *Sim) Devices() []capability.Device {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []capability.Device
	for _, id := range s.order {
		if s.removed[id] {
			continue
		}
		out = append(out, copyDevice(s.devices[id].dev))
	}
	return out
}

// copyDevice deep-copies a definition through JSON, so callers never share
// option slices or values with the simulator.
func copyDevice(d capability.Device) capability.Device {
	b, err := json.Marshal(d)
	if err != nil {
		return d
	}
	var out capability.Device
	if err := json.Unmarshal(b, &out); err != nil {
		return d
	}
	return out
}

// SetOnline takes a device offline or back online. Offline, the state
// endpoint answers online:false with the values it had (property readings
// stop drifting), and controls fail with 400 "device offline".
func (s *Sim) SetOnline(device string, online bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sd, err := s.lookup(device)
	if err != nil {
		return err
	}
	if sd.online == online {
		return nil
	}
	sd.online = online
	if online {
		sd.frozen = nil
	} else {
		s.freeze(sd, s.now())
	}
	return nil
}

// RemoveDevice takes a device out of the account: it leaves the device list
// and its requests answer 404 "devices not belong you". Its state is kept
// for RestoreDevice.
func (s *Sim) RemoveDevice(device string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.lookup(device); err != nil {
		return err
	}
	s.removed[device] = true
	return nil
}

// RestoreDevice puts a removed device back, with the state it had.
func (s *Sim) RestoreDevice(device string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.devices[device]; !ok || !s.removed[device] {
		return fmt.Errorf("cloudsim: restore device %q: it was not removed; use AddDevice for a new one", device)
	}
	delete(s.removed, device)
	return nil
}

// AddDevice adds a new device to the end of the account's list, with
// initial state (online, example values), as when the user pairs one.
func (s *Sim) AddDevice(d capability.Device) error {
	if d.Device == "" || d.SKU == "" {
		return errors.New("cloudsim: add device: the device needs an sku and a device id")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.devices[d.Device]; ok {
		return fmt.Errorf("cloudsim: add device %s: the id is taken; use RestoreDevice for a removed one", d.Device)
	}
	s.order = append(s.order, d.Device)
	s.devices[d.Device] = newSimDevice(copyDevice(d), nil, len(s.order)-1)
	return nil
}

// State is what the state endpoint would answer for the device now, without
// spending a request.
func (s *Sim) State(device string) (cloud.DeviceState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sd, err := s.lookup(device)
	if err != nil {
		return cloud.DeviceState{}, err
	}
	return s.stateAt(sd, s.now()), nil
}

// Value is the stored value of one instance, including those the state
// endpoint does not report (the last scene, segment or music setting) and
// property readings.
func (s *Sim) Value(device, instance string) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sd, err := s.lookup(device)
	if err != nil {
		return nil, false
	}
	c, ok := sd.dev.Capability(instance)
	if !ok {
		return nil, false
	}
	if c.Type == capability.TypeProperty {
		return s.reading(sd, instance, s.now()), true
	}
	v, ok := sd.values[instance]
	return clone(v), ok
}

// SetValue changes a device's state as the device itself would, such as a
// button press. Controllable values must pass capability.Validate; a
// property reading set this way stops drifting.
func (s *Sim) SetValue(device, instance string, v any) error {
	v = capability.NormalizeValue(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	sd, err := s.lookup(device)
	if err != nil {
		return err
	}
	c, ok := sd.dev.Capability(instance)
	if !ok {
		return fmt.Errorf("cloudsim: set %s of %s: the device has no such instance", instance, device)
	}
	if c.Type == capability.TypeProperty {
		if sd.overrides == nil {
			sd.overrides = map[string]any{}
		}
		sd.overrides[instance] = clone(v)
		return nil
	}
	if err := capability.Validate(s.effective(sd, c), v); err != nil {
		return fmt.Errorf("cloudsim: set %s of %s: %w", instance, device, err)
	}
	sd.values[instance] = merge(sd.values[instance], capability.WithDefaults(c, v))
	return nil
}

// DrainControl takes up to n tokens from the account's control bucket now,
// as another client sharing the account would, and returns how many it got.
func (s *Sim) DrainControl(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return drain(s.buckets.control, s.now(), n)
}

// sceneOptions is the dynamic-scene list of a device: the catalogue's, the
// default list, or a generated one; nil when the device has no lightScene.
func (s *Sim) sceneOptions(sd *simDevice) []capability.Option {
	if o, ok := s.scenes[sd.dev.Device]; ok {
		return o
	}
	if _, ok := sd.dev.Capability(capability.InstanceLightScene); !ok {
		return nil
	}
	if s.defaultScenes != nil {
		return s.defaultScenes
	}
	return generatedScenes(sd.dev.Device)
}

// diySceneOptions is the DIY list of a device: the catalogue's, the device
// list's diyScene options, or a generated one; nil when it has no diyScene.
func (s *Sim) diySceneOptions(sd *simDevice) []capability.Option {
	if o, ok := s.diyScenes[sd.dev.Device]; ok {
		return o
	}
	c, ok := sd.dev.Capability(capability.InstanceDIYScene)
	if !ok {
		return nil
	}
	if c.Parameters != nil && len(c.Parameters.Options) > 0 {
		return c.Parameters.Options
	}
	return generatedDIYScenes(sd.dev.Device)
}

// effective is the definition a control value is checked against, with the
// scene endpoints' options added for scenes.
func (s *Sim) effective(sd *simDevice, c capability.Capability) capability.Capability {
	var extra []capability.Option
	switch c.Instance {
	case capability.InstanceLightScene:
		extra = s.sceneOptions(sd)
	case capability.InstanceDIYScene:
		extra = s.diySceneOptions(sd)
	default:
		return c
	}
	if c.Parameters == nil || len(extra) == 0 {
		return c
	}
	p := *c.Parameters
	p.Options = append(append([]capability.Option(nil), p.Options...), extra...)
	c.Parameters = &p
	return c
}
