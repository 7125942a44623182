package scheduler_test

import (
	"bytes"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

// TestSchemeMismatchNotRetried: https:// to a plain HTTP
// port fails every request the same way. Each request is tried once (no
// "giving up after transient failures" after a minute of retries), the
// fix is logged once at error level, and again only after a success in
// between.
func TestSchemeMismatchNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		mismatch := &cloud.APIError{Kind: cloud.ErrScheme, Endpoint: cloud.EndpointControl,
			Msg: "the server at CLOUD_BASE_URL answers plain HTTP, not HTTPS"}
		var fixed atomic.Bool
		f.fail = func(call, int) error {
			if fixed.Load() {
				return nil
			}
			return mismatch
		}
		var logs bytes.Buffer
		s := scheduler.New(f, scheduler.Config{}, zerolog.New(&logs))
		rep := newReports(t)
		stop := run(t, s)
		var ids []int
		for _, d := range []string{"a", "b", "c"} {
			ids = append(ids, rep.submit(s, ctl(d, "brightness", 50)))
			time.Sleep(time.Second)
		}
		time.Sleep(scheduler.CommandMaxAge + time.Minute)
		for _, id := range ids {
			if r := rep.result(id); !cloud.IsSchemeMismatch(r.Err) || r.Attempts != 1 {
				t.Errorf("command %d: %v after %d attempts, want the mismatch after one", id, r.Err, r.Attempts)
			}
		}
		if n := len(f.Calls()); n != 3 {
			t.Errorf("%d requests, want 3 (one each, none retried)", n)
		}
		if strings.Contains(logs.String(), "giving up") {
			t.Errorf("a mismatch is logged as transient failures:\n%s", logs.String())
		}
		said := func() int { return strings.Count(logs.String(), `"level":"error"`) }
		if n := said(); n != 1 || !strings.Contains(logs.String(), "CLOUD_BASE_URL") {
			t.Errorf("logged %d times at error level, want once naming CLOUD_BASE_URL:\n%s", n, logs.String())
		}
		fixed.Store(true)
		rep.submit(s, ctl("a", "brightness", 60))
		synctest.Wait()
		fixed.Store(false)
		rep.submit(s, ctl("b", "brightness", 60))
		synctest.Wait()
		stop()
		if n := said(); n != 2 {
			t.Errorf("logged %d times at error level, want twice (again after a success)", n)
		}
		rep.checkOnce()
	})
}
