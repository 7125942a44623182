package scheduler

import (
	"context"
	"errors"
	"sync"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/clock"
)

const sweepEvery = time.Minute

// Run sends the queued requests until ctx ends. Then it stops intake
// (submissions fail with ErrClosed), reports every queued request with
// ErrNotSent, lets the requests on the wire finish (cancelling them after
// ShutdownTimeout) and returns nil. It may be called once.
func (s *Scheduler) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("scheduler: Run called twice; create a new Scheduler for a new run")
	}
	s.started = true
	s.lastSweep = s.nowLocked()
	s.mu.Unlock()

	// Requests on the wire outlive ctx: shutdown lets them finish.
	reqCtx, cancelReq := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelReq()
	timer := s.cfg.Clock.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()

	// Reads go to long-lived workers, as many as may be in flight, because
	// decoding grows a goroutine's stack and a new goroutine per read would
	// copy it every time. Commands keep a goroutine each: they are rare.
	readJobs := make(chan *read, s.cfg.MaxInFlight)
	var workers sync.WaitGroup
	for range s.cfg.MaxInFlight {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for r := range readJobs {
				s.sendRead(reqCtx, r)
			}
		}()
	}
	defer func() { // after shutdown has waited for the reads in flight
		close(readJobs)
		workers.Wait()
	}()

	var cmds []*command
	var reads []*read
	for {
		woken := s.wake.Take()
		s.mu.Lock()
		now := s.nowLocked()
		var wakeAt time.Time
		cmds, reads, wakeAt = s.dispatchLocked(now, cmds[:0], reads[:0])
		if now.Sub(s.lastSweep) >= sweepEvery {
			s.sweepLocked(now)
		}
		out := s.outbox
		s.outbox = nil
		s.mu.Unlock()

		for _, f := range out {
			f()
		}
		for _, c := range cmds {
			s.wg.Add(1)
			c.done = clock.Busy(s.cfg.Clock, "scheduler: a command on the wire")
			go s.sendCommand(reqCtx, c)
		}
		for _, r := range reads {
			s.wg.Add(1)
			r.done = clock.Busy(s.cfg.Clock, "scheduler: a read on the wire")
			if r.first {
				// Beyond the workers' number, and only at a start or
				// when the list adds devices: a goroutine each.
				go s.sendRead(reqCtx, r)
				continue
			}
			readJobs <- r
		}
		clear(cmds)
		clear(reads)
		if wakeAt.IsZero() {
			timer.Stop()
		} else {
			timer.ResetAt(wakeAt)
		}
		woken()
		select {
		case <-ctx.Done():
			return s.shutdown(cancelReq)
		case <-s.wake.C():
		case <-timer.C():
		}
	}
}

func (s *Scheduler) shutdown(cancelReq context.CancelFunc) error {
	s.mu.Lock()
	s.closed = true
	now := s.nowLocked()
	s.failQueuedLocked(now, ErrNotSent)
	out := s.outbox
	s.outbox = nil
	inflight := s.requestsInFlight + s.firstInFlight
	s.mu.Unlock()
	for _, f := range out {
		f()
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	t := s.cfg.Clock.NewTimer(ShutdownTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C():
		s.log.Warn().Int("in_flight", inflight).Dur("waited", ShutdownTimeout).
			Msg("cancelling requests still on the wire at shutdown")
		cancelReq()
		<-done
	}
	return nil
}

// Earliest is the earlier of two instants, the zero time meaning none.
func Earliest(cur, t time.Time) time.Time {
	if t.IsZero() || (!cur.IsZero() && !t.Before(cur)) {
		return cur
	}
	return t
}

// dispatchLocked takes every request that may be sent now off the queues,
// counting it against its buckets and slots, and returns them with the
// instant at which a waiting request next becomes sendable (zero when only
// an answer or a submission can change anything). Commands go first, then
// reads.
func (s *Scheduler) dispatchLocked(now time.Time, cmds []*command, reads []*read) ([]*command, []*read, time.Time) {
	if now.Before(s.authUntil) {
		if s.queuedCommands > 0 || s.queuedReadWaiters > 0 {
			s.failQueuedLocked(now, s.authHoldErrLocked())
		}
		return cmds, reads, time.Time{}
	}
	// After a hold-off, until an answer shows the key is accepted again,
	// one request at a time probes the cloud: a key still refused costs
	// one request (and one error line) per hold-off, not one per queued
	// request.
	// While the account's quota is spent nothing is sent until it renews
	// (at most MaxRetryAfter at a time); after that, until an answer says
	// it renewed, one request at a time finds out.
	s.quota.advance(now)
	if now.Before(s.quota.holdUntil) {
		return cmds, reads, s.quota.holdUntil
	}
	maxInFlight, firstSlots := s.cfg.MaxInFlight, s.cfg.FirstInFlight
	if s.authErr != nil || s.quotaProbingLocked(now) {
		// One request at a time, first reads included.
		maxInFlight, firstSlots = max(1-s.firstInFlight, 0), 0
	}
	cmds, cmdWake := s.dispatchCommandsLocked(now, maxInFlight, cmds)
	reads, firstWake := s.dispatchFirstLocked(now, firstSlots, reads)
	reads, readWake := s.dispatchReadsLocked(now, maxInFlight, reads)
	return cmds, reads, Earliest(cmdWake, Earliest(firstWake, readWake))
}

// dispatchCommandsLocked appends the commands that may be sent now to cmds:
// devices in ring order, one command each; a device served goes to the
// back, so at the account limit devices take turns. wake is when a waiting
// command next becomes sendable.
func (s *Scheduler) dispatchCommandsLocked(now time.Time, maxInFlight int, cmds []*command) (_ []*command, wake time.Time) {
	if len(s.ring) == 0 {
		return cmds, wake
	}
	kept := s.ring[:0]
	var served []*device
	for _, d := range s.ring {
		if len(d.commands) == 0 {
			d.inRing = false
			continue
		}
		if d.busy[epControl] || s.requestsInFlight >= maxInFlight || !s.control.ready(now) {
			kept = append(kept, d)
			continue
		}
		c := d.commands[0]
		if c.notBefore.After(now) {
			wake = Earliest(wake, c.notBefore)
			kept = append(kept, d)
			continue
		}
		b := s.bucketLocked(d, epControl)
		if at := b.readyAt(now); !at.Equal(now) {
			wake = Earliest(wake, at)
			kept = append(kept, d)
			continue
		}
		s.sendCommandLocked(now, d, b)
		cmds = append(cmds, c)
		if len(d.commands) > 0 {
			served = append(served, d)
		} else {
			d.inRing = false
			d.commands = nil
		}
	}
	s.ring = append(kept, served...)
	if s.queuedCommands > 0 && !s.control.ready(now) {
		wake = Earliest(wake, s.control.readyAt(now))
	}
	return cmds, wake
}

// sendCommandLocked takes d's first command off its queue and counts it
// against the account's and the device's control buckets.
func (s *Scheduler) sendCommandLocked(now time.Time, d *device, b *bucket) {
	c := d.commands[0]
	d.commands[0] = nil
	d.commands = d.commands[1:]
	s.queuedCommands--
	d.busy[epControl] = true
	s.control.send()
	b.send()
	s.requestsInFlight++
	s.sentLocked(&c.attempt, now)
}

// dispatchFirstLocked appends the first reads (PriorityFirst) that may be
// sent now beside the steady slots to reads, oldest first, while fewer
// than slots of them are on the wire. Each still waits for its device's
// bucket: what the allowance lifts is only the cap on reads at once, which
// no row of the cloud's rate table sets for state reads (they are limited
// per device). wake is when a waiting one next becomes sendable.
func (s *Scheduler) dispatchFirstLocked(now time.Time, slots int, reads []*read) (_ []*read, wake time.Time) {
	l := &s.readQueues[PriorityFirst]
	for e := l.Front(); e != nil && s.firstInFlight < slots; {
		next := e.Next()
		if r := e.Value.(*read); s.sendableLocked(now, r, &wake) {
			l.Remove(e)
			r.first = true
			s.sendReadLocked(now, r)
			reads = append(reads, r)
		}
		e = next
	}
	return reads, wake
}

// dispatchReadsLocked appends the reads that may be sent now to reads: by
// priority, oldest first within one, while read slots are free. Refreshes
// (scene lists, the device list) wait while first reads wait or are on the
// wire: at a start, every first state is read, and its answer handled,
// before the scene lists' answers compete with them. wake is when a
// waiting read next becomes sendable.
func (s *Scheduler) dispatchReadsLocked(now time.Time, maxInFlight int, reads []*read) (_ []*read, wake time.Time) {
	readSlots := s.cfg.MaxInFlight - s.cfg.CommandSlots
	for p := range s.readQueues {
		if Priority(p) == PriorityRefresh && (s.firstInFlight > 0 || s.readQueues[PriorityFirst].Len() > 0) {
			break // sent when the first reads are answered (sendRead signals)
		}
		l := &s.readQueues[p]
		for e := l.Front(); e != nil; {
			next := e.Next()
			if s.readsInFlight >= readSlots || s.requestsInFlight >= maxInFlight {
				return reads, wake
			}
			if r := e.Value.(*read); s.sendableLocked(now, r, &wake) {
				l.Remove(e)
				s.sendReadLocked(now, r)
				reads = append(reads, r)
			}
			e = next
		}
	}
	return reads, wake
}

// sendableLocked reports whether r may be sent now: its device has no
// request of its endpoint on the wire, its back-off is over and its bucket
// has a token. When it waits for an instant, *wake is brought forward to it.
func (s *Scheduler) sendableLocked(now time.Time, r *read, wake *time.Time) bool {
	d := r.dev
	switch {
	case d.busy[r.ep]:
		return false
	case r.notBefore.After(now):
		*wake = Earliest(*wake, r.notBefore)
		return false
	}
	if at := s.bucketLocked(d, r.ep).readyAt(now); !at.Equal(now) {
		*wake = Earliest(*wake, at)
		return false
	}
	return true
}

// sendReadLocked marks r, taken off its queue, as sent and counts it
// against its device's bucket and the read slots (or, for a first read,
// the first reads in flight).
func (s *Scheduler) sendReadLocked(now time.Time, r *read) {
	d := r.dev
	r.elem = nil
	d.reads[r.ep] = nil
	d.busy[r.ep] = true
	s.bucketLocked(d, r.ep).send()
	s.queuedReadWaiters -= len(r.waiters)
	if r.first {
		s.firstInFlight++
	} else {
		s.readsInFlight++
		s.requestsInFlight++
	}
	s.sentLocked(&r.attempt, now)
}

// sentLocked accounts an attempt handed to the wire; countLocked counts it
// against the day's budget once its outcome says it reached the cloud.
func (s *Scheduler) sentLocked(a *attempt, now time.Time) {
	a.sent++
	a.lastSent = now
	if a.sent > 1 {
		s.counts.retries++
	}
}

// failQueuedLocked reports every queued request with err.
func (s *Scheduler) failQueuedLocked(now time.Time, err error) {
	for _, d := range s.ring {
		for _, c := range d.commands {
			res, report := c.result(err, now), c.report
			s.outbox = append(s.outbox, func() { report(res) })
			s.counts.failures++
		}
		d.commands = nil
		d.inRing = false
	}
	s.ring = nil
	s.queuedCommands = 0
	for p := range s.readQueues {
		l := &s.readQueues[p]
		for e := l.Front(); e != nil; e = e.Next() {
			r := e.Value.(*read)
			r.dev.reads[r.ep] = nil
			for _, w := range r.waiters {
				s.outbox = append(s.outbox, func() { w(nil, err) })
			}
			s.counts.failures++
		}
		l.Init()
	}
	s.queuedReadWaiters = 0
}

// sweepLocked forgets devices whose buckets are full and that have nothing
// queued or on the wire: a new bucket starts full, so nothing changes but
// the memory held for devices no longer used.
func (s *Scheduler) sweepLocked(now time.Time) {
	s.lastSweep = now
	for k, d := range s.devices {
		if d.idle(now) {
			delete(s.devices, k)
		}
	}
}

func (s *Scheduler) sendCommand(ctx context.Context, c *command) {
	defer s.wg.Done()
	defer c.done() // after the report and the wake-up hold work of their own
	res, err := s.cloud.Control(ctx, c.req)

	s.mu.Lock()
	now := s.nowLocked()
	d := c.dev
	d.busy[epControl] = false
	s.requestsInFlight--
	s.countLocked(epControl, now, c.lastSent, err, true)
	retry, err := s.settleLocked(now, epControl, d, &c.attempt, err, d.buckets[epControl], s.control)
	var report func()
	if retry {
		report = s.requeueCommandLocked(c, now)
	} else {
		r := c.result(err, now)
		r.Result = res
		rep := c.report
		report = func() { rep(r) }
	}
	s.mu.Unlock()
	if report != nil {
		report()
	}
	s.signal()
	s.changed()
}

// changed tells Config.OnChange.
func (s *Scheduler) changed() {
	if s.cfg.OnChange != nil {
		s.cfg.OnChange()
	}
}

// requeueCommandLocked puts a command due for a retry back at the head of
// its device. If a newer command for the same instance arrived while it
// was on the wire, that one takes its place and the old one is superseded.
func (s *Scheduler) requeueCommandLocked(c *command, now time.Time) (report func()) {
	d := c.dev
	for i, n := range d.commands {
		if n.req.Instance != c.req.Instance {
			continue
		}
		if c.notBefore.After(n.notBefore) {
			n.notBefore = c.notBefore
		}
		n.rateLimited = c.rateLimited
		copy(d.commands[1:i+1], d.commands[:i])
		d.commands[0] = n
		s.counts.superseded++
		res, rep := c.result(capability.ErrSuperseded, now), c.report
		return func() { rep(res) }
	}
	d.commands = append(d.commands, nil)
	copy(d.commands[1:], d.commands)
	d.commands[0] = c
	s.queuedCommands++
	if !d.inRing {
		d.inRing = true
		s.ring = append(s.ring, d)
	}
	return nil
}

func (s *Scheduler) sendRead(ctx context.Context, r *read) {
	defer s.wg.Done()
	defer r.done() // after the waiters and the wake-up hold work of their own
	var v any
	var err error
	k := r.dev.key
	switch r.ep {
	case epDevices:
		v, err = s.cloud.ListDevices(ctx)
	case epState:
		v, err = s.cloud.State(ctx, k.SKU, k.Device)
	case epScenes:
		v, err = s.cloud.Scenes(ctx, k.SKU, k.Device)
	case epDIYScenes:
		v, err = s.cloud.DIYScenes(ctx, k.SKU, k.Device)
	}

	s.mu.Lock()
	now := s.nowLocked()
	d := r.dev
	d.busy[r.ep] = false
	wasFirst := r.first
	if r.first {
		s.firstInFlight--
		r.first = false // a retry takes whichever slot is free then
	} else {
		s.requestsInFlight--
		s.readsInFlight--
	}
	// A first read is no part of the pace: a start's (or a new device's)
	// burst of them is no hourly rate.
	s.countLocked(r.ep, now, r.lastSent, err, r.priority != PriorityFirst)
	retry, err := s.settleLocked(now, r.ep, d, &r.attempt, err, d.buckets[r.ep])
	var waiters []func(any, error)
	var held *Hold
	if retry {
		if r.ep == epState && r.rateLimited > 0 && s.cfg.OnHeld != nil {
			held = &Hold{Until: r.notBefore, Err: r.lastErr}
		}
		s.requeueReadLocked(r)
	} else {
		waiters = r.waiters
	}
	burstOver := wasFirst && s.firstInFlight == 0 && s.readQueues[PriorityFirst].Len() == 0
	s.mu.Unlock()
	for _, w := range waiters {
		w(v, err)
	}
	if held != nil {
		s.cfg.OnHeld(d.key.SKU, d.key.Device, *held)
	}
	if burstOver && s.cfg.OnFirstReadsDone != nil {
		s.cfg.OnFirstReadsDone()
	}
	s.signal()
	s.changed()
}

// requeueReadLocked puts a read due for a retry back at the head of its
// priority, merged with a read of the same target queued meanwhile.
func (s *Scheduler) requeueReadLocked(r *read) {
	d := r.dev
	s.queuedReadWaiters += len(r.waiters)
	if q := d.reads[r.ep]; q != nil {
		q.waiters = append(r.waiters, q.waiters...)
		if r.notBefore.After(q.notBefore) {
			q.notBefore = r.notBefore
		}
		q.rateLimited = r.rateLimited
		if r.priority < q.priority {
			s.readQueues[q.priority].Remove(q.elem)
			q.priority = r.priority
			q.elem = s.readQueues[q.priority].PushFront(q)
		}
		return
	}
	d.reads[r.ep] = r
	r.elem = s.readQueues[r.priority].PushFront(r)
}
