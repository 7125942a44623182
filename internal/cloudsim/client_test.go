package cloudsim

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
)

// The real cloud.Client against the simulator: every endpoint and every
// failure the client can provoke, in both answer modes.

func newClient(t *testing.T, h *harness) *cloud.Client {
	t.Helper()
	c, err := cloud.New(cloud.Config{BaseURL: h.srv.URL, APIKey: h.sim.APIKey(), HTTPClient: h.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func apiError(t *testing.T, err error) *cloud.APIError {
	t.Helper()
	var ae *cloud.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v, want a *cloud.APIError", err)
	}
	return ae
}

func TestClientEndpoints(t *testing.T) {
	for _, as200 := range []bool{false, true} {
		h := start(t, Options{ErrorsAs200: as200})
		c := newClient(t, h)
		ctx := context.Background()

		devs, err := c.ListDevices(ctx)
		if err != nil || len(devs) != len(DemoCatalogue().Devices) {
			t.Fatalf("ListDevices: %d devices, %v", len(devs), err)
		}
		st, err := c.State(ctx, stripSKU, stripID)
		if err != nil {
			t.Fatal(err)
		}
		if on, known := st.Online(); !on || !known {
			t.Fatalf("online %v %v", on, known)
		}
		vals := st.Values()
		if _, ok := vals["brightness"]; !ok {
			t.Fatalf("values %v", vals)
		}
		if _, ok := vals["lightScene"]; ok {
			t.Fatal("lightScene reported as queryable")
		}
		sc, err := c.Scenes(ctx, stripSKU, stripID)
		if err != nil || len(sc.Options()) != 6 {
			t.Fatalf("Scenes: %+v %v", sc, err)
		}
		diy, err := c.DIYScenes(ctx, stripSKU, stripID)
		if err != nil || len(diy.Options()) != 2 {
			t.Fatalf("DIYScenes: %+v %v", diy, err)
		}
		res, err := c.Control(ctx, cloud.ControlRequest{SKU: stripSKU, Device: stripID, Type: capability.TypeDynamicScene,
			Instance: "lightScene", Value: sc.Options()[3].Value})
		if err != nil || res.Code != 200 || res.Capability == nil || res.Capability.State == nil || res.Capability.State.Status != "success" {
			t.Fatalf("Control scene: %+v %v", res, err)
		}
		if _, err := c.Control(ctx, cloud.ControlRequest{SKU: heaterSKU, Device: heaterID, Type: capability.TypeTemperature,
			Instance: "targetTemperature", Value: map[string]any{"temperature": 24}}); err != nil {
			t.Fatal(err)
		}
		st, err = c.State(ctx, heaterSKU, heaterID)
		if err != nil || !capability.Equal(st.Values()["targetTemperature"], map[string]any{"temperature": int64(24), "autoStop": int64(0), "unit": "Celsius"}) {
			t.Fatalf("heater state %v %v", st.Values(), err)
		}
	}
}

func TestClientErrors(t *testing.T) {
	type check func(t *testing.T, err error)
	kind := func(k cloud.ErrorKind, code int, msg string) check {
		return func(t *testing.T, err error) {
			ae := apiError(t, err)
			if ae.Kind != k || ae.Code != code || (msg != "" && ae.Msg != msg) {
				t.Fatalf("got kind %v code %d msg %q (%v), want %v %d %q", ae.Kind, ae.Code, ae.Msg, err, k, code, msg)
			}
		}
	}
	ctl := func(sku, dev, typ, inst string, v any) cloud.ControlRequest {
		return cloud.ControlRequest{SKU: sku, Device: dev, Type: typ, Instance: inst, Value: v}
	}
	cases := []struct {
		name  string
		setup func(h *harness)
		call  func(ctx context.Context, c *cloud.Client) error
		want  check
	}{
		{"value out of range", nil, func(ctx context.Context, c *cloud.Client) error {
			_, err := c.Control(ctx, ctl(stripSKU, stripID, capability.TypeRange, "brightness", 101))
			return err
		}, kind(cloud.ErrRequest, 400, "parameter value out of range")},
		{"wrong value type", nil, func(ctx context.Context, c *cloud.Client) error {
			_, err := c.Control(ctx, ctl(stripSKU, stripID, capability.TypeRange, "brightness", "max"))
			return err
		}, kind(cloud.ErrRequest, 400, "invalid parameter type")},
		{"empty segment list", nil, func(ctx context.Context, c *cloud.Client) error {
			_, err := c.Control(ctx, ctl(lampSKU, lampID, capability.TypeSegmentColor, "segmentedColorRgb", map[string]any{"segment": []int{}, "rgb": 1}))
			return err
		}, kind(cloud.ErrRequest, 400, "parameter value empty")},
		{"too many segments", nil, func(ctx context.Context, c *cloud.Client) error {
			seg := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0}
			_, err := c.Control(ctx, ctl(stripSKU, stripID, capability.TypeSegmentColor, "segmentedColorRgb", map[string]any{"segment": seg, "rgb": 1}))
			return err
		}, kind(cloud.ErrRequest, 400, "parameter length does not meet requirements")},
		{"unknown struct member", nil, func(ctx context.Context, c *cloud.Client) error {
			_, err := c.Control(ctx, ctl(humidSKU, humidifierID, capability.TypeWorkMode, "workMode", map[string]any{"workMode": 1, "speed": 2}))
			return err
		}, kind(cloud.ErrRequest, 400, "invalid parameter format")},
		{"duplicate segments", nil, func(ctx context.Context, c *cloud.Client) error {
			_, err := c.Control(ctx, ctl(lampSKU, lampID, capability.TypeSegmentColor, "segmentedBrightness", map[string]any{"segment": []int{3, 3}, "brightness": 1}))
			return err
		}, kind(cloud.ErrRequest, 400, "duplicate parameter value")},
		{"missing struct member", nil, func(ctx context.Context, c *cloud.Client) error {
			_, err := c.Control(ctx, ctl(heaterSKU, heaterID, capability.TypeTemperature, "targetTemperature", map[string]any{"unit": "Celsius"}))
			return err
		}, kind(cloud.ErrRequest, 400, "missing parameter")},
		{"unknown device", nil, func(ctx context.Context, c *cloud.Client) error {
			_, err := c.State(ctx, stripSKU, "00:11")
			return err
		}, kind(cloud.ErrNotFound, 404, "devices not exist")},
		{"unknown instance", nil, func(ctx context.Context, c *cloud.Client) error {
			_, err := c.Control(ctx, ctl(plugSKU, plugID, capability.TypeToggle, "socketToggle3", 1))
			return err
		}, kind(cloud.ErrNotFound, 404, "devices not support this instance")},
		{"read-only instance", nil, func(ctx context.Context, c *cloud.Client) error {
			_, err := c.Control(ctx, ctl(thermoSKU, thermoID, capability.TypeProperty, "sensorTemperature", 20))
			return err
		}, kind(cloud.ErrNotFound, 404, "devices not support this instance")},
		{"removed device", func(h *harness) { _ = h.sim.RemoveDevice(plugID) }, func(ctx context.Context, c *cloud.Client) error {
			_, err := c.Scenes(ctx, plugSKU, plugID)
			return err
		}, kind(cloud.ErrNotFound, 404, "devices not belong you")},
		{"offline device", func(h *harness) { _ = h.sim.SetOnline(plugID, false) }, func(ctx context.Context, c *cloud.Client) error {
			_, err := c.Control(ctx, ctl(plugSKU, plugID, capability.TypeOnOff, "powerSwitch", 1))
			return err
		}, kind(cloud.ErrRequest, 400, "device offline")},
		{"revoked key", func(h *harness) { h.sim.RevokeKey() }, func(ctx context.Context, c *cloud.Client) error {
			_, err := c.ListDevices(ctx)
			return err
		}, func(t *testing.T, err error) {
			if !cloud.IsAuth(err) {
				t.Fatalf("err = %v, want auth", err)
			}
		}},
		{"rate limited", func(h *harness) {
			for range 30 {
				h.list()
			}
		}, func(ctx context.Context, c *cloud.Client) error {
			_, err := c.ListDevices(ctx)
			return err
		}, func(t *testing.T, err error) {
			if ra, ok := cloud.IsRateLimited(err); !ok || ra != 2*time.Second {
				t.Fatalf("err = %v, retry after %v", err, ra)
			}
		}},
		{"server error", func(h *harness) { h.sim.Faults().FailNext(cloud.EndpointState, 1, 503) }, func(ctx context.Context, c *cloud.Client) error {
			_, err := c.State(ctx, stripSKU, stripID)
			return err
		}, transient},
		{"not JSON", func(h *harness) { h.sim.Faults().MalformNext(cloud.EndpointScenes, 1, MalformedNonJSON) }, func(ctx context.Context, c *cloud.Client) error {
			_, err := c.Scenes(ctx, stripSKU, stripID)
			return err
		}, transient},
		{"truncated", func(h *harness) { h.sim.Faults().MalformNext(cloud.EndpointDevices, 1, MalformedTruncated) }, func(ctx context.Context, c *cloud.Client) error {
			_, err := c.ListDevices(ctx)
			return err
		}, transient},
		{"connection reset", func(h *harness) { h.sim.Faults().ResetNext(cloud.EndpointControl, 1) }, func(ctx context.Context, c *cloud.Client) error {
			_, err := c.Control(ctx, ctl(stripSKU, stripID, capability.TypeOnOff, "powerSwitch", 1))
			return err
		}, transient},
		{"hang until the deadline", func(h *harness) { h.sim.Faults().Hang(cloud.EndpointDIYScenes) }, func(ctx context.Context, c *cloud.Client) error {
			ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			_, err := c.DIYScenes(ctx, stripSKU, stripID)
			return err
		}, transient},
	}
	for _, as200 := range []bool{false, true} {
		for _, tc := range cases {
			name := tc.name
			if as200 {
				name += "/errors-as-200"
			}
			t.Run(name, func(t *testing.T) {
				h := start(t, Options{ErrorsAs200: as200, EmptyRateLimitBody: as200})
				if tc.setup != nil {
					tc.setup(h)
				}
				err := tc.call(context.Background(), newClient(t, h))
				if err == nil {
					t.Fatal("no error")
				}
				tc.want(t, err)
				if as200 && (tc.name == "unknown device" || tc.name == "value out of range") {
					if ae := apiError(t, err); ae.HTTPStatus != http.StatusOK {
						t.Fatalf("HTTP status %d in errors-as-200 mode", ae.HTTPStatus)
					}
				}
			})
		}
	}
}

func transient(t *testing.T, err error) {
	t.Helper()
	if ae := (*cloud.APIError)(nil); !errors.As(err, &ae) || ae.Kind != cloud.ErrTransient {
		t.Fatalf("err = %v, want transient", err)
	}
}
