package poller

import (
	"errors"
	"fmt"
	"time"

	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

// Scene rounds: a light's scene and DIY-scene lists, fetched together.

// stepScenes starts the device's scene round if one is due. The caller
// reschedules the device.
func (p *Poller) stepScenes(now time.Time, d *device) {
	if due, ok := d.scenesDue(); !ok || due.After(now) {
		return
	}
	light, diy := d.hasLight(), d.hasDIY()
	if !d.scenesWanted {
		n := 0
		for _, has := range []bool{light, diy} {
			if has {
				n++
			}
		}
		if at := p.pace.take(now, n, true); at.After(now) {
			d.scenesPacedUntil = at // the quota: from the scene rounds' share (quota.go)
			return
		}
	}
	d.scenesPacedUntil = time.Time{}
	d.scenesWanted = false
	r := &sceneRound{waiters: d.sceneWaiters}
	d.sceneWaiters = nil
	// Both fetches count before either is sent, so that one refused at
	// once cannot finish the round before the other is sent.
	if light {
		r.pending++
	}
	if diy {
		r.pending++
	}
	d.round = r
	fetch := func(diyKind bool, call func(sku, device string, report func(cloud.Scenes, error)) error) {
		err := call(d.dev.SKU, d.dev.Device, func(sc cloud.Scenes, err error) {
			p.post(func(now time.Time) { p.onScenes(now, d, diyKind, sc, err) })
		})
		if err != nil {
			p.onScenes(now, d, diyKind, cloud.Scenes{}, fmt.Errorf("poller: scene fetch not accepted: %w", err))
		}
	}
	if light {
		fetch(false, p.s.Scenes)
	}
	if diy {
		fetch(true, p.s.DIYScenes)
	}
}

// onScenes records one fetch of a round and finishes the round after its last.
func (p *Poller) onScenes(now time.Time, d *device, diyKind bool, sc cloud.Scenes, err error) {
	p.answered(now, err)
	r := d.round
	r.pending--
	switch {
	case err != nil:
		r.err = errors.Join(r.err, err)
	case diyKind:
		r.diy, r.diyOK = sc.Options(), true
	default:
		r.light, r.lightOK = sc.Options(), true
	}
	if r.pending > 0 {
		return
	}
	d.round = nil
	if p.devices[d.dev.Key()] != d {
		p.emitDone(r.waiters, fmt.Errorf("poller: scenes of %s: %w", d.dev, ErrRemoved))
		return
	}
	if r.err != nil {
		d.sceneFailures++
		retry := scheduler.Backoff(sceneRetry, p.cfg.SceneInterval, d.sceneFailures)
		d.nextScenes = onGridOf(now.Add(retry), p.grid)
		p.log.Info().Err(r.err).Stringer("device", d.dev).Stringer("retry_in", retry).Msg("scene fetch failed")
	} else {
		d.sceneFailures = 0
		d.nextScenes = onGridOf(now.Add(p.cfg.SceneInterval), p.grid)
	}
	p.schedule(d)
	p.store.SetScenes(d.dev.Key(), r.light, r.lightOK, r.diy, r.diyOK)
	var roundErr error
	if r.err != nil {
		roundErr = fmt.Errorf("poller: scenes of %s: %w", d.dev, r.err)
	}
	p.emitDone(r.waiters, roundErr)
}
