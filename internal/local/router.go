// Package local routes the bridge's work between the vendor's LAN interface
// and the cloud. It owns the LAN client, finds the cloud's lights on the
// LAN, reads and commands them there, and tells the registry and the poller
// where each light is reached. Everything the LAN cannot do stays with the
// cloud: the bridge asks Command first and sends to the cloud whatever it
// declines or fails. It knows nothing of MQTT or the scheduler.
package local

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/registry"
)

// Store is what the router needs of the registry.
type Store interface {
	Seq() uint64
	ApplyLocal(k capability.Key, values map[string]any, sentSeq uint64)
	SetLocation(k capability.Key, loc registry.Location)
}

// Reads is what the router needs of the poller: where a device is read.
type Reads interface {
	SetLocal(k capability.Key, local bool, cloudEvery time.Duration)
}

// Config configures a Router.
type Config struct {
	// Client is the LAN client's configuration; its Clock is the router's
	// time too.
	Client lan.Config
	// ScanInterval is how often the LAN is scanned, and how often the cloud
	// reads a local light's instances the LAN lacks. PollInterval is how
	// often each local light is read over the LAN.
	ScanInterval, PollInterval time.Duration
	Logger                     zerolog.Logger
}

// Router is the bridge's LAN side. Create it with New, Bind it, Run it.
type Router struct {
	cfg    Config
	log    zerolog.Logger
	client *lan.Client
	disp   *lan.Dispatcher

	store Store
	reads Reads

	kick *clock.Wake // a new device list waits in next

	mu      sync.Mutex
	next    []capability.Device // the latest list, not yet applied; nil: none
	pending bool
	// stopped: Run ended or Close; no list is applied any more.
	stopped bool
	byID    map[string]capability.Device // the lights the LAN may control, by id
	byKey   map[capability.Key]string
}

// New binds LAN_LISTEN; a port taken by another program is an error that
// says which and what to do. Nothing is sent before Run.
func New(cfg Config) (*Router, error) {
	r := &Router{cfg: cfg, log: cfg.Logger.With().Str("component", "local").Logger(),
		kick: clock.NewWake(cfg.Client.Clock, "local: a device list"), byID: map[string]capability.Device{}, byKey: map[capability.Key]string{}}
	cc := cfg.Client
	cc.Logger = cfg.Logger
	cc.OnDevice = r.onDevice
	c, err := lan.New(cc)
	if err != nil {
		return nil, err
	}
	r.client = c
	r.disp = lan.NewDispatcher(c)
	return r, nil
}

// Bind gives the router the registry and the poller; call it before Run
// and before the first Command.
func (r *Router) Bind(store Store, reads Reads) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.store, r.reads = store, reads
}

// SetDevices takes the cloud's device list (the registry's sink calls it,
// with the registry locked: it only hands the list over).
func (r *Router) SetDevices(all []capability.Device) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next, r.pending = all, true
	if !r.stopped { // nobody would take the wake-up's work
		r.kick.Notify()
	}
}

// Run scans, reads the local lights and applies device lists until ctx
// ends, then stops the client; commands in flight then go to the cloud.
func (r *Router) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { r.client.RunScans(ctx, r.cfg.ScanInterval) })
	wg.Go(func() { r.client.RunPolls(ctx, r.cfg.PollInterval, r.read) })
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			r.Close()
			return
		case <-r.kick.C():
			taken := r.kick.Take()
			if r.applyList() {
				// Scan now for new lights not found yet, rather than at the
				// next round.
				if err := r.client.Scan(ctx); err != nil && ctx.Err() == nil {
					r.log.Warn().Err(err).Msg("LAN scan incomplete")
				}
			}
			taken() // the list is applied, the scan's datagrams on their way
		}
	}
}

// Close stops sending and releases the socket; Run does it too, and a
// second Close does nothing.
func (r *Router) Close() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	r.kick.Take()() // a list that came too late is not applied
	r.disp.Close()
	_ = r.client.Close()
}

// applyList makes the lights the LAN may control in the latest device list
// known to the client and eligible in the registry. It reports whether a
// light was added that the client has not found.
func (r *Router) applyList() bool {
	r.mu.Lock()
	list, ok := r.next, r.pending
	r.next, r.pending = nil, false
	if !ok {
		r.mu.Unlock()
		return false
	}
	byID := map[string]capability.Device{}
	byKey := map[capability.Key]string{}
	added := map[string]bool{}
	for _, d := range list {
		if !capability.LocalEligible(d) {
			continue
		}
		byID[d.Device], byKey[d.Key()] = d, d.Device
		if _, had := r.byID[d.Device]; !had {
			added[d.Device] = true
		}
	}
	r.byID, r.byKey = byID, byKey
	store := r.store
	r.mu.Unlock()
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	r.client.SetKnown(ids)
	missing := false
	for _, id := range ids {
		d := byID[id]
		ld, found := r.client.Device(id)
		switch {
		case found:
			r.onDevice(ld)
		case store != nil:
			store.SetLocation(d.Key(), registry.Location{Eligible: true})
		}
		missing = missing || (added[id] && !found)
	}
	return missing
}

// cloudOnly says whether the cloud reports instances the LAN lacks, such
// as toggles or sensors, so the cloud must still read the device.
func cloudOnly(d capability.Device) bool {
	for _, c := range d.Capabilities {
		switch {
		case !c.Readable(), capability.IsLocal(c.Instance), c.Type == capability.TypeOnline:
		case slices.Contains(neverReported, c.Instance):
		default:
			return true
		}
	}
	return false
}

var neverReported = []string{
	capability.InstanceLightScene, capability.InstanceDIYScene, capability.InstanceSnapshot,
	capability.InstanceMusicMode, capability.InstanceSegmentedColorRGB, capability.InstanceSegmentBrightness,
}

// onDevice hears the client find, move or lose a light.
func (r *Router) onDevice(ld lan.Device) {
	r.mu.Lock()
	d, ok := r.byID[ld.ID]
	store, reads := r.store, r.reads
	r.mu.Unlock()
	if !ok || store == nil {
		return
	}
	loc := registry.Location{Eligible: true, Local: ld.Reachable && ld.Addr.IsValid()}
	if ld.Addr.IsValid() {
		loc.Addr = ld.Addr.String()
	}
	store.SetLocation(d.Key(), loc)
	every := time.Duration(0)
	if cloudOnly(d) {
		every = r.cfg.ScanInterval
	}
	reads.SetLocal(d.Key(), loc.Local, every)
}

// read is one LAN poll of a light: the registry's sequence number is taken
// before the request, so a status sent before a command cannot overwrite
// the command's value.
func (r *Router) read(ctx context.Context, id string) {
	r.mu.Lock()
	d, ok := r.byID[id]
	store := r.store
	r.mu.Unlock()
	if !ok || store == nil {
		return
	}
	seq := store.Seq()
	st, err := r.client.Status(ctx, id)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Debug().Err(err).Str("device", id).Msg("LAN status read failed")
		}
		return
	}
	store.ApplyLocal(d.Key(), st.Values(), seq)
}

// Command sends one instance's value over the LAN if it can go there now
// and returns true; false means nothing was sent and the cloud's turn.
// report is called once, from another goroutine: nil once confirmed,
// capability.ErrSuperseded, or an error after which the caller uses the cloud.
func (r *Router) Command(k capability.Key, instance string, value any, report func(error)) bool {
	r.mu.Lock()
	id, ok := r.byKey[k]
	store := r.store
	r.mu.Unlock()
	if !ok || store == nil {
		return false
	}
	seq := store.Seq()
	return r.disp.Submit(id, instance, value, func(st lan.Status, err error) {
		if err == nil {
			store.ApplyLocal(k, st.Values(), seq)
		}
		report(err)
	})
}

// Devices lists the lights found on the LAN.
func (r *Router) Devices() []lan.Device { return r.client.Devices() }

// Stats are the LAN client's counters.
func (r *Router) Stats() lan.Stats { return r.client.Stats() }

// Addr is where the LAN answers arrive.
func (r *Router) Addr() string { return r.client.Addr().String() }

// Info is what bridge/info shows of local control.
type Info struct {
	Enabled   bool     `json:"enabled"`
	Listen    string   `json:"listen"`
	Targets   []string `json:"scan_targets"`
	Found     int      `json:"found"`
	Reachable int      `json:"reachable"`
	// Datagrams sent and received, the received ones dropped, and how the
	// guard weighed scan answers (lan.Stats: early, contested, disputed).
	Stats map[string]uint64 `json:"datagrams"`
}

// Info summarises local control for bridge/info.
func (r *Router) Info() Info {
	st := r.Stats()
	i := Info{Enabled: true, Listen: r.Addr(), Stats: map[string]uint64{
		"sent": st.Sent, "received": st.Received, "malformed": st.Malformed, "oversized": st.Oversized,
		"unsolicited": st.Unsolicited, "spoofed": st.Spoofed, "unknown_ids": st.Unknown,
		"confirmed": st.Confirmed, "not_confirmed": st.NotConfirmed, "no_answer": st.NoAnswer,
		"contested": st.Contested, "moved": st.Moved, "early": st.Early, "disputed": st.Disputed,
	}}
	for _, t := range r.cfg.Client.Targets {
		i.Targets = append(i.Targets, t.String())
	}
	if len(i.Targets) == 0 {
		i.Targets = []string{lan.DefaultScanTargets}
	}
	for _, d := range r.Devices() {
		i.Found++
		if d.Reachable {
			i.Reachable++
		}
	}
	return i
}
