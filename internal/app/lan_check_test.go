package app

import (
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"testing"

	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/lansim"
)

// TestCheckScansTheLAN: with LAN_ENABLED=true, -check scans the targets
// once and lists the account's lights that answered, counts the answers
// of devices not on the account, and fails with the port and the fix when
// LAN_LISTEN's port is taken.
func TestCheckScansTheLAN(t *testing.T) {
	t.Parallel()
	sim := cloudsim.New(cloudsim.Options{})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	known := sim.Devices()[0]
	ls, err := lansim.New(lansim.Options{},
		lansim.Spec{ID: known.Device, SKU: known.SKU},
		lansim.Spec{ID: "11:22:33:44:55:66:77:88", SKU: "H6008"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ls.Close() })
	var targets []string
	for _, id := range []string{known.Device, "11:22:33:44:55:66:77:88"} {
		a, _ := ls.Addr(id)
		targets = append(targets, fmt.Sprintf("%s:%d", a, ls.ScanPort()))
	}
	env := func(listen string) map[string]string {
		return map[string]string{"CLOUD_BASE_URL": srv.URL, "CLOUD_API_KEY": sim.APIKey(), "LAN_ENABLED": "true",
			"LAN_LISTEN": listen, "LAN_SCAN_TARGETS": strings.Join(targets, ",")}
	}
	ok, out := checkReport(t, env("127.0.0.1:0"))
	a, _ := ls.Addr(known.Device)
	for _, want := range []string{"ok   local control: listening on 127.0.0.1:", "1 of the account's", "1 answers from devices not on this account",
		known.Device + "  at " + a.String()} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if !ok {
		t.Errorf("-check failed:\n%s", out)
	}
	t.Logf("the report:\n%s", out[strings.Index(out, "ok   configuration"):])

	taken, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	ok, out = checkReport(t, env(taken.LocalAddr().String()))
	if ok || !strings.Contains(out, "FAIL local control: ") || !strings.Contains(out, "is in use by another program") || !strings.Contains(out, "LAN_ENABLED=false") {
		t.Errorf("a taken port passed or was not explained:\n%s", out)
	}
}
