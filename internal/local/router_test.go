package local

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock/clocktest"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/lansim"
	"cloud2mqtt/internal/registry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeStore and fakeReads record what the router tells the registry and
// the poller.
type fakeStore struct {
	mu      sync.Mutex
	applied map[capability.Key]map[string]any
	loc     map[capability.Key]registry.Location
	changed chan struct{}
}

func (s *fakeStore) Seq() uint64 { return 0 }
func (s *fakeStore) ApplyLocal(k capability.Key, v map[string]any, _ uint64) {
	s.mu.Lock()
	s.applied[k] = v
	s.mu.Unlock()
	s.kick()
}
func (s *fakeStore) SetLocation(k capability.Key, l registry.Location) {
	s.mu.Lock()
	s.loc[k] = l
	s.mu.Unlock()
	s.kick()
}
func (s *fakeStore) kick() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}
func (s *fakeStore) location(k capability.Key) registry.Location {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loc[k]
}

type fakeReads struct {
	mu    sync.Mutex
	local map[capability.Key]time.Duration // cloudEvery of the local ones
}

func (r *fakeReads) SetLocal(k capability.Key, local bool, every time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if local {
		r.local[k] = every
	} else {
		delete(r.local, k)
	}
}

func light(id string, extra ...capability.Capability) capability.Device {
	caps := []capability.Capability{
		{Type: capability.TypeOnOff, Instance: capability.InstancePower, Parameters: &capability.Parameters{DataType: capability.DataEnum}},
		{Type: capability.TypeRange, Instance: capability.InstanceBrightness, Parameters: &capability.Parameters{DataType: capability.DataInteger,
			Range: &capability.Range{Min: 1, Max: 100, Precision: 1}}},
		{Type: capability.TypeDynamicScene, Instance: capability.InstanceLightScene, Parameters: &capability.Parameters{DataType: capability.DataEnum}},
	}
	return capability.Device{SKU: "H6008", Device: id, Type: capability.DeviceLight, Capabilities: append(caps, extra...)}
}

// TestRouter: lights found by a scan become local, a command is confirmed
// over the LAN into the registry, and a light that stops answering goes
// back to the cloud.
func TestRouter(t *testing.T) {
	quiet := light("AA:BB:CC:DD:EE:FF:00:01")
	toggle := light("AA:BB:CC:DD:EE:FF:00:02", capability.Capability{Type: capability.TypeToggle, Instance: "gradientToggle",
		Parameters: &capability.Parameters{DataType: capability.DataEnum}})
	fan := capability.Device{SKU: "H7102", Device: "AA:BB:CC:DD:EE:FF:00:03", Capabilities: []capability.Capability{
		{Type: capability.TypeToggle, Instance: "oscillationToggle", Parameters: &capability.Parameters{DataType: capability.DataEnum}}}}
	if !capability.LocalEligible(quiet) || capability.LocalEligible(fan) || cloudOnly(quiet) || !cloudOnly(toggle) {
		t.Fatal("eligibility or cloud-only instances misjudged")
	}
	clk := clocktest.New()
	sim, err := lansim.New(lansim.Options{Clock: clk},
		lansim.Spec{ID: quiet.Device, SKU: "H6008", State: lan.Status{Brightness: 5, HasBrightness: true}},
		lansim.Spec{ID: toggle.Device, SKU: "H6008"})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	cc := lan.Config{Listen: "127.0.0.1:0", ScanPort: sim.ScanPort(), CommandPort: sim.CommandPort(), ConfirmTimeout: 100 * time.Millisecond, Clock: clk}
	for _, id := range []string{quiet.Device, toggle.Device} {
		a, _ := sim.Addr(id)
		cc.Targets = append(cc.Targets, lan.Target{Host: a.String()})
	}
	r, err := New(Config{Client: cc, ScanInterval: time.Hour, PollInterval: time.Hour, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	store := &fakeStore{applied: map[capability.Key]map[string]any{}, loc: map[capability.Key]registry.Location{}, changed: make(chan struct{}, 1)}
	reads := &fakeReads{local: map[capability.Key]time.Duration{}}
	r.Bind(store, reads)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()

	r.SetDevices([]capability.Device{quiet, toggle, fan})
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for !cond() {
			select {
			case <-store.changed:
			case <-time.After(20 * time.Millisecond):
			case <-deadline:
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	wait("both lights local", func() bool { return store.location(quiet.Key()).Local && store.location(toggle.Key()).Local })
	// The poller hears of it right after the registry.
	wait("the poller told", func() bool {
		reads.mu.Lock()
		defer reads.mu.Unlock()
		_, q := reads.local[quiet.Key()]
		_, tg := reads.local[toggle.Key()]
		return q && tg
	})
	clk.IdleWithin(t, 10*time.Second, "after the lights were found")
	if a, _ := sim.Addr(quiet.Device); store.location(quiet.Key()).Addr != a.String() {
		t.Errorf("location %+v", store.location(quiet.Key()))
	}
	if store.location(fan.Key()) != (registry.Location{}) {
		t.Error("a fan was located")
	}
	reads.mu.Lock()
	if e, ok := reads.local[quiet.Key()]; !ok || e != 0 {
		t.Errorf("quiet light: local %v, cloud every %v", ok, e)
	}
	if e := reads.local[toggle.Key()]; e != time.Hour {
		t.Errorf("light with a toggle read by the cloud every %v, want LAN_SCAN_INTERVAL", e)
	}
	reads.mu.Unlock()

	if r.Command(fan.Key(), "oscillationToggle", int64(1), func(error) {}) || r.Command(quiet.Key(), capability.InstanceLightScene, int64(1), func(error) {}) {
		t.Error("a command without a LAN form was taken")
	}
	res := make(chan error, 1)
	report := func(err error) {
		if clk.Idle() {
			t.Error("a command's outcome reported with no work in hand")
		}
		res <- err
	}
	if !r.Command(quiet.Key(), capability.InstanceBrightness, int64(42), report) {
		t.Fatal("brightness of a local light not taken")
	}
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	clk.IdleWithin(t, 10*time.Second, "after the command")
	store.mu.Lock()
	got := store.applied[quiet.Key()][capability.InstanceBrightness]
	store.mu.Unlock()
	if got != int64(42) {
		t.Errorf("registry got brightness %v from the confirming status", got)
	}

	_ = sim.SetOff(quiet.Device, true)
	if !r.Command(quiet.Key(), capability.InstanceBrightness, int64(43), report) {
		t.Fatal("not taken")
	}
	if err := <-res; !errors.Is(err, lan.ErrNoAnswer) {
		t.Errorf("silent light: %v, want ErrNoAnswer", err)
	}
	wait("the silent light given back to the cloud", func() bool { return !store.location(quiet.Key()).Local })
	clk.IdleWithin(t, 10*time.Second, "after the silent light's command")
	reads.mu.Lock()
	_, still := reads.local[quiet.Key()]
	reads.mu.Unlock()
	if still || r.Command(quiet.Key(), capability.InstanceBrightness, int64(44), func(error) {}) {
		t.Error("a silent light's next command was taken over the LAN")
	}
	if i := r.Info(); i.Found != 2 || i.Reachable != 1 {
		t.Errorf("info %+v", i)
	}
}

// TestRouterUsesTheAnswersBeforeTheList: lights that answered the scan
// before the device list are local as soon as it arrives, and the router
// scans again only for lights not found yet.
func TestRouterUsesTheAnswersBeforeTheList(t *testing.T) {
	a, b := light("AA:BB:CC:DD:EE:FF:00:01"), light("AA:BB:CC:DD:EE:FF:00:02")
	offLAN := light("AA:BB:CC:DD:EE:FF:00:03")
	for _, tc := range []struct {
		name  string
		list  []capability.Device
		scans int // each light on the LAN heard, in all
	}{
		{"every light answered before the list", []capability.Device{a, b}, 1},
		{"a light not found yet", []capability.Device{a, b, offLAN}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktest.New()
			sim, err := lansim.New(lansim.Options{Clock: clk}, lansim.Spec{ID: a.Device, SKU: "H6008"}, lansim.Spec{ID: b.Device, SKU: "H6008"})
			if err != nil {
				t.Fatal(err)
			}
			defer sim.Close()
			scanned := make(chan string, 16)
			sim.OnReceive(func(id string, rc lansim.Received) {
				if rc.Request.Cmd == lan.CmdScan {
					scanned <- id
				}
			})
			cc := lan.Config{Listen: "127.0.0.1:0", ScanPort: sim.ScanPort(), CommandPort: sim.CommandPort(), Clock: clk}
			for _, id := range []string{a.Device, b.Device} {
				addr, _ := sim.Addr(id)
				cc.Targets = append(cc.Targets, lan.Target{Host: addr.String()})
			}
			r, err := New(Config{Client: cc, ScanInterval: time.Hour, PollInterval: time.Hour, Logger: zerolog.Nop()})
			if err != nil {
				t.Fatal(err)
			}
			store := &fakeStore{applied: map[capability.Key]map[string]any{}, loc: map[capability.Key]registry.Location{}, changed: make(chan struct{}, 1)}
			r.Bind(store, &fakeReads{local: map[capability.Key]time.Duration{}})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); r.Run(ctx) }()
			defer func() { cancel(); <-done }()

			// The first scan taken in by both lights: their answers are
			// work in hand until the client has kept them.
			for range 2 {
				select {
				case <-scanned:
				case <-time.After(10 * time.Second):
					t.Fatal("the first scan did not reach the lights")
				}
			}
			clk.IdleWithin(t, 10*time.Second, "the first scan answered")
			if st := r.Stats(); st.Early != 2 {
				t.Fatalf("stats %+v: want the first scan's 2 answers kept", st)
			}
			r.SetDevices(tc.list)
			clk.IdleWithin(t, 10*time.Second, "the list applied")
			for _, d := range []capability.Device{a, b} {
				if loc := store.location(d.Key()); !loc.Local {
					t.Errorf("%s: location %+v, want local", d.Device, loc)
				}
				if got := sim.Counts(d.Device)[lan.CmdScan]; got != tc.scans {
					t.Errorf("%s heard %d scans, want %d", d.Device, got, tc.scans)
				}
			}
		})
	}
}
