package cloudsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/testkit"
)

// raw sends a request and returns the response or the transport error.
func (h *harness) raw(ctx context.Context, method, path string, body any) (*http.Response, []byte, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, method, h.srv.URL+path, bytesReader(b, body == nil))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set(DefaultKeyHeader, h.sim.APIKey())
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp, data, err
}

func TestFailNext(t *testing.T) {
	h := start(t, Options{})
	h.sim.Faults().FailNext(cloud.EndpointControl, 2, http.StatusServiceUnavailable)
	for i := range 2 {
		r := h.control(stripSKU, stripID, capability.TypeRange, "brightness", 50)
		if r.status != 503 || r.code() != 503 {
			t.Fatalf("control %d: %d %s", i, r.status, r.raw)
		}
	}
	wantStatus(t, "other endpoints unaffected", h.state(stripSKU, stripID), 200)
	if v, _ := h.sim.Value(stripID, "brightness"); v != int64(1) {
		t.Fatalf("failed control took effect: brightness %v", v)
	}
	if len(h.sim.ControlLog()) != 0 {
		t.Fatal("failed controls reached the device")
	}
	wantStatus(t, "third control", h.control(stripSKU, stripID, capability.TypeRange, "brightness", 50), 200)
	// Failed requests spend no token: 5 more fit in the device's burst of 6.
	for i := range 5 {
		wantStatus(t, fmt.Sprintf("control %d", i), h.control(stripSKU, stripID, capability.TypeRange, "brightness", 50), 200)
	}
	if c := h.sim.Counts(); c.Of(cloud.EndpointControl, 503) != 2 || c.Of(cloud.EndpointControl, 200) != 6 {
		t.Fatalf("counts %+v", c.Requests)
	}
	// AnyEndpoint hits whatever comes next.
	h.sim.Faults().FailNext(AnyEndpoint, 1, http.StatusBadGateway)
	wantStatus(t, "any endpoint", h.list(), 502)
	wantStatus(t, "after", h.list(), 200)
}

func TestFailFraction(t *testing.T) {
	pattern := func() string {
		h := start(t, Options{Seed: 7, Limits: Limits{Devices: Unlimited}})
		h.sim.Faults().FailFraction(cloud.EndpointDevices, 0.3, http.StatusInternalServerError)
		out := make([]byte, 200)
		fails := 0
		for i := range out {
			switch r := h.list(); r.status {
			case 200:
				out[i] = '.'
			case 500:
				out[i] = 'x'
				fails++
			default:
				t.Fatalf("status %d", r.status)
			}
		}
		if fails < 30 || fails > 90 {
			t.Fatalf("%d of 200 failed at fraction 0.3", fails)
		}
		h.sim.Faults().FailFraction(cloud.EndpointDevices, 0, 0)
		wantStatus(t, "fraction off", h.list(), 200)
		return string(out)
	}
	if a, b := pattern(), pattern(); a != b {
		t.Fatalf("same seed, different failures:\n%s\n%s", a, b)
	}
}

func TestLatency(t *testing.T) {
	h := start(t, Options{})
	h.sim.Faults().SetLatency(cloud.EndpointState, 80*time.Millisecond)
	began := time.Now()
	wantStatus(t, "slow state", h.state(stripSKU, stripID), 200)
	if d := time.Since(began); d < 80*time.Millisecond {
		t.Fatalf("answered after %v, want at least 80ms", d)
	}
	// A client that gives up first gets nothing, and nothing happens.
	h.sim.Faults().SetLatency(cloud.EndpointControl, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, err := h.raw(ctx, http.MethodPost, cloud.PathControl, controlBody(stripSKU, stripID, capability.TypeRange, "brightness", 9))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the client's deadline", err)
	}
	h.sim.Faults().SetLatency(cloud.EndpointControl, 0)
	if v, _ := h.sim.Value(stripID, "brightness"); v != int64(1) {
		t.Fatalf("abandoned control took effect: %v", v)
	}
}

func TestHang(t *testing.T) {
	h := start(t, Options{})
	release := h.sim.Faults().Hang(cloud.EndpointControl)

	// A client with a deadline gives up.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := h.raw(ctx, http.MethodPost, cloud.PathControl, controlBody(stripSKU, stripID, capability.TypeRange, "brightness", 9)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	testkit.WaitFor(t, 5*time.Second, "the abandoned request logged", func() bool { return h.sim.Counts().Of(cloud.EndpointControl, 0) == 1 })

	// A hung request completes normally once released.
	done := make(chan int, 1)
	go func() {
		resp, _, err := h.raw(context.Background(), http.MethodPost, cloud.PathControl, controlBody(stripSKU, stripID, capability.TypeRange, "brightness", 9))
		if err != nil {
			done <- -1
			return
		}
		done <- resp.StatusCode
	}()
	testkit.WaitFor(t, 5*time.Second, "the request to hang", func() bool { return h.sim.Faults().Hung() == 1 })
	wantStatus(t, "other endpoints answer", h.state(stripSKU, stripID), 200)
	release()
	release() // harmless
	if got := <-done; got != 200 {
		t.Fatalf("released request: %d", got)
	}
	if v, _ := h.sim.Value(stripID, "brightness"); v != int64(9) {
		t.Fatalf("released control did not apply: %v", v)
	}
	reqs := h.sim.Requests()
	if reqs[0].Fault != "hang" || reqs[0].HTTPStatus != 0 {
		t.Fatalf("log %+v", reqs[0])
	}
	wantStatus(t, "after release", h.control(stripSKU, stripID, capability.TypeRange, "brightness", 10), 200)

	// Clear releases everything too.
	h.sim.Faults().Hang(AnyEndpoint)
	go func() {
		resp, _, err := h.raw(context.Background(), http.MethodGet, cloud.PathDevices, nil)
		if err != nil {
			done <- -1
			return
		}
		done <- resp.StatusCode
	}()
	testkit.WaitFor(t, 5*time.Second, "the list to hang", func() bool { return h.sim.Faults().Hung() == 1 })
	h.sim.Faults().Clear()
	if got := <-done; got != 200 {
		t.Fatalf("request released by Clear: %d", got)
	}
}

func TestMalformed(t *testing.T) {
	h := start(t, Options{})
	h.sim.Faults().MalformNext(cloud.EndpointState, 1, MalformedNonJSON)
	h.sim.Faults().MalformNext(cloud.EndpointState, 1, MalformedTruncated)

	r := h.state(stripSKU, stripID)
	if r.status != 200 || json.Valid(r.raw) || r.header.Get("Content-Type") == "application/json" {
		t.Fatalf("non-JSON fault: %d %q %q", r.status, r.header.Get("Content-Type"), r.raw)
	}
	r = h.state(stripSKU, stripID)
	whole := h.state(stripSKU, stripID)
	if r.status != 200 || json.Valid(r.raw) || len(r.raw) == 0 || string(whole.raw[:len(r.raw)]) != string(r.raw) {
		t.Fatalf("truncated fault: %q", r.raw)
	}
	if !json.Valid(whole.raw) {
		t.Fatal("third answer still malformed")
	}
	// A malformed control answer: the control itself happened.
	h.sim.Faults().MalformNext(cloud.EndpointControl, 1, MalformedTruncated)
	h.control(stripSKU, stripID, capability.TypeRange, "brightness", 44)
	if v, _ := h.sim.Value(stripID, "brightness"); v != int64(44) {
		t.Fatalf("brightness %v", v)
	}
	if reqs := h.sim.Requests(); reqs[len(reqs)-1].Fault != "malformed" {
		t.Fatalf("log %+v", reqs[len(reqs)-1])
	}
}

func TestReset(t *testing.T) {
	h := start(t, Options{})
	h.sim.Faults().ResetNext(cloud.EndpointDevices, 1)
	if _, _, err := h.raw(context.Background(), http.MethodGet, cloud.PathDevices, nil); err == nil {
		t.Fatal("reset connection answered")
	}
	wantStatus(t, "next request", h.list(), 200)
	if c := h.sim.Counts(); c.Of(cloud.EndpointDevices, 0) != 1 {
		t.Fatalf("counts %+v", c.Requests)
	}
}

func TestFaultsBeforeAuth(t *testing.T) {
	h := start(t, Options{})
	h.sim.RevokeKey()
	h.sim.Faults().FailNext(cloud.EndpointDevices, 1, 500)
	wantStatus(t, "fault wins", h.list(), 500)
	wantStatus(t, "then auth", h.list(), 401)
}
