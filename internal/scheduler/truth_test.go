package scheduler_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

// refusedConn is a request that never reached the cloud: no answer, no
// HTTP status (a refused connection, an unknown host, a failed handshake).
func refusedConn() error {
	return &cloud.APIError{Kind: cloud.ErrTransient, Endpoint: cloud.EndpointState, Msg: "the request failed",
		Err: errors.New("dial tcp 127.0.0.1:9: connect: connection refused")}
}

// TestCountsOnlyWhatReachedTheCloud: the day's count and the per-endpoint
// counts grow by answered requests (a 503 or a 429 is an answer), never by
// refused connections; the cloud's health follows the outcomes.
func TestCountsOnlyWhatReachedTheCloud(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		down := true
		f.fail = func(c call, n int) error {
			if down {
				return refusedConn()
			}
			if c.device == "busy" && n == 0 {
				return transient()
			}
			return nil
		}
		s := newScheduler(f, scheduler.Config{MaxAttempts: 3})
		stop := run(t, s)
		defer stop()
		t0 := time.Now()
		done := make(chan error, 4)
		read := func(dev string) {
			if err := s.State("H6008", dev, scheduler.PriorityPoll, func(_ cloud.DeviceState, err error) { done <- err }); err != nil {
				t.Fatal(err)
			}
		}
		read("a")
		read("b")
		for range 2 {
			if err := <-done; err == nil {
				t.Fatal("a read through a refused connection succeeded")
			}
		}
		st := s.Stats()
		if len(f.Calls()) != 6 {
			t.Fatalf("%d attempts, want 3 per read", len(f.Calls()))
		}
		if st.RequestsToday != 0 || st.Requests[cloud.EndpointState] != 0 {
			t.Errorf("after 6 refused connections: %d requests today, %d state requests; want 0: nothing reached the cloud", st.RequestsToday, st.Requests[cloud.EndpointState])
		}
		if !st.Cloud.FailingSince.Equal(t0) || st.Cloud.Failures != 6 || !st.Cloud.LastAnswer.IsZero() || cloud.Reached(st.Cloud.Err) {
			t.Errorf("cloud health %+v, want failing since the first attempt, 6 failures, not reached", st.Cloud)
		}
		if !st.Cloud.Failing(time.Now(), 0) || st.Cloud.Failing(time.Now(), time.Hour) {
			t.Errorf("Failing(grace) ignores the grace")
		}

		down = false
		time.Sleep(time.Minute) // the buckets refill
		read("busy")            // a 503, then an answer: two requests reached it
		read("c")
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		st = s.Stats()
		if st.RequestsToday != 3 || st.Requests[cloud.EndpointState] != 3 {
			t.Errorf("after a 503 and two answers: %d requests today, %d state requests; want 3", st.RequestsToday, st.Requests[cloud.EndpointState])
		}
		if st.Cloud.LastAnswer.IsZero() || !st.Cloud.FailingSince.IsZero() || st.Cloud.Failures != 0 {
			t.Errorf("cloud health after answers: %+v, want answering", st.Cloud)
		}
	})
}

// TestRejectedReadsSayNothingOfTheCloud: a device's read refused (400) is an
// answer: counted, and no sign of an unreachable cloud; a device list
// refused is (a wrong base URL answers 404 to everything).
func TestRejectedReadsSayNothingOfTheCloud(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.fail = func(c call, n int) error {
			return &cloud.APIError{Kind: cloud.ErrRequest, Endpoint: c.ep, HTTPStatus: 200, Code: 400, Msg: "devices not exist"}
		}
		s := newScheduler(f, scheduler.Config{})
		stop := run(t, s)
		defer stop()
		done := make(chan error, 1)
		_ = s.State("SameModeGroup", "g1", scheduler.PriorityPoll, func(_ cloud.DeviceState, err error) { done <- err })
		if err := <-done; !cloud.IsStateless(err) {
			t.Fatalf("read: %v", err)
		}
		if st := s.Stats(); st.RequestsToday != 1 || !st.Cloud.FailingSince.IsZero() {
			t.Errorf("after a 400 for a device: %d requests today, health %+v; want 1 and not failing", st.RequestsToday, st.Cloud)
		}
		_ = s.ListDevices(func(_ []capability.Device, err error) { done <- err })
		<-done
		if st := s.Stats(); st.RequestsToday != 2 || st.Cloud.FailingSince.IsZero() {
			t.Errorf("after the device list refused: %d requests today, health %+v; want 2 and failing", st.RequestsToday, st.Cloud)
		}
	})
}

// TestRetryAfterCapped: a 429 asking for 999999 s holds the device's reads
// for MaxRetryAfter, not longer; the cap is logged once; Held tells the
// poller until when (and why) while they wait.
func TestRetryAfterCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.fail = func(c call, n int) error {
			if n < 2 {
				return &cloud.APIError{Kind: cloud.ErrRateLimited, Endpoint: c.ep, HTTPStatus: 429, RetryAfter: 999999 * time.Second}
			}
			return nil
		}
		var logs bytes.Buffer
		var told []scheduler.Hold
		const capped = 5 * time.Minute // MaxRetryAfter's default
		s := scheduler.New(f, scheduler.Config{OnHeld: func(sku, device string, h scheduler.Hold) {
			told = append(told, h)
		}}, zerolog.New(&logs))
		stop := run(t, s)
		defer stop()
		t0 := time.Now()
		done := make(chan error, 1)
		_ = s.State("H6008", "lamp", scheduler.PriorityPoll, func(_ cloud.DeviceState, err error) { done <- err })
		synctest.Wait()
		h, held := s.Held("H6008", "lamp")
		if !held || !h.Until.Equal(t0.Add(capped)) {
			t.Fatalf("Held = %+v, %v; want until the capped Retry-After, %v", h, held, capped)
		}
		if _, ok := cloud.IsRateLimited(h.Err); !ok {
			t.Errorf("hold's error %v, want the 429", h.Err)
		}
		if len(told) != 1 || !told[0].Until.Equal(h.Until) {
			t.Errorf("OnHeld told %+v, want the hold once", told)
		}
		if _, other := s.Held("H6008", "other"); other {
			t.Errorf("another device is held by this device's 429")
		}
		if c := s.Stats().Cloud; !c.HeldUntil.Equal(h.Until) {
			t.Errorf("Stats().Cloud.HeldUntil = %v, want the hold's end %v (the health's \"holding until\")", c.HeldUntil, h.Until)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		calls := f.Calls()
		if len(calls) != 3 || calls[1].at.Sub(calls[0].at) != capped || calls[2].at.Sub(calls[1].at) != capped {
			t.Errorf("attempts %v, want %v apart (the cap), not 999999 s", calls, capped)
		}
		if n := strings.Count(logs.String(), "waiting the most it waits"); n != 1 {
			t.Errorf("the cap was logged %d times, want once:\n%s", n, logs.String())
		}
		if _, held := s.Held("H6008", "lamp"); held {
			t.Errorf("still held after the read went through")
		}
		if c := s.Stats().Cloud; !c.HeldUntil.IsZero() || !c.FailingSince.IsZero() {
			t.Errorf("cloud health after the read went through: %+v, want answering, no hold", c)
		}
	})
}

// TestRateLimitThenOutage: a 429's wait is no outage (the cloud answered):
// CloudHealth says until when requests wait; a failure of another kind
// after it starts a new run of failures, counted from then, and ends the
// wait's note.
func TestRateLimitThenOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.fail = func(c call, n int) error {
			if n == 0 {
				return &cloud.APIError{Kind: cloud.ErrRateLimited, Endpoint: c.ep, HTTPStatus: 429, RetryAfter: time.Minute}
			}
			return refusedConn()
		}
		s := newScheduler(f, scheduler.Config{MaxAttempts: 3})
		stop := run(t, s)
		defer stop()
		t0 := time.Now()
		_ = s.State("H6008", "lamp", scheduler.PriorityPoll, func(cloud.DeviceState, error) {})
		synctest.Wait()
		c := s.Stats().Cloud
		if _, limited := cloud.IsRateLimited(c.Err); !limited || !c.HeldUntil.Equal(t0.Add(time.Minute)) || !c.FailingSince.Equal(t0) || c.Failures != 1 {
			t.Fatalf("after a 429 asking for a minute: %+v, want held until %v", c, t0.Add(time.Minute))
		}
		time.Sleep(time.Minute) // the retry: refused
		synctest.Wait()
		c = s.Stats().Cloud
		if !c.HeldUntil.IsZero() || !c.FailingSince.Equal(t0.Add(time.Minute)) || c.Failures != 1 || cloud.Reached(c.Err) {
			t.Errorf("after the retry was refused: %+v, want a new run from %v, no hold", c, t0.Add(time.Minute))
		}
	})
}

// TestHeldDuringAuthHoldoff: after a 401 every device's reads are held
// until the hold-off ends, with the refusal as the cause.
func TestHeldDuringAuthHoldoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.fail = func(c call, n int) error {
			return &cloud.APIError{Kind: cloud.ErrAuth, Endpoint: c.ep, HTTPStatus: 401, Msg: "unauthorized"}
		}
		s := newScheduler(f, scheduler.Config{}) // AuthHoldoff: 1 min
		stop := run(t, s)
		defer stop()
		t0 := time.Now()
		done := make(chan error, 1)
		_ = s.State("H6008", "lamp", scheduler.PriorityPoll, func(_ cloud.DeviceState, err error) { done <- err })
		<-done
		h, held := s.Held("H6008", "any")
		if !held || !h.Until.Equal(t0.Add(time.Minute)) || !errors.Is(h.Err, scheduler.ErrAuthHoldoff) || !cloud.IsAuth(h.Err) {
			t.Errorf("Held = %+v, %v; want the auth hold-off for 1 min", h, held)
		}
		time.Sleep(61 * time.Second)
		if _, held := s.Held("H6008", "any"); held {
			t.Errorf("held after the hold-off")
		}
	})
}

// TestCoalescedApart: reads merged into a queued read and commands replaced
// by newer ones are counted apart.
func TestCoalescedApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := newScheduler(f, scheduler.Config{})
		// Not running yet: everything stays queued and merges.
		for range 3 {
			_ = s.State("H6008", "lamp", scheduler.PriorityPoll, nil)
		}
		rep := newReports(t)
		rep.submit(s, ctl("lamp", "brightness", 1))
		rep.submit(s, ctl("lamp", "brightness", 2))
		st := s.Stats()
		if st.CoalescedReads != 2 || st.Superseded != 1 || st.Coalesced != 3 {
			t.Errorf("coalesced reads %d, superseded %d, all %d; want 2, 1, 3", st.CoalescedReads, st.Superseded, st.Coalesced)
		}
		stop := run(t, s)
		synctest.Wait()
		stop()
	})
}
