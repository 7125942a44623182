package statuspage

import (
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/poller"
	"cloud2mqtt/internal/registry"
	"cloud2mqtt/internal/scheduler"
	"cloud2mqtt/internal/settings"
	"cloud2mqtt/internal/web"
)

// source is the page's web.Source: what the registry, the poller, the
// scheduler and the settings know.
type source struct {
	Parts
	problems *web.ProblemLog
	errs     *web.DeviceErrors
	now      func() time.Time
}

// status is a device's status on the page.
func status(v registry.View) string {
	switch {
	case !v.Read:
		return web.StatusUnknown
	case !v.Reachable:
		return web.StatusUnreachable
	case !v.Online:
		return web.StatusOffline
	}
	return web.StatusOnline
}

// row is one device's row: opts are the devices' options by topic id, ivs
// the poller's intervals.
func (s *source) row(v registry.View, id string, opts map[string]settings.Device, ivs map[capability.Key]poller.Interval) web.Device {
	k := v.Device.Key()
	o := opts[id]
	d := web.Device{ID: id, Name: capability.DisplayName(v.Device, o.Name), Model: v.Device.SKU, Type: v.Device.Type,
		Status: status(v), Disabled: o.Disabled, Path: "cloud", LastError: s.errs.Last(k, v.Read, v.LastRead)}
	if v.Location.Local {
		d.Path = "local" // the LAN reaches it now
	}
	if v.Read && !v.LastRead.IsZero() {
		t := v.LastRead
		d.LastRead = &t
	}
	switch iv, ok := ivs[k]; {
	case d.Path == "local" && s.LANPoll > 0:
		// Read at the LAN poll, not the cloud's interval.
		d.PollInterval, d.PollWhy = web.Duration(s.LANPoll), poller.WhyLocal
	case ok:
		d.PollInterval, d.OwnInterval, d.PollWhy = web.Duration(iv.Every), iv.Own, iv.Why
	}
	return d
}

// Devices implements web.Source.
func (s *source) Devices() []web.Device {
	views := s.Registry.Views()
	ids, opts, ivs := s.Mirror.IDs(), s.Settings.Devices(), s.Poller.Intervals()
	out := make([]web.Device, 0, len(views))
	for _, v := range views {
		id, ok := ids[v.Device.Key()]
		if !ok {
			continue // listed a moment ago: the mirror names it next
		}
		out = append(out, s.row(v, id, opts, ivs))
	}
	return out
}

// Device implements web.Source.
func (s *source) Device(id string) (web.DeviceDetail, bool) {
	k, id, ok := s.Mirror.KeyOf(id)
	if !ok {
		return web.DeviceDetail{}, false
	}
	v, ok := s.Registry.Snapshot(k)
	if !ok {
		return web.DeviceDetail{}, false
	}
	return web.DeviceDetail{Device: s.row(v, id, s.Settings.Devices(), s.Poller.Intervals()),
		Values: v.Values, Capabilities: v.Device.Capabilities}, true
}

// Budget implements web.Source: the figures of bridge/stats and /metrics.
func (s *source) Budget() web.Budget {
	st := s.Scheduler.Stats()
	limit := s.Settings.DailyLimit()
	b := web.Budget{RequestsToday: st.RequestsToday, DailyLimit: limit, RateLimited: st.RateLimited,
		QueueDepth: st.QueuedCommands + st.QueuedReads, InFlight: st.InFlight,
		PollInterval: web.Duration(s.Poller.Stats().Interval)}
	if !st.LastRateLimited.IsZero() {
		t := st.LastRateLimited
		b.Last429 = &t
	}
	b.Quota = quota(st, limit, s.now())
	l := s.Limits
	capOf := func(l, def scheduler.Limit) float64 {
		if l.Burst < 1 || l.Rate <= 0 {
			return float64(def.Burst)
		}
		return float64(l.Burst)
	}
	b.Buckets = []web.Bucket{
		{Name: "device list", Tokens: st.Tokens.DeviceList, Capacity: capOf(l.DeviceList, scheduler.DefaultDeviceList)},
		{Name: "control (account)", Tokens: st.Tokens.ControlAccount, Capacity: capOf(l.ControlAccount, scheduler.DefaultControlAccount)},
		{Name: "control (fewest of any device)", Tokens: st.Tokens.ControlDeviceMin, Capacity: capOf(l.ControlDevice, scheduler.DefaultControlDevice)},
		{Name: "state (fewest of any device)", Tokens: st.Tokens.StateMin, Capacity: capOf(l.State, scheduler.DefaultState)},
		{Name: "scenes (fewest of any device)", Tokens: st.Tokens.ScenesMin, Capacity: capOf(l.Scenes, scheduler.DefaultScenes)},
	}
	return b
}

// quota is the page's quota (scheduler.Quota.Binding); nil while none is
// known.
func quota(s scheduler.Stats, dailyLimit int, now time.Time) *web.Quota {
	q, ok := s.Quota.Binding(dailyLimit, s.RequestsToday, now)
	if !ok {
		return nil
	}
	w := &web.Quota{Limit: q.Limit, Remaining: q.Remaining, Source: q.Source, Fits: q.Fits, PacePerHour: q.PacePerHour}
	if !q.Reset.IsZero() {
		w.Reset = &q.Reset
	}
	if !q.RunsOut.IsZero() {
		w.RunsOut = &q.RunsOut
	}
	return w
}

// Problems implements web.Source, naming each problem's device as the page
// does rather than by sku/device or topic id.
func (s *source) Problems() []web.Problem {
	ps := s.problems.Problems()
	var opts map[string]settings.Device
	named := map[string]web.Problem{} // by reference: a device is looked up once
	for i, p := range ps {
		ref, _ := p.Fields["device"].(string)
		if ref == "" {
			continue
		}
		n, ok := named[ref]
		if !ok {
			if opts == nil {
				opts = s.Settings.Devices()
			}
			n = s.nameOf(ref, opts)
			named[ref] = n
		}
		ps[i].DeviceName, ps[i].DeviceRefs = n.DeviceName, n.DeviceRefs
	}
	return ps
}

// nameOf is the display name of the device ref names and what else it
// goes by (none when ref names no device the bridge lists).
func (s *source) nameOf(ref string, opts map[string]settings.Device) web.Problem {
	k, id, ok := s.Mirror.KeyOf(ref)
	if !ok {
		return web.Problem{}
	}
	d, ok := s.Registry.Device(k)
	if !ok {
		return web.Problem{}
	}
	return web.Problem{DeviceName: capability.DisplayName(d, opts[id].Name), DeviceRefs: []string{k.String(), id}}
}
