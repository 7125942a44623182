package cloudsim

import (
	"context"
	"net/http/httptest"
	"testing"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
)

// TestGroupsAnswerNoState: an app-made group is listed, its state reads are
// refused, its commands accepted, and SetStateless makes it readable.
func TestGroupsAnswerNoState(t *testing.T) {
	for _, as200 := range []bool{false, true} {
		cat := DemoCatalogue()
		if err := AddGroups(cat, 3); err != nil {
			t.Fatal(err)
		}
		sim := New(Options{Catalogue: cat, ErrorsAs200: as200})
		srv := httptest.NewServer(sim)
		c, err := cloud.New(cloud.Config{BaseURL: srv.URL, APIKey: DefaultAPIKey})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		list, err := c.ListDevices(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var groups []capability.Device
		for _, d := range list {
			if IsGroupSKU(d.SKU) {
				groups = append(groups, d)
			}
		}
		if len(groups) != 3 || groups[0].SKU != "SameModeGroup" || groups[1].SKU != "BaseGroup" || groups[2].SKU != "DreamViewScenic" {
			t.Fatalf("errors as 200 %v: groups listed %v, want the three group SKUs", as200, groups)
		}
		g := groups[0]
		_, err = c.State(ctx, g.SKU, g.Device)
		if !cloud.IsStateless(err) || !cloud.IsRejected(err) {
			t.Errorf("errors as 200 %v: state of a group: %v, want 400 devices not exist", as200, err)
		}
		if _, err := c.Control(ctx, cloud.ControlRequest{SKU: g.SKU, Device: g.Device, Type: capability.TypeOnOff, Instance: capability.InstancePower, Value: 1}); err != nil {
			t.Errorf("errors as 200 %v: a group's command refused: %v", as200, err)
		}
		if err := sim.SetStateless(g.Device, false); err != nil {
			t.Fatal(err)
		}
		st, err := c.State(ctx, g.SKU, g.Device)
		if err != nil {
			t.Fatalf("errors as 200 %v: state after SetStateless(false): %v", as200, err)
		}
		if v := st.Values()[capability.InstancePower]; !capability.Equal(v, int64(1)) {
			t.Errorf("errors as 200 %v: power %v after the command, want 1", as200, v)
		}
		// A light is not a group.
		if _, err := c.State(ctx, list[0].SKU, list[0].Device); err != nil {
			t.Errorf("state of %s: %v", list[0], err)
		}
		srv.Close()
	}
}
