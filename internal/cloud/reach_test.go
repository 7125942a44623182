package cloud

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestReached: what counts against the cloud's daily budget is what reached
// it: an answer of any status, or a request written and then left without
// an answer; a refused connection did not.
func TestReached(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		handler http.HandlerFunc
		timeout time.Duration
		reached bool
	}{
		{"answer", answerWith(200, `{"code":200,"message":"success","data":[]}`), 0, true},
		{"server error", answerWith(503, `oops`), 0, true},
		{"rate limited", answerWith(429, ``), 0, true},
		{"timeout after the request was sent", hang, 50 * time.Millisecond, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newTestClient(t, tc.handler, func(cfg *Config) {
				if tc.timeout > 0 {
					hc := *cfg.HTTPClient
					hc.Timeout = tc.timeout
					cfg.HTTPClient = &hc
				}
			})
			_, err := c.ListDevices(ctx)
			if got := Reached(err); got != tc.reached {
				t.Errorf("Reached(%v) = %v, want %v", err, got, tc.reached)
			}
		})
	}

	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // nothing listens there now
		c, err := New(Config{BaseURL: "http://" + addr, APIKey: testKey, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.State(ctx, "H6008", "AA")
		if err == nil || Reached(err) {
			t.Errorf("Reached(%v) = true, want false: nothing was sent", err)
		}
		if !isTransient(err) {
			t.Errorf("a refused connection is no longer transient: %v", err)
		}
	})
	if Reached(errors.New("scheduler: not sent")) {
		t.Error("a plain error reached the cloud")
	}
}

// TestIsStateless: "devices not exist" for a read (400 or 404, as HTTP
// status or in the body) is a device without state; other refusals are not.
func TestIsStateless(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&APIError{Kind: ErrRequest, HTTPStatus: 200, Code: 400, Msg: "devices not exist"}, true},
		{&APIError{Kind: ErrNotFound, HTTPStatus: 404, Msg: "Devices Not Exist"}, true},
		{&APIError{Kind: ErrRequest, HTTPStatus: 400, Msg: "devices not belong you"}, false},
		{&APIError{Kind: ErrTransient, HTTPStatus: 500, Msg: "devices not exist"}, false},
		{nil, false},
	} {
		if got := IsStateless(tc.err); got != tc.want {
			t.Errorf("IsStateless(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
